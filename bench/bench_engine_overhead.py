"""Engine overhead: CPU per Stop decision, against the bare OpenAI SDK call, zero-latency provider.

Every row makes its decisions one after another against the local model server
(judge.testing.llm_server, in another process, answering at once), and reports the CPU
time of THIS process per decision (time.process_time), the CPU of command-hook children
(RUSAGE_CHILDREN) separately, and wall time. The baseline, measured in the same run, is
the bare SDK call `AsyncOpenAI().chat.completions.create` with the same messages against
the same server, on one reused client. Target: the prompt hook's CPU per decision is at
most 1.5x the baseline's.

    .venv/bin/python bench/bench_engine_overhead.py [--n 300] [--profile prompt]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ModelServer, children_cpu, machine, table

from judge.config import config_from_data
from judge.hooks.engine import Engine
from judge.hooks.gate import Gate
from judge.llm.providers.base import VERDICT_SCHEMA
from judge.logs.audit import AuditLog
from judge.state import Store

PROMPT = "Is the agent's answer complete and correct? $ARGUMENTS"
PROMPT_HOOK = {"type": "prompt", "prompt": PROMPT}
COMMAND_HOOK = {"type": "command", "command": "cat > /dev/null"}
CONTEXT: dict[str, Any] = {
    "hook_event_name": "Stop",
    "agent_name": "bench-agent",
    "final_output": "The report is written to out/report.md and all 42 tests pass. " * 4,
}
TARGET = 1.5

Call = Callable[[], Awaitable[object]]


async def measure(call: Call, n: int, warmup: int) -> tuple[float, float, float]:
    """(CPU ms of this process, child CPU ms, wall ms) per call, after ``warmup`` calls."""
    for _ in range(warmup):
        await call()
    cpu, child, wall = time.process_time(), children_cpu(), time.perf_counter()
    for _ in range(n):
        await call()
    cpu = time.process_time() - cpu
    child = children_cpu() - child
    wall = time.perf_counter() - wall
    return cpu / n * 1000, child / n * 1000, wall / n * 1000


def bare_sdk_calls(base_url: str) -> tuple[Call, Call]:
    """The baseline: one reused AsyncOpenAI client; and a new client per call (what a client costs)."""
    import openai

    messages = [{"role": "user", "content": PROMPT.replace("$ARGUMENTS", str(CONTEXT))}]
    kwargs: dict[str, Any] = {
        "model": "bench-model",
        "messages": messages,
        "max_completion_tokens": 4096,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "schema": VERDICT_SCHEMA, "strict": True},
        },
    }
    client = openai.AsyncOpenAI(api_key="bench-key", base_url=base_url, max_retries=0)

    async def reused() -> object:
        return await client.chat.completions.create(**kwargs)

    async def fresh() -> object:
        one = openai.AsyncOpenAI(api_key="bench-key", base_url=base_url, max_retries=0)
        try:
            return await one.chat.completions.create(**kwargs)
        finally:
            await one.close()

    return reused, fresh


def engine_call(hooks: list[dict[str, Any]]) -> Call:
    engine = Engine(config_from_data({"hooks": {"Stop": hooks}}))

    async def call() -> object:
        decision = await engine.evaluate("Stop", dict(CONTEXT))
        if decision.decision != "allow" or any(h.error for h in decision.hooks):
            raise RuntimeError(f"unexpected decision: {decision.to_json()}")
        return decision

    return call


def gate_call(hooks: list[dict[str, Any]], folder: Path) -> Call:
    engine = Engine(config_from_data({"hooks": {"Stop": hooks}}))
    gate = Gate(engine, Store(folder / "state.sqlite"), AuditLog(folder))
    counter = iter(range(10**9))

    async def call() -> object:
        return await gate.decide("Stop", dict(CONTEXT), session_id=f"s{next(counter) % 50}")

    return call


async def run(n: int, warmup: int, base_url: str, folder: Path) -> list[tuple[str, float, float, float]]:
    reused, fresh = bare_sdk_calls(base_url)
    cases: list[tuple[str, Call]] = [
        ("bare SDK, reused client (baseline)", reused),
        ("bare SDK, new client per call", fresh),
        ("engine: prompt hook", engine_call([PROMPT_HOOK])),
        ("engine: command hook", engine_call([COMMAND_HOOK])),
        ("engine: prompt + command hooks", engine_call([PROMPT_HOOK, COMMAND_HOOK])),
        ("gate (state + audit): prompt hook", gate_call([PROMPT_HOOK], folder)),
    ]
    rows = []
    for name, call in cases:
        cpu, child, wall = await measure(call, n, warmup)
        rows.append((name, cpu, child, wall))
    return rows


def profile(n: int, base_url: str, what: str) -> None:
    """Print a pyinstrument profile of the prompt-hook engine row (needs pyinstrument)."""
    try:
        from pyinstrument import Profiler
    except ImportError:
        print("--profile needs pyinstrument: .venv/bin/pip install pyinstrument")
        return
    call = engine_call([PROMPT_HOOK] if what == "prompt" else [PROMPT_HOOK, COMMAND_HOOK])

    async def loop() -> None:
        await measure(call, 5, 5)
        profiler = Profiler(interval=0.0005, async_mode="disabled")
        profiler.start()
        for _ in range(n):
            await call()
        profiler.stop()
        print(profiler.output_text(unicode=False, color=False, show_all=False))

    asyncio.run(loop())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="decisions per row (default 300)")
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured calls first (default 20)")
    parser.add_argument("--profile", choices=["prompt", "both"], help="profile instead of the table")
    opts = parser.parse_args(argv)
    if opts.n < 1 or opts.warmup < 1:
        parser.error("--n and --warmup must be at least 1")
    with ModelServer(latency=0.0) as server, tempfile.TemporaryDirectory() as tmp:
        os.environ.update(server.env())
        if opts.profile:
            profile(opts.n, server.base_url, opts.profile)
            return 0
        rows = asyncio.run(run(opts.n, opts.warmup, server.base_url, Path(tmp)))
    base = rows[0][1]
    print(f"Stop decisions, one at a time, zero-latency local provider; {opts.n} per row; {machine()}")
    print(
        table(
            ["", "CPU ms/decision", "vs baseline", "beyond SDK ms", "child CPU ms", "wall ms"],
            [(name, cpu, f"{cpu / base:.2f}x", cpu - base, child, wall) for name, cpu, child, wall in rows],
        )
    )
    prompt = rows[2][1] / base
    verdict = "met" if prompt <= TARGET else "MISSED"
    print(f"target: prompt hook <= {TARGET:.1f}x the bare SDK's CPU per call: {prompt:.2f}x ({verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
