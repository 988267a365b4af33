"""What the command-hook sandbox costs per hook, against a bare subprocess.

    .venv/bin/python bench/bench_command_hooks.py            # ~10 s; --n N

One command hook (``true``, the context on stdin, output captured) run ``--n`` times in a
row, median wall time and mean CPU of the child processes (user + system, from
``RUSAGE_CHILDREN``) per hook, for: the baseline, a bare ``bash -c true`` with the same
pipes (what a command hook cost before the per-hook supervisor), and
:func:`judge.hooks.command.run_command_hook` with and without a PID namespace.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import compile_judge, machine, table

from judge.config import Hook
from judge.hooks.command import run_command_hook

HOOK = Hook.model_validate({"type": "command", "command": "true"})


async def bare() -> None:
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        "true",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    await proc.communicate(b"{}")


async def sandboxed(namespaces: bool) -> None:
    await run_command_hook(HOOK, "{}", namespaces=namespaces)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def measure(run: Callable[[], Awaitable[None]], n: int) -> tuple[float, float]:
    """(median wall ms, mean children CPU ms) per hook, after one warm-up run."""
    await run()
    walls = []
    cpu_before = children_cpu()
    for _ in range(n):
        start = time.perf_counter()
        await run()
        walls.append((time.perf_counter() - start) * 1000)
    return statistics.median(walls), (children_cpu() - cpu_before) * 1000 / n


async def run_all(n: int) -> list[tuple[str, float, float]]:
    rows = [("bare bash -c true (baseline)", *await measure(bare, n))]
    rows.append(("sandboxed, PID namespace", *await measure(lambda: sandboxed(True), n)))
    rows.append(("sandboxed, no namespace", *await measure(lambda: sandboxed(False), n)))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=50, help="hooks per row (default 50)")
    args = parser.parse_args(argv)
    compile_judge()
    rows = asyncio.run(run_all(args.n))
    wall0, cpu0 = rows[0][1], rows[0][2]
    print(f"command hook cost, median wall / mean child CPU per hook, n={args.n}; {machine()}")
    print(
        table(
            ["hook", "wall ms", "vs baseline", "CPU ms", "vs baseline"],
            [(name, wall, wall / wall0, cpu, cpu / cpu0 if cpu0 else 0.0) for name, wall, cpu in rows],
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
