"""Eval throughput vs the ideal at several concurrencies (1,000 judgements, 200 ms provider latency).

For each concurrency C the ideal wall time is N x latency / C. `judge eval` runs as a
child process (the real CLI: suite loading, runner, OpenAI SDK, results.jsonl and
reports) against the local model server (another process) answering after `latency`;
its wall time includes interpreter start-up and imports. The baseline, measured in the
same run, is bare `asyncio.sleep(latency)` tasks under the same semaphore. The suite
and the baseline come from bench/bench_eval_throughput.py (the single-concurrency
version of this bench). Target: wall / ideal <= 1.5 at concurrency 100. "judging s" is
the time the run itself reports in DIR/run.json (from the first judgement to the last,
after interpreter start-up and imports); issue 5 asks for < 2x the ideal there.

Two more references, also measured in the same run, bound what one process can do:
"SDK only" makes the same N calls with the bare SDK (`AsyncOpenAI().chat.completions
.create` on one reused client, same semaphore) in this process, after its imports; and
"start-up" is a child that only imports what `judge eval` imports (interpreter, judge,
the OpenAI SDK).

    .venv/bin/python bench/bench_eval_concurrency.py [--n 1000] [--latency 0.2] [--concurrency 10 100 500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import PYTHON, ModelServer, compile_judge, machine, table, timed_child
from bench_eval_throughput import baseline, write_suite

TARGET = 1.5
IMPORTS = "import judge.cli, judge.cli.eval, judge.hooks.engine, judge.llm, openai"


async def sdk_only(n: int, concurrency: int, base_url: str) -> tuple[float, float]:
    """N bare SDK calls under the same semaphore, one reused client: (wall s, CPU s)."""
    import time

    import openai

    from judge.llm.providers.base import VERDICT_SCHEMA

    client = openai.AsyncOpenAI(api_key="bench-key", base_url=base_url, max_retries=0)
    gate = asyncio.Semaphore(concurrency)
    kwargs = {
        "model": "bench-model",
        "messages": [{"role": "user", "content": "Is the answer complete? answer 1"}],
        "max_completion_tokens": 4096,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "schema": VERDICT_SCHEMA, "strict": True},
        },
    }

    async def one() -> None:
        async with gate:
            await client.chat.completions.create(**kwargs)  # type: ignore[call-overload]

    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one() for _ in range(n)))
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    await client.close()
    return wall, cpu


def run_eval(
    suite: Path, out: Path, concurrency: int, env: dict[str, str], workers: int = 1
) -> tuple[float, float, dict, float]:
    """`judge eval` in a child process: (wall s, CPU s, report.json, judging s from run.json)."""
    argv = [PYTHON, "-m", "judge", "eval", str(suite), "--out", str(out), "--no-cache", "--quiet"]
    argv += ["--concurrency", str(concurrency), "--workers", str(workers)]
    wall, cpu, _, _ = timed_child(argv, env=env)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    return wall, cpu, report, float(run["judgingSeconds"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="judgements (default 1000)")
    parser.add_argument("--latency", type=float, default=0.2, help="provider latency in s (default 0.2)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[10, 100, 500])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker processes (rows)")
    opts = parser.parse_args(argv)
    compile_judge()
    if opts.n < 1 or opts.latency <= 0 or min(opts.concurrency) < 1 or min(opts.workers) < 1:
        parser.error("--n, --latency, --concurrency and --workers must be positive")
    rows = []
    floors = []
    with ModelServer(latency=opts.latency) as server, tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, **server.env()}
        suite = write_suite(Path(tmp), opts.n)
        startup, startup_cpu, _, _ = timed_child([PYTHON, "-c", IMPORTS], env=env)
        for concurrency in opts.concurrency:
            ideal = opts.n * opts.latency / concurrency
            base = asyncio.run(baseline(opts.n, opts.latency, concurrency))
            sdk_wall, sdk_cpu = asyncio.run(sdk_only(opts.n, concurrency, server.base_url))
            floors.append((concurrency, sdk_cpu))
            for workers in opts.workers:
                out = Path(tmp) / f"out-{concurrency}-{workers}"
                wall, cpu, report, judging = run_eval(suite, out, concurrency, env, workers)
                if report["n"] != opts.n or report["errors"]:
                    raise RuntimeError(
                        f"concurrency {concurrency}: {report['errors']} errors of {report['n']}"
                    )
                rows.append(
                    (
                        f"{concurrency} x{workers}w",
                        ideal,
                        base,
                        base / ideal,
                        sdk_wall,
                        sdk_cpu / opts.n * 1000,
                        wall,
                        wall / ideal,
                        wall / base,
                        judging,
                        judging / ideal,
                        cpu / opts.n * 1000,
                    )
                )
    print(
        f"judge eval: {opts.n} judgements, provider latency {opts.latency * 1000:.0f} ms, "
        f"OpenAI SDK -> local model server; {machine()}"
    )
    print(
        table(
            [
                "concurrency x workers",
                "ideal s",
                "baseline s",
                "baseline/ideal",
                "SDK only s",
                "SDK CPU ms/call",
                "judge eval s",
                "wall/ideal",
                "vs baseline",
                "judging s",
                "judging/ideal",
                "CPU ms/judgement",
            ],
            rows,
        )
    )
    print(f"start-up (imports only, child process): {startup:.2f} s wall, {startup_cpu:.2f} s CPU")
    cpus = os.cpu_count() or 1
    for concurrency, sdk_cpu in floors:
        ideal = opts.n * opts.latency / concurrency
        for workers in sorted(set(opts.workers)):
            spread = min(workers, cpus)
            floor = startup + max(ideal, sdk_cpu / spread)
            who = "one process" if workers == 1 else f"{workers} workers on {spread} CPUs"
            print(
                f"{who} at the bare SDK's CPU per call, concurrency {concurrency}: "
                f"start-up {startup:.2f} s + "
                f"max(ideal {ideal:.2f} s, SDK-only CPU {sdk_cpu:.2f} s / {spread}) = {floor:.2f} s, "
                f"wall/ideal >= {floor / ideal:.2f}"
            )
    most = max(opts.workers)
    at_100 = [row for row in rows if row[0] == f"100 x{most}w"]
    if at_100:
        ratio = float(at_100[0][7])
        verdict = "met" if ratio <= TARGET else "MISSED"
        print(
            f"target: wall/ideal <= {TARGET:.1f} at concurrency 100, {most} workers: {ratio:.2f} ({verdict})"
        )
        judging_ratio = float(at_100[0][10])
        verdict = "met" if judging_ratio < 2.0 else "MISSED"
        print(
            f"the 1,000 judgements themselves (run.json judgingSeconds, after start-up) < 2x the ideal "
            f"at concurrency 100: {judging_ratio:.2f} ({verdict})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
