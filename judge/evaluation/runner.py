"""Run eval cases through the engine with bounded concurrency; record results durably.

:func:`run_cases` evaluates every (case, repeat) pair with at most ``concurrency``
judgements in flight, reports each result as it finishes (``on_result``) and returns
them in case order x repeat, each with every prompt hook's own verdict
(:func:`prompt_results`). Results are kept in ``results.jsonl``
(:mod:`judge.evaluation.results`, whose names are re-exported here).
"""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import Any

from judge.config import Config
from judge.config.models import hook_place
from judge.decision import HookOutcome, Usage
from judge.evaluation.cache import CachingJudge, JudgementCache
from judge.evaluation.interrupts import InterruptGuard
from judge.evaluation.progress import Progress
from judge.evaluation.results import CaseResult as CaseResult
from judge.evaluation.results import PromptResult as PromptResult
from judge.evaluation.results import ResultsWriter as ResultsWriter
from judge.evaluation.results import order_results as order_results
from judge.evaluation.results import read_results as read_results
from judge.evaluation.results import recorded_result as recorded_result
from judge.evaluation.results import repair_results as repair_results
from judge.evaluation.suite import Case, Suite, resolve_path
from judge.hooks.engine import Engine, default_judge
from judge.hooks.judging import PromptJudge, PromptRequest, PromptVerdict

DEFAULT_CONCURRENCY = 16


class _CaseJudge:
    """Per-case view of the shared judge that notes whether answers came from the cache."""

    def __init__(self, judge: PromptJudge, case_id: str) -> None:
        self.judge = judge
        self.case_id = case_id
        self.hits = 0
        self.misses = 0

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        if isinstance(self.judge, CachingJudge):
            verdict, hit = await self.judge.evaluate_cached(request, self.case_id)
        else:
            verdict, hit = await self.judge.evaluate(request), False
        if hit:
            self.hits += 1
        else:
            self.misses += 1
        return verdict


class _Transcripts:
    """Transcript files for cases: given paths resolved, inline text written to a temp folder."""

    def __init__(self, base_dir: Path) -> None:
        self.base_dir = base_dir
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def path_for(self, case: Case) -> Path | None:
        if case.transcript_path is not None:
            return resolve_path(self.base_dir, case.transcript_path)
        if case.transcript is None:
            return None
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="judge-eval-")
        data = case.transcript.encode("utf-8", "backslashreplace")  # a lone surrogate as its escape
        path = Path(self._tmp.name) / f"{hashlib.sha256(data).hexdigest()[:32]}.txt"
        if not path.exists():
            path.write_bytes(data)
        return path

    def context_for(self, case: Case) -> dict[str, Any]:
        context = dict(case.context)
        summary = context.get("execution_summary")
        if isinstance(summary, str) and summary and not Path(summary).is_absolute():
            context["execution_summary"] = str(resolve_path(self.base_dir, summary))
        return context

    def cleanup(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


async def _judge_one(
    engine_for: Callable[[PromptJudge], Engine],
    judge: PromptJudge,
    event: str,
    case: Case,
    repeat: int,
    transcripts: _Transcripts,
) -> CaseResult:
    recorder = _CaseJudge(judge, case.id)
    engine = engine_for(recorder)
    result = CaseResult(id=case.id, repeat=repeat, label=case.label, group=case.group, tags=case.tags)
    start = time.perf_counter()
    try:
        decision = await engine.evaluate(
            event, transcripts.context_for(case), transcripts.path_for(case), repeat=repeat
        )
    except Exception as exc:  # the run goes on; the case records why it has no decision
        result.error = f"{type(exc).__name__}: {exc}"
        result.duration_ms = round((time.perf_counter() - start) * 1000.0, 3)
        return result
    result.duration_ms = round((time.perf_counter() - start) * 1000.0, 3)
    result.decision = decision.decision
    result.reason = decision.reason
    result.forced_stop = decision.forced_stop
    result.outcome = decision.outcome
    errors = [f"{h.level}[{h.index}] ({h.type}): {h.error}" for h in decision.hooks if h.error]
    result.error = "; ".join(errors) or None
    usage = Usage()
    for hook in decision.hooks:
        if hook.usage is not None:
            usage = usage + hook.usage
    result.usage = usage
    if any(h.cost_usd is not None for h in decision.hooks):
        result.cost_usd = decision.cost_usd
    result.cached = recorder.hits > 0 and recorder.misses == 0
    result.cascades = {f"{h.level}[{h.index}]": h.stages for h in decision.hooks if h.stages} or None
    result.prompts = prompt_results(event, case.context.get("agent_name"), decision.hooks)
    return result


def prompt_results(event: str, agent: Any, hooks: list[HookOutcome]) -> list[PromptResult] | None:
    """Each prompt hook's own verdict in a decision (None without prompt hooks)."""
    found = []
    for hook in hooks:
        if hook.type != "prompt":
            continue
        name = str(agent) if hook.level == "custom" and agent is not None else None
        samples = [s.verdict for s in hook.samples] if hook.samples else None
        decision = None if hook.error is not None else hook.decision
        found.append(
            PromptResult(place=hook_place(event, hook.index, name), decision=decision, samples=samples)
        )
    return found or None


def pairs(cases: Iterable[Case], repeats: int) -> list[tuple[str, int]]:
    """The (id, repeat) pairs of a run, in report order."""
    return [(case.id, r) for case in cases for r in range(repeats)]


async def run_cases(
    config: Config,
    event: str,
    cases: list[Case],
    *,
    base_dir: Path,
    repeats: int = 1,
    concurrency: int = DEFAULT_CONCURRENCY,
    judge: PromptJudge | None = None,
    cache: JudgementCache | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
    progress: Progress | None = None,
    skip: set[tuple[str, int]] | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[CaseResult]:
    """Judge every case ``repeats`` times; results in case order x repeat.

    ``judge`` evaluates prompt hooks (default: the LLM judge); with ``cache`` it is
    wrapped in a :class:`CachingJudge`. ``skip`` holds (id, repeat) pairs already done
    (``--resume``); they are neither run nor returned. ``on_result`` sees each result as
    it finishes. Cancellation (Ctrl-C) stops the workers; finished results have already
    been passed to ``on_result``. Once ``stop()`` is true no further pair is started
    (``--max-usd``: the budget is spent); the pairs not started are not returned.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    inner = judge if judge is not None else default_judge()
    shared: PromptJudge = CachingJudge(inner, cache) if cache is not None else inner
    done = skip or set()
    jobs = [(i, case, r) for i, case in enumerate(cases) for r in range(repeats) if (case.id, r) not in done]
    if progress is not None:
        progress.start(len(cases) * repeats, done=len(cases) * repeats - len(jobs))
    transcripts = _Transcripts(base_dir)
    results: dict[tuple[int, int], CaseResult] = {}
    pending: asyncio.Queue[tuple[int, Case, int]] = asyncio.Queue()
    for job in jobs:
        pending.put_nowait(job)

    measured = config.model_copy(update={"calibration": None})  # every hook judged as written

    def engine_for(case_judge: PromptJudge) -> Engine:
        return Engine(measured, judge=case_judge)

    async def worker() -> None:
        while stop is None or not stop():
            try:
                index, case, repeat = pending.get_nowait()
            except asyncio.QueueEmpty:
                return
            result = await _judge_one(engine_for, shared, event, case, repeat, transcripts)
            results[(index, repeat)] = result
            if on_result is not None:
                on_result(result)
            if progress is not None:
                progress.advance(result)

    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, max(len(jobs), 1)))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        transcripts.cleanup()
        if progress is not None:
            progress.finish()
    return [results[key] for key in sorted(results)]


def run_suite(
    suite: Suite,
    *,
    repeats: int,
    concurrency: int,
    judge: PromptJudge | None,
    cache_path: Path | None,
    on_result: Callable[[CaseResult], None],
    skip: set[tuple[str, int]],
    progress: Progress | None = None,
    guard: InterruptGuard | None = None,
    stop: Callable[[], bool] | None = None,
) -> bool:
    """Run ``suite``'s pairs not in ``skip`` to the end on a new event loop, with this
    process's own connection to the judgement cache at ``cache_path`` (None: no cache).

    With ``guard``, Ctrl-C stops the run gracefully (see :mod:`judge.evaluation.interrupts`);
    False when it did, True when the run completed."""
    cache = JudgementCache(cache_path) if cache_path is not None else None
    run: Callable[[Coroutine[Any, Any, list[CaseResult]]], object] = (
        asyncio.run if guard is None else guard.run
    )
    try:
        return (
            run(
                run_cases(
                    suite.config,
                    suite.event,
                    suite.cases,
                    base_dir=suite.base_dir,
                    repeats=repeats,
                    concurrency=concurrency,
                    judge=judge,
                    cache=cache,
                    on_result=on_result,
                    progress=progress,
                    skip=skip,
                    stop=stop,
                )
            )
            is not None
        )
    finally:
        if cache is not None:
            cache.close()
