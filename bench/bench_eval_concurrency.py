"""Eval throughput vs the ideal at several concurrencies (1,000 judgements, 200 ms provider latency).

For each concurrency C the ideal wall time is N x latency / C. `judge eval` runs as a
child process (the real CLI: suite loading, runner, OpenAI SDK, results.jsonl and
reports) against the local model server (another process) answering after `latency`;
its wall time includes interpreter start-up and imports. The baseline, measured in the
same run, is bare `asyncio.sleep(latency)` tasks under the same semaphore. The suite
and the baseline come from bench/bench_eval_throughput.py (the single-concurrency
version of this bench). Target: wall / ideal <= 1.5 at concurrency 100.

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

from _common import PYTHON, ModelServer, machine, table, timed_child
from bench_eval_throughput import baseline, write_suite

TARGET = 1.5


def run_eval(suite: Path, out: Path, concurrency: int, env: dict[str, str]) -> tuple[float, float, dict]:
    """`judge eval` in a child process: (wall s, CPU s, report.json)."""
    argv = [PYTHON, "-m", "judge", "eval", str(suite), "--out", str(out), "--no-cache", "--quiet"]
    argv += ["--concurrency", str(concurrency)]
    wall, cpu, _, _ = timed_child(argv, env=env)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return wall, cpu, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="judgements (default 1000)")
    parser.add_argument("--latency", type=float, default=0.2, help="provider latency in s (default 0.2)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[10, 100, 500])
    opts = parser.parse_args(argv)
    if opts.n < 1 or opts.latency <= 0 or min(opts.concurrency) < 1:
        parser.error("--n, --latency and --concurrency must be positive")
    rows = []
    with ModelServer(latency=opts.latency) as server, tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, **server.env()}
        suite = write_suite(Path(tmp), opts.n)
        for concurrency in opts.concurrency:
            ideal = opts.n * opts.latency / concurrency
            base = asyncio.run(baseline(opts.n, opts.latency, concurrency))
            out = Path(tmp) / f"out-{concurrency}"
            wall, cpu, report = run_eval(suite, out, concurrency, env)
            if report["n"] != opts.n or report["errors"]:
                raise RuntimeError(f"concurrency {concurrency}: {report['errors']} errors of {report['n']}")
            rows.append(
                (
                    str(concurrency),
                    ideal,
                    base,
                    base / ideal,
                    wall,
                    wall / ideal,
                    wall / base,
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
                "concurrency",
                "ideal s",
                "baseline s",
                "baseline/ideal",
                "judge eval s",
                "wall/ideal",
                "vs baseline",
                "CPU ms/judgement",
            ],
            rows,
        )
    )
    at_100 = [row for row in rows if row[0] == "100"]
    if at_100:
        ratio = float(at_100[0][5])
        verdict = "met" if ratio <= TARGET else "MISSED"
        print(f"target: wall/ideal <= {TARGET:.1f} at concurrency 100: {ratio:.2f} ({verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
