"""A disk cache of prompt-hook judgements (SQLite), as a :class:`PromptJudge` wrapper.

The key is a SHA-256 over everything that determines the answer:

* the rendered prompt (the hook's template with its includes and the context, with the
  transcript *path* replaced by the transcript's content hash, so a temporary file name
  does not defeat the cache) — or, when the prompt cannot be rendered, the template text;
* the whole hook definition but its timeout (model, prompt, ...), the config's ``models`` mapping and the
  resolved model label (``openai:gpt-5.4-mini``; environment overrides included);
* the settings that change what the model is asked or who answers: the providers' base
  URLs (one model name on another server is another judge) and the sampling and answer
  knobs (:data:`ANSWER_SETTINGS`);
* what the judge is told besides the hook's prompt: a digest of its system prompt (the
  answer schema among it), so a judge that is offered another answer is asked again;
* the transcript content hash, the repeat index, the sample index (``samples: k``; absent
  for the first sample, so a hook's first sample is the judgement it made before it took
  samples) and the eval case's id (so repeats, samples, and cases whose content happens
  to be identical, stay independent judgements: with a shared entry two identical cases
  would always agree, and one flip of the judge would be counted as two; a cache must not
  change what a run measures).

The hook options that do not change one judgement's answer are left out of the key: its
timeout, ``samples``, ``aggregate``, ``escalateBelow`` and ``calibration`` (so adding
samples re-uses every judgement already made, and a calibration block costs nothing).

Only verdicts are cached; a judgement that raised (timeout, provider failure) is not, so
it is retried on the next run. Command hooks never pass through here: they still run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from judge.errors import HookError
from judge.files import open_regular
from judge.hooks.judging import PromptJudge, PromptRequest, PromptVerdict
from judge.llm.instructions import SYSTEM_PROMPT
from judge.state.migrations import SQLITE_CACHE, migrate_sqlite

#: The cache file's default name, next to the output folder of ``judge eval``.
CACHE_NAME = ".judge-cache.sqlite"
#: Bump when the key derivation changes, so old entries are never misread.
KEY_VERSION = "4"
#: The judge's standing instructions, as part of every key.
_INSTRUCTIONS = hashlib.sha256(SYSTEM_PROMPT.encode("utf-8")).hexdigest()[:16]
#: Hook options that are not part of the key (see the module docstring): field names.
NOT_IN_KEY = frozenset({"timeout", "samples", "aggregate", "escalate_below", "calibration"})
#: Environment variables whose values are part of every key.
ANSWER_SETTINGS = (
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "JUDGE_TEMPERATURE",
    "JUDGE_MAX_OUTPUT_TOKENS",
    "JUDGE_TEXT_TOOL_CALLS",
    "JUDGE_STRUCTURED_OUTPUT",
    "JUDGE_MAX_REASON_CHARS",
    "JUDGE_EVIDENCE_FIRST",
)


def file_sha256(path: Path | None) -> str | None:
    """Content hash of a transcript file (None when there is none or it is unreadable,
    or not a regular file: a FIFO or a device is never read)."""
    if path is None:
        return None
    digest = hashlib.sha256()
    try:
        with open_regular(path, "transcript") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def _model_label(request: PromptRequest) -> str:
    from judge.llm.tiers import CASCADE_JOIN

    return CASCADE_JOIN.join(_one_label(model, request) for model in request.hook.models)


def _one_label(model: str, request: PromptRequest) -> str:
    from judge.llm.tiers import model_label

    try:
        return model_label(model, request.models)
    except ValueError as exc:
        return f"unresolved:{model}:{exc}"


def _rendered(request: PromptRequest, context: dict[str, Any]) -> str:
    template = request.hook.prompt or ""
    try:
        from judge.llm.prompts import render_prompt
    except ImportError:  # pragma: no cover
        return template
    try:
        return render_prompt(template, context, request.base_dir)
    except HookError:
        return template
    except Exception:  # a template bug is the judge's to report, not the cache's
        return template


def _settings(request: PromptRequest) -> dict[str, str]:
    """The :data:`ANSWER_SETTINGS` that apply to ``request``: a provider's base URL only
    when one of the hook's models is that provider's (without a trailing ``/``)."""
    from judge.llm.tiers import BASE_URL_VARS

    providers = {_one_label(model, request).partition(":")[0] for model in request.hook.models}
    asked = {BASE_URL_VARS[p] for p in providers if p in BASE_URL_VARS}
    found: dict[str, str] = {}
    for name in ANSWER_SETTINGS:
        value = os.environ.get(name)
        if value is None or (name in BASE_URL_VARS.values() and name not in asked):
            continue
        found[name] = value.rstrip("/") if name in asked else value
    return found


def cache_key(request: PromptRequest, case_id: str | None = None) -> str:
    """The cache key of one judgement of eval case ``case_id`` (see the module docstring)."""
    transcript_hash = file_sha256(request.transcript_path)
    context = dict(request.context)
    if "execution_summary" in context:
        context["execution_summary"] = f"transcript:{transcript_hash}"
    material = {
        "v": KEY_VERSION,
        "prompt": _rendered(request, context),
        # (not its timeout: a cascade's later stage gets the time the earlier one left, and
        # a judgement that timed out is never cached)
        "hook": request.hook.model_dump(mode="json", by_alias=True, exclude=set(NOT_IN_KEY)),
        "context": context,
        "models": dict(sorted(request.models.items())),
        "model": _model_label(request),
        "transcript": transcript_hash,
        "repeat": request.repeat,
        "case": case_id,
        "settings": _settings(request),
        "instructions": _INSTRUCTIONS,
    }
    if request.sample:
        material["sample"] = request.sample
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class JudgementCache:
    """Verdicts by key in one SQLite file (created on first use; safe across threads)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            migrate_sqlite(self._db, SQLITE_CACHE, f"the judgement cache {self.path}")

    def get(self, key: str) -> PromptVerdict | None:
        with self._lock:
            row = self._db.execute("SELECT verdict FROM judgements WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:  # (Python's json: pydantic's parser refuses a lone surrogate's escape)
            return PromptVerdict.model_validate(json.loads(row[0]))
        except ValueError:
            return None  # an unreadable entry is a miss; it is overwritten on the next put

    def put(self, key: str, verdict: PromptVerdict) -> None:
        # json, not pydantic's writer: a reason may quote a lone surrogate, kept as its escape
        blob = json.dumps(verdict.model_dump(mode="python", by_alias=True), default=str)
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO judgements (key, verdict) VALUES (?, ?)", (key, blob))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT COUNT(*) FROM judgements").fetchone()
        return int(row[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachingJudge:
    """A :class:`PromptJudge` that answers from the cache and asks ``inner`` on a miss.

    ``hits`` and ``misses`` count judgements served from the cache and from ``inner``.
    """

    def __init__(self, inner: PromptJudge, cache: JudgementCache) -> None:
        self.inner = inner
        self.cache = cache
        self.hits = 0
        self.misses = 0

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        verdict, _ = await self.evaluate_cached(request)
        return verdict

    async def evaluate_cached(
        self, request: PromptRequest, case_id: str | None = None
    ) -> tuple[PromptVerdict, bool]:
        """The verdict for eval case ``case_id`` and whether it came from the cache."""
        # (off the event loop: the key renders the hook's template)
        key = await asyncio.to_thread(cache_key, request, case_id)
        found = self.cache.get(key)
        if found is not None:
            self.hits += 1
            return found, True
        self.misses += 1
        verdict = await self.inner.evaluate(request)
        self.cache.put(key, verdict)
        return verdict, False
