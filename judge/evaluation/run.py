"""One ``judge eval`` run, as a library call: :func:`run_eval` takes :class:`EvalSettings` and
returns an :class:`EvalOutcome`; it never prints or exits (:mod:`judge.cli.eval` does).

The run: load the suite (one variant of it), check the output folder, the results file
and the cache before anything is spent, judge the cases not yet in ``DIR/results.jsonl``
in one of four ways — their recorded verdicts (``recorded``), the providers' batch APIs
(``batch``), worker processes (``workers`` > 1) or this process — then write
``report.json``, ``junit.xml``, ``report.html`` and ``run.json``, and check the bounds.
Several variants (``--model`` / ``--config`` repeated) are a comparison
(:mod:`judge.evaluation.compare`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.errors import SuiteError, UsageError
from judge.evaluation.batch.run import BatchOutcome, add_batch_section, batch_settings_problem, run_batch
from judge.evaluation.bounds import Bound, check_bounds
from judge.evaluation.cache import CACHE_NAME, JudgementCache
from judge.evaluation.interrupts import InterruptGuard, ignore_interrupts
from judge.evaluation.metrics import rounded
from judge.evaluation.probes import run_probes
from judge.evaluation.progress import Progress
from judge.evaluation.reports.written import all_errored, atomic_write, write_reports, write_run_info
from judge.evaluation.runner import (
    DEFAULT_CONCURRENCY,
    CaseResult,
    ResultsWriter,
    order_results,
    pairs,
    read_results,
    recorded_result,
    repair_results,
    run_suite,
)
from judge.evaluation.spending import EvalBudget, max_usd_problem, stopped_lines
from judge.evaluation.suite import Suite
from judge.evaluation.trust import prepare, sections
from judge.evaluation.variants import Variant, load_variant_suite
from judge.evaluation.workers import WorkerFailure, choose_workers, run_in_workers
from judge.hooks.judging import PromptJudge
from judge.llm.providers.features_memo import FILE_NAME as MEMO_FILE
from judge.llm.providers.features_memo import remembering
from judge.logs.jsonl import now_iso


@dataclass
class EvalSettings:
    """What one run is asked to do (the flags of ``judge eval``, checked)."""

    suite: str
    out: Path
    variant: Variant = field(default_factory=lambda: Variant("suite", "suite"))
    concurrency: int = DEFAULT_CONCURRENCY
    repeats: int | None = None
    workers: int | None = None
    resume: bool = False
    no_cache: bool = False
    cache: Path | None = None
    recorded: bool = False
    batch: bool = False
    quiet: bool = False
    bounds: list[Bound] = field(default_factory=list)
    #: ``--probes``: the probes to run (comma-separated names, or ``all``).
    probes: str | None = None
    #: ``--calibration``: the calibration file correcting recorded verdicts.
    calibration: Path | None = None
    #: ``--max-usd``: what this command may spend on model calls (``judge.evaluation.spending``).
    max_usd: float | None = None
    #: Overrides the LLM judge (tests, embedding programs); runs in this process unless asked.
    judge: PromptJudge | None = None
    #: Where the run's notes go as they happen (``resuming: ...``); default: nowhere.
    note: Callable[[str], None] = lambda line: None
    #: Makes the run's progress display (default: counts, shows nothing).
    progress: Callable[[], Progress] = Progress

    def cache_path(self) -> Path | None:
        if self.no_cache:
            return None
        return self.cache if self.cache is not None else self.out.resolve().parent / CACHE_NAME


@dataclass
class EvalOutcome:
    """How a run ended. ``problems``: it could not complete (the CLI exits 2); else ``report``
    (report.json's content) and ``run`` (run.json's) describe it, ``failed`` lists the
    violated bounds and ``nothing_judged`` says when every judgement errored."""

    problems: list[str] = field(default_factory=list)
    suite: Suite | None = None
    report: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None
    run: dict[str, Any] | None = None
    results: list[CaseResult] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    nothing_judged: str | None = None
    workers: int = 1
    concurrency: int = DEFAULT_CONCURRENCY
    #: ``--max-usd``: the limit, spent and refused (None without one).
    spend: dict[str, Any] | None = None

    @property
    def completed(self) -> bool:
        return not self.problems


@dataclass
class _Judged:
    """What the judging phase left: how it ended and how long it took."""

    seconds: float = 0.0
    interrupted: bool = False
    failure: str | None = None
    batched: BatchOutcome | None = None
    writers: list[ResultsWriter] = field(default_factory=list)
    budget: EvalBudget | None = None


def _check_modes(settings: EvalSettings, suite: Suite) -> None:
    """The run modes that cannot be combined or used as asked (UsageError)."""
    if settings.batch and (settings.recorded or settings.workers is not None):
        raise UsageError(
            f"--batch cannot be combined with {'--recorded' if settings.recorded else '--workers'}"
        )
    problem = batch_settings_problem() if settings.batch else None
    if problem is not None:
        raise UsageError(problem)
    if settings.recorded:
        missing = [case.id for case in suite.cases if case.recorded is None]
        if missing:
            raise UsageError(
                f"--recorded: {len(missing)} case(s) have no recorded verdict (first: {missing[0]!r}); "
                "convert a shadow log with `judge datasets convert shadow`"
            )
    if settings.workers is not None and settings.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {settings.workers}")
    problem = None if settings.max_usd is None else max_usd_problem(settings, suite.config, suite.event)
    if problem is not None:
        raise UsageError(problem)


def _prepare_out(settings: EvalSettings) -> Path:
    """The output folder and results file, checked before anything is paid for."""
    out = settings.out
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {out}: {exc}") from None
    results_path = out / "results.jsonl"
    try:  # a folder, a file that cannot be written
        if results_path.exists() and not results_path.is_file():
            raise IsADirectoryError(f"{results_path} is not a regular file")
        with results_path.open("ab"):
            pass
    except OSError as exc:
        raise UsageError(f"cannot write {results_path}: {exc}") from None
    cache_path = settings.cache_path()
    if cache_path is not None:
        try:
            JudgementCache(cache_path).close()  # created and checked before any work
        except Exception as exc:  # sqlite3 errors, permissions, a newer schema
            raise UsageError(f"cannot open the cache {cache_path}: {exc}") from None
    return results_path


def _judge(
    settings: EvalSettings,
    suite: Suite,
    repeats: int,
    skip: set[tuple[str, int]],
    workers: int,
    results_path: Path | None = None,
) -> _Judged:
    """Judge what is left, in the run's mode; results go to ``results_path`` (default
    ``DIR/results.jsonl``; with ``--max-usd``, in this process, as its budget lets them)."""
    judged = _Judged()
    budget = judged.budget = None if settings.max_usd is None else EvalBudget(settings.max_usd, suite.config)
    results_path = results_path if results_path is not None else settings.out / "results.jsonl"
    progress = settings.progress()
    cache_path = settings.cache_path()
    started = time.perf_counter()

    def open_writer() -> None:
        judged.writers.append(ResultsWriter(results_path, truncate=not settings.resume))

    # what model servers lack (learned by the first requests) is kept beside the cache
    memo = cache_path.parent / MEMO_FILE if cache_path is not None else None
    with remembering(memo):
        try:
            if settings.recorded:
                open_writer()
                for case in suite.cases:
                    if (case.id, 0) not in skip:
                        judged.writers[0].write(recorded_result(case))
            elif settings.batch:
                open_writer()
                judged.batched = run_batch(
                    suite,
                    out=settings.out,
                    repeats=repeats,
                    concurrency=settings.concurrency,
                    skip=skip,
                    cache_path=cache_path,
                    judge=settings.judge,
                    resume=settings.resume,
                    on_result=judged.writers[0].write,
                    progress=progress,
                    quiet=settings.quiet,
                    say=settings.note,
                )
                judged.interrupted, judged.failure = judged.batched.interrupted, judged.batched.failure
            elif workers > 1:
                _judge_in_workers(settings, suite, repeats, skip, workers, progress, open_writer, judged)
            else:
                open_writer()
                write = judged.writers[0].write
                judged.interrupted = not run_suite(
                    suite,
                    repeats=repeats,
                    concurrency=settings.concurrency,
                    judge=settings.judge if budget is None else budget.judge(),
                    cache_path=cache_path,
                    on_result=write if budget is None else budget.writer(write),
                    skip=skip,
                    progress=progress,
                    guard=InterruptGuard(note=settings.note),
                    stop=None if budget is None else budget.spent_out,
                )
        except KeyboardInterrupt:
            judged.interrupted = True
        finally:
            judged.seconds = time.perf_counter() - started
            for writer in judged.writers:
                writer.close()
    return judged


def _judge_in_workers(
    settings: EvalSettings,
    suite: Suite,
    repeats: int,
    skip: set[tuple[str, int]],
    workers: int,
    progress: Progress,
    open_writer: Callable[[], None],
    judged: _Judged,
) -> None:
    try:
        run_in_workers(
            suite,
            workers=workers,
            repeats=repeats,
            concurrency=settings.concurrency,
            skip=skip,
            cache_path=settings.cache_path(),
            judge=settings.judge,
            before_results=open_writer,
            on_result=lambda result: judged.writers[0].write(result),
            progress=progress,
        )
    except KeyboardInterrupt:
        judged.interrupted = True
        ignore_interrupts()  # a second Ctrl-C must not cut the results short
    except WorkerFailure as exc:
        judged.failure = str(exc)


def _ended_early(
    judged: _Judged, suite: Suite, repeats: int, results: list[CaseResult], out: Path
) -> list[str]:
    """Why the run did not complete (empty when it did)."""
    results_path = out / "results.jsonl"
    total = len(suite.cases) * repeats
    write_error = next((w.error for w in judged.writers if w.error is not None), None)
    if write_error is not None:
        return [f"judge eval: writing {results_path} failed: {write_error}"]
    kept = f"{len(results)} of {total} results are kept in {results_path}; run the same command with --resume"
    if judged.failure is not None:
        return [f"judge eval: {judged.failure}; {kept} to finish"]
    if judged.interrupted:
        lines = []
        if judged.batched is not None:
            lines.append(
                f"  the submitted batches are saved in {out / 'batch.json'}; --resume polls them again"
            )
        return [*lines, f"interrupted: {kept} to finish"]
    missing = len(pairs(suite.cases, repeats)) - len(results)
    if missing:
        return [f"judge eval: {missing} result(s) missing from {results_path}; run again with --resume"]
    return []


def run_eval(settings: EvalSettings) -> EvalOutcome:
    """Run one variant of the suite (module docstring); never raises for what a user can fix."""
    outcome = EvalOutcome(concurrency=settings.concurrency)
    try:
        suite = load_variant_suite(
            settings.suite,
            settings.variant,
            check=not settings.recorded,  # recorded verdicts: no hook runs
            on_warning=None if settings.quiet else settings.note,
        )
    except SuiteError as exc:
        outcome.problems = [
            f"judge eval: cannot load suite {settings.suite}:",
            *(f"  {p}" for p in exc.problems),
        ]
        return outcome
    outcome.suite = suite
    repeats = 1 if settings.recorded else settings.repeats if settings.repeats is not None else suite.repeats
    try:
        plan = prepare(
            suite, settings.probes, settings.calibration, recorded=settings.recorded, batch=settings.batch
        )
        _check_modes(settings, suite)
        results_path = _prepare_out(settings)
    except UsageError as exc:
        outcome.problems = [f"judge eval: {exc}"]
        return outcome
    skip: set[tuple[str, int]] = set()
    if settings.resume:
        repair_results(results_path)
        skip = {(r.id, r.repeat) for r in order_results(read_results(results_path), suite.cases, repeats)}
        if not settings.quiet:
            settings.note(
                f"resuming: {len(skip)} of {len(suite.cases) * repeats} results already in {results_path}"
            )
    jobs_left = len(suite.cases) * repeats - len(skip)
    requested = settings.workers
    # A judge object handed in by an embedding program runs in this process unless asked.
    alone = settings.judge is not None or settings.max_usd is not None  # (a judge object; a money limit)
    workers = choose_workers(
        requested if requested is not None or not alone else 1, jobs_left, settings.concurrency
    )
    outcome.workers = workers
    started_at = now_iso()
    judged = _judge(settings, suite, repeats, skip, workers)
    budget = judged.budget
    results = order_results(read_results(results_path), suite.cases, repeats)
    outcome.results = results
    outcome.spend = None if budget is None else budget.summary()
    if budget is not None and budget.stopped(len(results), len(suite.cases) * repeats):
        outcome.problems = _stopped_at_budget(settings, suite, results, repeats, budget)
        return outcome
    outcome.problems = _ended_early(judged, suite, repeats, results, settings.out)
    if outcome.problems:
        return outcome
    probed = None
    if plan.probes:

        def run_into(changed: Suite, path: Path, done: set[tuple[str, int]]) -> str | None:
            ran = _judge(settings, changed, repeats, done, workers, path)
            return ran.failure or ("interrupted" if ran.interrupted else None)

        probed = run_probes(suite, plan.probes, settings.out, repeats, settings.resume, run_into)
        if probed.problems:
            outcome.problems = probed.problems
            return outcome
    extra = sections(suite, results, settings.out, plan, probed, settings.recorded)
    metrics = write_reports(suite, results, settings.out, extra)
    report = rounded(metrics)
    if judged.batched is not None:
        report["batch"] = add_batch_section(settings.out, judged.batched)
    outcome.metrics, outcome.report = metrics, report
    outcome.run = write_run_info(
        settings.out,
        started_at,
        judged.seconds,
        len(results) - len(skip),
        settings.concurrency,
        settings.resume,
        workers,
        outcome.spend,
    )
    outcome.nothing_judged = all_errored(report)
    outcome.failed = check_bounds(metrics, settings.bounds)
    return outcome


def _stopped_at_budget(
    settings: EvalSettings, suite: Suite, results: list[CaseResult], repeats: int, budget: EvalBudget
) -> list[str]:
    """The run stopped at ``--max-usd``: a partial report.json that says where, and what to do."""
    total = len(suite.cases) * repeats
    if results:
        report = rounded(write_reports(suite, results, settings.out))
        report["stoppedAtBudget"] = budget.summary(len(results), total)
        atomic_write(settings.out / "report.json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    return stopped_lines(budget.limit, len(results), total, settings.out / "results.jsonl")
