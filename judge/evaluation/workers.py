"""``judge eval --workers N``: cases judged in N worker processes, one results stream.

One Python process spends most of a judgement's CPU in the SDK's request path, so at high
concurrency a run is CPU-bound on one core while the others idle. With workers, the
(case, repeat) pairs still to run are dealt round-robin into N shards; each worker is a
forked copy of ``judge eval`` (no new interpreter; the SDKs the suite uses are imported
once, before forking) that runs
its shard with :func:`judge.evaluation.runner.run_suite` on its own event loop, with its
own SDK clients, its own connection to the judgement cache (SQLite in WAL mode, shared
safely across processes) and ``concurrency / N`` judgements in flight.

Workers only judge. Each result goes back to the parent over the worker's own pipe as
one JSON line; the parent alone writes ``results.jsonl`` (the same fsync'd writer as
without workers), advances the progress bar and builds the reports, so ``--resume``,
the cache and the reports behave exactly as in one process.

Failure behaviour:

* Ctrl-C (SIGINT to the foreground process group): workers ignore it; the parent stops
  them (SIGTERM, then SIGKILL) and keeps every result it received — ``--resume`` runs the
  rest, as without workers.
* ``kill -9`` of the parent: every worker is killed by the kernel (``PR_SET_PDEATHSIG``;
  a watchdog thread that polls the parent's pid does the same where that is missing).
* A worker that dies: its shard's remaining pairs are missing; the run ends with exit 2
  and says to ``--resume``.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from judge.evaluation.progress import Progress
from judge.evaluation.runner import CaseResult, run_suite
from judge.evaluation.suite import Suite
from judge.hooks.judging import PromptJudge

#: Fewest (case, repeat) pairs per worker when the number of workers is chosen automatically.
MIN_JOBS_PER_WORKER = 50
_PR_SET_PDEATHSIG = 1
_DONE = b"\x00done"


class WorkerFailure(Exception):
    """A worker process died before finishing its shard."""


def available_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def choose_workers(requested: int | None, jobs: int, concurrency: int) -> int:
    """Worker processes for a run: ``requested`` (never more than ``concurrency`` or the
    jobs), else the available CPUs with at least :data:`MIN_JOBS_PER_WORKER` jobs each."""
    if requested is not None:
        return max(1, min(requested, concurrency, max(jobs, 1)))
    return max(1, min(available_cpus(), concurrency, jobs // MIN_JOBS_PER_WORKER))


def preload_sdks(suite: Suite) -> None:
    """Import, once in the parent, the SDKs the suite's prompt hooks will use, so forked
    workers share them instead of each importing them again (the OpenAI SDK alone takes
    about a second of CPU to import)."""
    import importlib

    from judge.llm.tiers import resolve_model

    hooks = list(suite.config.hooks.for_event(suite.event))
    for agent in suite.config.custom_agents.values():
        hooks += agent.hooks.for_event(suite.event)
    for hook in hooks:
        for model in hook.models if hook.type == "prompt" else ():
            try:
                provider = resolve_model(model, suite.config.models).provider
            except ValueError:
                continue  # reported by the judgement itself
            if provider in ("openai", "anthropic"):
                with contextlib.suppress(ImportError):
                    importlib.import_module(f"judge.llm.providers.{provider}")
                    importlib.import_module(provider)


def _die_with_parent(parent: int) -> None:
    """Make the kernel kill this process when its parent dies; poll as a fallback."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the call above
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="judge-eval-parent-watch", daemon=True).start()


def _worker(
    conn: Connection,
    parent: int,
    suite: Suite,
    repeats: int,
    concurrency: int,
    shard: set[tuple[str, int]],
    judge: PromptJudge | None,
    cache_path: Path | None,
) -> None:
    """Run one shard in a forked worker and send each result to the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent(parent)
    skip = {(case.id, r) for case in suite.cases for r in range(repeats)} - shard

    def send(result: CaseResult) -> None:
        conn.send_bytes(result.to_line().encode("utf-8", "backslashreplace"))

    try:
        run_suite(
            suite,
            repeats=repeats,
            concurrency=concurrency,
            judge=judge,
            cache_path=cache_path,
            on_result=send,
            skip=skip,
        )
        conn.send_bytes(_DONE)
    finally:
        conn.close()


def _stop(processes: list[Any]) -> None:
    for proc in processes:
        if proc.is_alive():
            proc.terminate()
    deadline = time.monotonic() + 5
    for proc in processes:
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            proc.kill()
            proc.join()


def run_in_workers(
    suite: Suite,
    *,
    workers: int,
    repeats: int,
    concurrency: int,
    skip: set[tuple[str, int]],
    cache_path: Path | None,
    judge: PromptJudge | None = None,
    before_results: Callable[[], None] | None = None,
    on_result: Callable[[CaseResult], None],
    progress: Progress | None = None,
) -> None:
    """Judge the pairs not in ``skip`` in ``workers`` forked processes.

    Workers are forked first — before this process starts any thread — then
    ``before_results`` runs (start the results writer there). Each result is passed to
    ``on_result`` and ``progress`` as it arrives. Raises :class:`WorkerFailure` when a
    worker died before finishing (the results received are kept), and lets
    ``KeyboardInterrupt`` through after stopping the workers.
    """
    jobs = [(case.id, r) for case in suite.cases for r in range(repeats) if (case.id, r) not in skip]
    shards = [set(jobs[i::workers]) for i in range(workers)]
    per_worker = max(1, concurrency // workers)
    context = multiprocessing.get_context("fork")
    processes: list[Any] = []
    readers: dict[Any, tuple[Any, Connection]] = {}
    parent = os.getpid()
    preload_sdks(suite)
    try:
        for shard in shards:
            reader, writer = context.Pipe(duplex=False)
            args = (writer, parent, suite, repeats, per_worker, shard, judge, cache_path)
            proc = context.Process(target=_worker, args=args, name="judge-eval-worker", daemon=True)
            proc.start()
            writer.close()
            processes.append(proc)
            readers[reader] = (proc, reader)
        if before_results is not None:
            before_results()
        if progress is not None:
            total = len(suite.cases) * repeats
            progress.start(total, done=total - len(jobs))
        finished = 0
        open_readers = list(readers)
        while open_readers:
            for ready in wait(open_readers):
                assert isinstance(ready, Connection)
                try:
                    data = ready.recv_bytes()
                except EOFError:
                    open_readers.remove(ready)
                    continue
                if data == _DONE:
                    finished += 1
                    continue
                result = CaseResult.model_validate(json.loads(data))  # (lone surrogates: see read_results)
                on_result(result)
                if progress is not None:
                    progress.advance(result)
        for proc in processes:
            proc.join()
        if finished < len(processes):
            codes = sorted({proc.exitcode for proc in processes if proc.exitcode})
            raise WorkerFailure(
                f"{len(processes) - finished} of {len(processes)} worker(s) died before finishing "
                f"(exit codes {codes or 'unknown'})"
            )
    finally:
        _stop(processes)
        for reader in readers:
            reader.close()
        if progress is not None:
            progress.finish()
