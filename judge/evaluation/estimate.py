"""What a run would cost, before it runs (``judge eval --estimate``; ``judge tune --estimate``
builds on it): model calls, tokens and dollars, without calling any model.

The planned judgements come from the engine itself, run over the suite's cases with the
config's prompt hooks only (command hooks never run) and a recording judge that calls no
model: it notes each judgement's model and cache key and answers with a rejection, so a
cascade goes through every stage (an upper bound; a PreToolUse rejection ends that
event's later hooks, so several PreToolUse prompt hooks per tool are an undercount).

Tokens per judgement, best source first:

1. the judgement is in the eval cache: its recorded usage — and with the cache on it is
   served from there and costs nothing;
2. other judgements of the same prompt and model are in the cache: their mean usage;
3. otherwise from the rendered prompt: (system + instructions) / :data:`CHARS_PER_TOKEN`
   input tokens and :data:`VERDICT_TOKENS` output; with a transcript, one more request
   that reads up to :data:`READ_CHARS` of it. Models that think before answering
   (reasoning models) spend more output tokens than that.

Dollars use the price table in force (:mod:`judge.pricing`); a model without a price is
named and its cost left out. Calls are a floor: one per judgement (two with a
transcript); more tool rounds and retries add calls.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from judge.config import EVENTS, Config, HookSet
from judge.decision import Usage
from judge.evaluation.cache import CACHE_NAME, cache_key
from judge.evaluation.runner import _Transcripts
from judge.evaluation.suite import Case
from judge.hooks.engine import Engine
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.llm.instructions import NO_TOOLS, SYSTEM_PROMPT, TOOLS_AVAILABLE, USER_TEMPLATE, delimit_context
from judge.llm.prompts import judged_context, render_prompt
from judge.llm.tiers import model_label
from judge.pricing import Price, price_for

if TYPE_CHECKING:
    from judge.evaluation.run import EvalSettings
    from judge.evaluation.variants import Variant

CHARS_PER_TOKEN = 4
VERDICT_TOKENS = 150
TOOL_CALL_TOKENS = 60
TOOL_SPEC_CHARS = 1500
READ_CHARS = 24_000


class Planned(BaseModel):
    """One judgement a run would make."""

    model: str
    prompt_sha: str
    free: bool = False
    calls: int = 1
    usage: Usage = Field(default_factory=Usage)
    #: Where the tokens come from: ``cache`` (this judgement), ``similar`` (the mean of this
    #: prompt and model in the cache) or ``prompt`` (the rendered prompt).
    source: str = "prompt"


class ModelCost(BaseModel):
    model: str
    judgements: int = 0
    calls: int = 0
    input_tokens: int = Field(0, alias="inputTokens")
    output_tokens: int = Field(0, alias="outputTokens")
    usd: float | None = None


class Estimate(BaseModel):
    """The estimate of one run (JSON with ``model_dump(by_alias=True)``)."""

    name: str
    judgements: int = 0
    free: int = Field(0, description="Judgements served from the cache: no call, no cost.")
    calls: int = Field(0, description="At least this many model calls.")
    input_tokens: int = Field(0, alias="inputTokens")
    output_tokens: int = Field(0, alias="outputTokens")
    usd: float | None = Field(None, description="None when a model has no price.")
    sources: dict[str, int] = Field(default_factory=dict)
    unpriced: list[str] = Field(default_factory=list)
    models: list[ModelCost] = Field(default_factory=list)


def prompt_hooks_only(config: Config) -> Config:
    """``config`` with its command hooks removed (agent level and custom agents)."""

    def keep(hooks: HookSet) -> HookSet:
        return HookSet.model_validate(
            {e: [h for h in hooks.for_event(e) if h.type == "prompt"] for e in EVENTS}
        )

    agents = {
        name: agent.model_copy(update={"hooks": keep(agent.hooks)})
        for name, agent in config.custom_agents.items()
    }
    return config.model_copy(update={"hooks": keep(config.hooks), "custom_agents": agents})


def static_usage(request: PromptRequest) -> tuple[int, Usage]:
    """Calls and tokens of a judgement from its rendered prompt (module docstring, 3.)."""
    shown = judged_context(request.context)
    try:
        prompt = render_prompt(
            request.hook.prompt or "", shown, request.base_dir, arguments=delimit_context(shown)
        )
    except Exception:  # a template error is the run's to report; estimate from the template
        prompt = request.hook.prompt or ""
    path = request.transcript_path
    chars = len(SYSTEM_PROMPT) + len(USER_TEMPLATE) + len(prompt)
    if path is None:
        base = (chars + len(NO_TOOLS)) // CHARS_PER_TOKEN + 1
        return 1, Usage(inputTokens=base, outputTokens=VERDICT_TOKENS)
    base = (chars + len(TOOLS_AVAILABLE) + TOOL_SPEC_CHARS) // CHARS_PER_TOKEN + 1
    try:
        read = min(path.stat().st_size, READ_CHARS) // CHARS_PER_TOKEN
    except OSError:
        read = 0
    usage = Usage(
        inputTokens=2 * base + TOOL_CALL_TOKENS + read, outputTokens=TOOL_CALL_TOKENS + VERDICT_TOKENS
    )
    return 2, usage


class CacheReader:
    """The judgement cache opened read-only (an estimate writes nothing, not even the
    cache's journal); an unreadable or foreign file reads as empty."""

    def __init__(self, path: Path) -> None:
        self._db: sqlite3.Connection | None = None
        try:
            # immutable: no lock, no -shm/-wal files (entries still in another writer's WAL are missed)
            self._db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
            self._db.execute("SELECT key FROM judgements LIMIT 1")
        except sqlite3.Error:
            self.close()

    def get(self, key: str) -> PromptVerdict | None:
        if self._db is None:
            return None
        try:
            row = self._db.execute("SELECT verdict FROM judgements WHERE key = ?", (key,)).fetchone()
            return None if row is None else PromptVerdict.model_validate(json.loads(row[0]))
        except (sqlite3.Error, ValueError):
            return None

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


class _Recorder:
    """A prompt judge that calls no model: it notes what would be judged (module docstring)."""

    def __init__(self, cache: CacheReader | None, use_cache: bool, env: Mapping[str, str] | None) -> None:
        self.cache = cache
        self.use_cache = use_cache
        self.env = env
        self.case_id = ""
        self.planned: list[Planned] = []

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        model = request.hook.model if isinstance(request.hook.model, str) else str(request.hook.model)
        try:
            label = model_label(model, request.models, self.env)
        except ValueError:
            label = f"unresolved:{model}"
        found = self.cache.get(cache_key(request, self.case_id)) if self.cache is not None else None
        calls, usage = static_usage(request)
        sha = hashlib.sha256((request.hook.prompt or "").encode("utf-8", "surrogatepass")).hexdigest()
        planned = Planned(model=label, prompt_sha=sha, calls=calls, usage=usage)
        if found is not None and (found.usage.input_tokens or found.usage.output_tokens):
            planned.usage, planned.source = found.usage, "cache"
        planned.free = found is not None and self.use_cache
        self.planned.append(planned)
        return PromptVerdict(ok=False, reason="estimate")


async def _plan(
    config: Config,
    event: str,
    cases: Sequence[Case],
    base_dir: Path,
    repeats: int,
    recorder: _Recorder,
    skip: set[tuple[str, int]],
) -> None:
    engine = Engine(prompt_hooks_only(config), judge=recorder)
    transcripts = _Transcripts(base_dir)
    try:
        for case in cases:
            for repeat in range(repeats):
                if (case.id, repeat) in skip:
                    continue
                recorder.case_id = case.id
                await engine.evaluate(
                    event, transcripts.context_for(case), transcripts.path_for(case), repeat=repeat
                )
    finally:
        transcripts.cleanup()


async def plan_async(
    config: Config,
    event: str,
    cases: Sequence[Case],
    *,
    base_dir: Path,
    repeats: int = 1,
    cache_path: Path | None = None,
    use_cache: bool = True,
    env: Mapping[str, str] | None = None,
    skip: set[tuple[str, int]] | None = None,
) -> list[Planned]:
    """Every judgement a run of ``cases`` would make, with its tokens (module docstring).
    The cache at ``cache_path`` is only read (and only when it exists)."""
    cache = CacheReader(cache_path) if cache_path is not None and cache_path.is_file() else None
    recorder = _Recorder(cache, use_cache, env)
    try:
        await _plan(config, event, cases, base_dir, repeats, recorder, skip or set())
    finally:
        if cache is not None:
            cache.close()
    _fill_similar(recorder.planned)
    return recorder.planned


def plan_judgements(
    config: Config, event: str, cases: Sequence[Case], *, base_dir: Path, **options: Any
) -> list[Planned]:
    """:func:`plan_async` on a new event loop."""
    return asyncio.run(plan_async(config, event, cases, base_dir=base_dir, **options))


def _fill_similar(planned: list[Planned]) -> None:
    """Judgements without a cache entry take the mean usage of their prompt and model's."""
    measured: dict[tuple[str, str], list[Usage]] = defaultdict(list)
    for p in planned:
        if p.source == "cache":
            measured[(p.prompt_sha, p.model)].append(p.usage)
    for p in planned:
        seen = measured.get((p.prompt_sha, p.model))
        if p.source == "prompt" and seen:
            n = len(seen)
            p.usage = Usage(
                inputTokens=sum(u.input_tokens for u in seen) // n,
                outputTokens=sum(u.output_tokens for u in seen) // n,
            )
            p.source = "similar"


def price_plan(name: str, planned: Sequence[Planned], prices: Mapping[str, Price]) -> Estimate:
    """The totals of ``planned`` (cache hits free), per model and overall."""
    estimate = Estimate(name=name, judgements=len(planned))
    by_model: dict[str, ModelCost] = {}
    for p in planned:
        estimate.sources[p.source] = estimate.sources.get(p.source, 0) + 1
        row = by_model.setdefault(p.model, ModelCost(model=p.model))
        row.judgements += 1
        if p.free:
            estimate.free += 1
            continue
        row.calls += p.calls
        row.input_tokens += p.usage.input_tokens
        row.output_tokens += p.usage.output_tokens
    total = 0.0
    for row in by_model.values():
        price = price_for(row.model, prices)
        if price is None:
            estimate.unpriced.append(row.model)
        else:
            row.usd = price.cost(Usage(inputTokens=row.input_tokens, outputTokens=row.output_tokens))
            total += row.usd
        estimate.calls += row.calls
        estimate.input_tokens += row.input_tokens
        estimate.output_tokens += row.output_tokens
    estimate.models = list(by_model.values())
    estimate.usd = None if estimate.unpriced else round(total, 6)
    return estimate


def describe(estimate: Estimate) -> list[str]:
    """The estimate as lines of text (what ``--estimate`` prints)."""
    usd = "unknown" if estimate.usd is None else f"${estimate.usd:.4f}"
    lines = [
        f"estimate for {estimate.name}: {estimate.judgements} judgement(s), "
        f"{estimate.free} served from the cache (free)",
        f"  model calls: at least {estimate.calls}",
        f"  tokens: ~{estimate.input_tokens:,} in, ~{estimate.output_tokens:,} out",
        f"  cost: {usd}",
    ]
    for row in estimate.models:
        cost = "no price" if row.usd is None else f"${row.usd:.4f}"
        lines.append(
            f"    {row.model}: {row.judgements} judgement(s), {row.calls} call(s), "
            f"~{row.input_tokens:,} in / ~{row.output_tokens:,} out, {cost}"
        )
    names = {
        "cache": "this judgement in the cache",
        "similar": "the same prompt in the cache",
        "prompt": "the prompt's length",
    }
    sources = ", ".join(f"{n} from {names.get(s, s)}" for s, n in sorted(estimate.sources.items()))
    if sources:
        lines.append(f"  tokens per judgement: {sources}")
    if estimate.unpriced:
        lines.append(
            f"  no price for {', '.join(estimate.unpriced)}: set one under prices: in the config "
            "(or JUDGE_PRICES) to include it"
        )
    return lines


def estimate_eval(settings: EvalSettings, variants: Sequence[Variant]) -> list[Estimate]:
    """The estimate of ``judge eval`` with these settings, per variant (SuiteError for a bad
    suite). Reads the suite, the cache and (with ``--resume``) the results; writes nothing."""
    from judge.evaluation.runner import order_results, read_results
    from judge.evaluation.spending import config_prices
    from judge.evaluation.variants import load_variant_suite
    from judge.pricing import batch_cost

    out: list[Estimate] = []
    for variant in variants:
        suite = load_variant_suite(settings.suite, variant)
        repeats = 1 if settings.recorded else settings.repeats or suite.repeats
        name = suite.name if len(variants) == 1 else f"{suite.name} [{variant.name}]"
        if settings.recorded:  # scores recorded verdicts: no model is asked
            out.append(Estimate(name=name, judgements=len(suite.cases), free=len(suite.cases)))
            continue
        folder = settings.out if len(variants) == 1 else settings.out / variant.slug
        skip: set[tuple[str, int]] = set()
        if settings.resume:
            done = order_results(read_results(folder / "results.jsonl"), suite.cases, repeats)
            skip = {(r.id, r.repeat) for r in done}
        planned = plan_judgements(
            suite.config,
            suite.event,
            suite.cases,
            base_dir=suite.base_dir,
            repeats=repeats,
            # (read even with --no-cache: what it measured still sizes the judgements)
            cache_path=settings.cache or settings.out.resolve().parent / CACHE_NAME,
            use_cache=not settings.no_cache,
            skip=skip,
        )
        estimate = price_plan(name, planned, config_prices(suite.config))
        if settings.batch and estimate.usd is not None:
            estimate.usd = batch_cost(estimate.usd)
            for row in estimate.models:
                row.usd = batch_cost(row.usd)
        out.append(estimate)
    return out
