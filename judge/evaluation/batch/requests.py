"""``judge eval --batch``: which judgements can go to a provider's batch API, their
requests, and the verdicts read from the answers.

A batch request is one shot: the model cannot call the transcript tools, so the
transcript (rendered as the tools would read it) is inlined into the user message, up to
:data:`DEFAULT_MAX_TRANSCRIPT_CHARS` characters (``JUDGE_BATCH_MAX_TRANSCRIPT_CHARS``).
A (case, repeat) goes the normal way when any of its hooks is a command hook, a prompt
hook's model is not served by OpenAI or Anthropic, its transcript is larger than that,
or its context or prompt cannot be prepared (the normal path then reports the error).

The requests are found by running the engine itself over each case with a judge that
only records what it is asked (:class:`_Collector`), so the hooks, their order and the
context they see are exactly those of the normal path. Each request's id is its
:func:`batch_key`; the answers are read with the providers' own response parsers and the
tool loop's verdict finder, and handed back to the engine by
:class:`judge.evaluation.batch.answers.BatchAnswerJudge`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from judge.context import context_json, parse_context
from judge.errors import HookError
from judge.evaluation.batch.status import BatchSetupError
from judge.evaluation.cache import cache_key
from judge.evaluation.runner import _Transcripts
from judge.evaluation.suite import Case, Suite
from judge.hooks.answers import answer_from_object
from judge.hooks.engine import Engine
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.llm.instructions import NO_TOOLS, SYSTEM_PROMPT, TRANSCRIPT_TAG, delimit_context, user_prompt
from judge.llm.prompts import judged_context, render_prompt
from judge.llm.providers.base import Message, SDKProvider, without_surrogates
from judge.llm.tiers import resolve_model
from judge.llm.verdicts import find_verdict_object
from judge.transcripts import prepare_transcript

MAX_TRANSCRIPT_ENV = "JUDGE_BATCH_MAX_TRANSCRIPT_CHARS"
#: Largest rendered transcript (characters) inlined into a batch request.
DEFAULT_MAX_TRANSCRIPT_CHARS = 100_000
BATCH_PROVIDERS = ("openai", "anthropic")
KEY_VERSION = "batch-1"

INLINED_TRANSCRIPT = """\
The conversation transcript (the file execution_summary names) is given in full after \
the instructions, between <transcript_data> tags. There are no tools: judge from the \
hook context and that transcript alone."""

Pair = tuple[str, int]


def max_transcript_chars(env: Mapping[str, str]) -> int:
    raw = env.get(MAX_TRANSCRIPT_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_TRANSCRIPT_CHARS
    try:
        value = int(raw)
    except ValueError:
        raise BatchSetupError(
            f"{MAX_TRANSCRIPT_ENV} must be a whole number of characters, got {raw!r}"
        ) from None
    if value < 0:
        raise BatchSetupError(f"{MAX_TRANSCRIPT_ENV} must be at least 0, got {value}")
    return value


def batch_key(request: PromptRequest, case_id: str) -> str:
    """The id of one batch judgement: 64 hex digits (a valid ``custom_id`` for both
    providers), also its key in the judgement cache (apart from normal judgements: a
    verdict given without tools is not one given with them)."""
    material = f"{KEY_VERSION}|{cache_key(request, case_id)}"
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class BatchRequest:
    """One request of a batch: which endpoint serves it, and where its wire body (JSON) is
    in the plan's spool file."""

    key: str
    provider: str
    base_url: str | None
    model: str
    offset: int
    size: int

    @property
    def group(self) -> tuple[str, str | None, str]:
        """Requests sharing a batch (OpenAI wants one model per batch)."""
        return self.provider, self.base_url, self.model


@dataclass
class Plan:
    """Where each (case, repeat) goes: the batch (with its request keys) or the normal way (why)."""

    batch: dict[Pair, list[str]] = field(default_factory=dict)
    normal: dict[Pair, str] = field(default_factory=dict)
    requests: dict[str, BatchRequest] = field(default_factory=dict)
    providers: dict[str, SDKProvider] = field(default_factory=dict)
    #: The request bodies, on disk: with transcripts inlined they can be large.
    spool: IO[bytes] = field(default_factory=lambda: _spool())

    def add(self, key: str, provider: str, base_url: str | None, model: str, body: dict[str, Any]) -> None:
        try:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: sent as U+FFFD, as a live request is
            data = json.dumps(without_surrogates(body), ensure_ascii=False).encode("utf-8")
        offset = self.spool.seek(0, os.SEEK_END)
        self.spool.write(data)
        self.requests[key] = BatchRequest(key, provider, base_url, model, offset, len(data))

    def body(self, key: str) -> dict[str, Any]:
        """The wire body of request ``key``."""
        request = self.requests[key]
        self.spool.seek(request.offset)
        body: dict[str, Any] = json.loads(self.spool.read(request.size))
        return body

    def close(self) -> None:
        self.spool.close()


def _spool() -> IO[bytes]:
    return tempfile.TemporaryFile(prefix="judge-batch-")  # Plan.close closes it


class _Collector:
    """A prompt judge that records what the engine asks and allows everything (so every
    hook of the case is asked: Stop runs all hooks, tool events stop at a denial)."""

    def __init__(self) -> None:
        self.requests: list[PromptRequest] = []

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        self.requests.append(request)
        return PromptVerdict(ok=True)


def _provider(plan: Plan, provider: str, model: str, env: Mapping[str, str]) -> SDKProvider:
    label = f"{provider}:{model}"
    found = plan.providers.get(label)
    if found is None:
        if provider == "openai":
            from judge.llm.providers.openai import OpenAIProvider

            found = OpenAIProvider(model, env)
        else:
            from judge.llm.providers.anthropic import AnthropicProvider

            found = AnthropicProvider(model, env)
        plan.providers[label] = found
    return found


def _escape(text: str) -> str:
    return text.replace(f"</{TRANSCRIPT_TAG}", f"<\\/{TRANSCRIPT_TAG}")


def messages_for(rendered_prompt: str, transcript: str | None) -> list[Message]:
    """The batch conversation: the tool loop's system and user prompts, with the
    transcript inlined instead of the tools."""
    if transcript is None:
        return [
            Message("system", SYSTEM_PROMPT.replace("{tools}", NO_TOOLS)),
            Message("user", user_prompt(rendered_prompt)),
        ]
    user = (
        user_prompt(rendered_prompt) + f"\n\n<{TRANSCRIPT_TAG}>\n{_escape(transcript)}\n</{TRANSCRIPT_TAG}>"
    )
    return [Message("system", SYSTEM_PROMPT.replace("{tools}", INLINED_TRANSCRIPT)), Message("user", user)]


def _static_reason(
    suite: Suite, engine: Engine, case: Case, transcripts: _Transcripts, env: Mapping[str, str], limit: int
) -> tuple[str | None, str | None]:
    """Why ``case`` cannot go to a batch (None if it can), and its transcript text."""
    context = transcripts.context_for(case)
    try:
        ctx = context_json(parse_context(suite.event, context))
    except Exception:
        return "the context is invalid", None
    path_text = ctx.get("execution_summary") or transcripts.path_for(case)
    hooks = engine.selected_hooks(suite.event, ctx)
    if not hooks:
        return "no hook to judge", None
    if any(hook.type == "command" for _, _, hook in hooks):
        return "a command hook", None
    if any(hook.evidence == "required" for _, _, hook in hooks):
        return "evidence: required (unverified citations need a re-ask turn)", None
    for _, _, hook in hooks:
        if not isinstance(hook.model, str):
            return "a model cascade (its stages run one after another)", None
        try:
            model = resolve_model(hook.model, suite.config.models, env)
        except ValueError:
            return "a model that cannot be resolved", None
        if model.provider not in BATCH_PROVIDERS:
            return f"{model.provider} models have no batch API", None
    if not path_text:
        return None, None
    try:
        rendered = prepare_transcript(Path(str(path_text)))
        with open(rendered, encoding="utf-8", errors="replace") as fh:
            text = fh.read(limit + 1)
    except OSError:
        return "the transcript cannot be read", None
    if len(text) > limit:
        return f"a transcript over {limit} characters (needs the judge's tools)", None
    return None, text


async def _collect(suite: Suite, case: Case, repeat: int, transcripts: _Transcripts) -> list[PromptRequest]:
    collector = _Collector()
    engine = Engine(suite.config, judge=collector)
    await engine.evaluate(
        suite.event, transcripts.context_for(case), transcripts.path_for(case), repeat=repeat
    )
    return collector.requests


def _add_requests(
    plan: Plan, case: Case, requests: list[PromptRequest], transcript: str | None, env: Mapping[str, str]
) -> list[str] | str:
    """The keys of ``requests`` added to ``plan`` (or why the case goes the normal way)."""
    keys: list[str] = []
    for request in requests:
        if not isinstance(request.hook.model, str):
            return "a model cascade (its stages run one after another)"
        model = resolve_model(request.hook.model, request.models, env)
        try:
            provider = _provider(plan, model.provider, model.name, env)
            shown = judged_context(request.context)
            prompt = render_prompt(
                request.hook.prompt or "", shown, request.base_dir, arguments=delimit_context(shown)
            )
        except HookError as exc:
            return f"a hook that cannot be judged ({str(exc)[:80]})"
        key = batch_key(request, case.id)
        if key not in plan.requests:
            body = provider.body(messages_for(prompt, transcript), [], "none")
            plan.add(key, model.provider, provider.base_url, model.name, body)
        keys.append(key)
    return keys


def plan_batch(suite: Suite, repeats: int, env: Mapping[str, str] | None = None) -> Plan:
    """Route every (case, repeat) of the suite (see the module docstring)."""
    env = os.environ if env is None else env
    limit = max_transcript_chars(env)
    plan = Plan()
    transcripts = _Transcripts(suite.base_dir)
    engine = Engine(suite.config)

    async def run() -> None:
        for case in suite.cases:
            reason, text = _static_reason(suite, engine, case, transcripts, env, limit)
            for repeat in range(repeats):
                pair = (case.id, repeat)
                if reason is None:
                    requests = await _collect(suite, case, repeat, transcripts)
                    added = _add_requests(plan, case, requests, text, env)
                    if isinstance(added, str):
                        reason = added
                    elif added:
                        plan.batch[pair] = added
                        continue
                    else:
                        reason = "no prompt hook to judge"
                plan.normal[pair] = reason

    try:
        asyncio.run(run())
    finally:
        transcripts.cleanup()
    return plan


def read_answer(provider: SDKProvider, data: object) -> PromptVerdict:
    """The verdict in a batch answer (a Chat Completions / Messages response body).

    A batch request gets no repair turn: an answer without a verdict is a hook error."""
    completion = provider.completion(data)
    found = find_verdict_object(completion.text)
    if found is None:
        snippet = completion.text.strip()[:200].replace("\n", "\\n")
        raise HookError(
            f"the judge's batch answer is not a verdict (a batch request gets no repair turn): {snippet!r}",
            model=provider.label,
            usage=completion.usage,
        )
    ok, reason, verdict = found
    impossible = answer_from_object(verdict).impossible
    return PromptVerdict(
        ok=ok, reason=reason, impossible=impossible, model=provider.label, usage=completion.usage
    )
