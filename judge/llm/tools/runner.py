"""Each judgement's tool work on its own few threads, stopped with the judgement.

Tool calls (and rendering the transcript) run in threads so the event loop stays
responsive. A judgement gets its own small pool instead of the loop's shared one, so a
request whose model asks for many slow reads waits for its own threads and never
starves other requests; when the judgement ends (verdict, error, timeout or
cancellation) its :class:`~judge.llm.tools.deadline.ToolDeadline` is cancelled, and every tool
still running stops at its next check, within a fraction of a second.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from judge.llm.tools.deadline import ToolDeadline

#: Threads per judgement for its tool calls (a model may request several at once).
TOOL_THREADS = 2


@contextmanager
def tool_threads(deadline: float) -> Iterator[tuple[ToolDeadline, ThreadPoolExecutor]]:
    """(budget, executor) for one judgement ending at event-loop time ``deadline``."""
    left = deadline - asyncio.get_running_loop().time()
    budget = ToolDeadline(deadline=time.monotonic() + left)
    executor = ThreadPoolExecutor(max_workers=TOOL_THREADS, thread_name_prefix="judge-tools")
    try:
        yield budget, executor
    finally:
        budget.cancel()
        executor.shutdown(wait=False, cancel_futures=True)
