"""Eval throughput: 1,000 judgements, a provider answering after 200 ms, concurrency 100.

The ideal is 1,000 x 0.2 s / 100 = 2 s; the target is under 2x that. The judgements go
the real way: `judge eval` (suite loading, runner, results.jsonl, reports) -> engine ->
LLMJudge -> OpenAI SDK -> the local model server (judge.testing.llm_server) on loopback.
The server runs in its own process, as a real provider would. A baseline measured in
the same run (bare asyncio.sleep(0.2) tasks under the same concurrency limit) shows what
the machine itself allows.

    .venv/bin/python bench/bench_eval_throughput.py [--n 1000] [--latency 0.2] [--concurrency 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from judge.cli import build_parser
from judge.cli.eval import eval_main
from judge.config import config_from_data
from judge.evaluation.runner import ResultsWriter, run_cases
from judge.evaluation.suite import Case
from judge.hooks.judging import PromptRequest, PromptVerdict

SERVER = """
import sys, time
from judge.testing import LLMServer
with LLMServer(latency=float(sys.argv[1]), record=False) as server:
    print(server.port, flush=True)
    sys.stdin.read()
"""


async def baseline(n: int, latency: float, concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            await asyncio.sleep(latency)

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    return time.perf_counter() - start


class SleepyJudge:
    def __init__(self, latency: float) -> None:
        self.latency = latency

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        await asyncio.sleep(self.latency)
        return PromptVerdict(ok=True)


def runner_only(n: int, latency: float, concurrency: int, folder: Path) -> float:
    config = config_from_data({"hooks": {"Stop": [{"type": "prompt", "prompt": "Complete? $ARGUMENTS"}]}})
    cases = [Case(id=f"c{i}", context={"final_output": f"answer {i}"}) for i in range(n)]
    writer = ResultsWriter(folder / "runner-only.jsonl", truncate=True)
    start = time.perf_counter()
    asyncio.run(
        run_cases(
            config,
            "Stop",
            cases,
            base_dir=folder,
            concurrency=concurrency,
            judge=SleepyJudge(latency),
            on_result=writer.write,
        )
    )
    writer.close()
    return time.perf_counter() - start


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def write_suite(folder: Path, n: int) -> Path:
    config = {"hooks": {"Stop": [{"type": "prompt", "prompt": "Is the answer complete? $ARGUMENTS"}]}}
    (folder / "agent.yaml").write_text(json.dumps(config), encoding="utf-8")
    with (folder / "cases.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n):
            case = {"id": f"c{i:05d}", "context": {"final_output": f"answer {i}"}, "label": "allow"}
            fh.write(json.dumps(case) + "\n")
    suite = folder / "suite.yaml"
    suite.write_text(
        "name: throughput\nconfig: agent.yaml\nevent: Stop\ncases: cases.jsonl\n", encoding="utf-8"
    )
    return suite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=100)
    opts = parser.parse_args()
    ideal = opts.n * opts.latency / opts.concurrency

    base = asyncio.run(baseline(opts.n, opts.latency, opts.concurrency))
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(opts.latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None and server.stdin is not None
    port = int(server.stdout.readline())
    os.environ.update(
        {
            "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
            "OPENAI_API_KEY": "bench-key",
            "JUDGE_MODEL_REASONINGFAST": "openai:bench-model",
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        runner = runner_only(opts.n, opts.latency, opts.concurrency, Path(tmp))
        suite = write_suite(Path(tmp), opts.n)
        argv = ["eval", str(suite), "--out", str(Path(tmp) / "out"), "--no-cache", "--quiet"]
        argv += ["--concurrency", str(opts.concurrency)]
        args = build_parser().parse_args(argv)
        start, cpu_start = time.perf_counter(), cpu_seconds()
        code = eval_main(args)
        wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu_start
        report = json.loads((Path(tmp) / "out" / "report.json").read_text(encoding="utf-8"))
    server.stdin.close()
    server.wait(timeout=30)

    print(
        f"judgements {opts.n}, provider latency {opts.latency * 1000:.0f} ms, concurrency {opts.concurrency}"
    )
    print(f"ideal                    {ideal:7.3f} s")
    print(f"baseline (asyncio.sleep) {base:7.3f} s  ratio to ideal {base / ideal:5.2f}x")
    print(f"runner, scripted judge   {runner:7.3f} s  ratio to ideal {runner / ideal:5.2f}x")
    print(f"judge eval (OpenAI SDK)  {wall:7.3f} s  ratio to ideal {wall / ideal:5.2f}x  (target < 2.00x)")
    print(f"                                   ratio to baseline {wall / base:5.2f}x")
    print(
        f"client CPU {cpu:.2f} s ({cpu / opts.n * 1000:.2f} ms per judgement), "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(f"exit code {code}, errors {report['errors']}, latency p50 {report['latencyMs']['p50']:.1f} ms")


if __name__ == "__main__":
    main()
