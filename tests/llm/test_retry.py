from __future__ import annotations

import asyncio
import time

import pytest

from judge.errors import HookError
from judge.llm.providers.base import TransientError, parse_retry_after
from judge.llm.retry import call_with_retries


async def test_retries_then_succeeds_honouring_retry_after():
    attempts = []

    async def attempt(remaining):
        attempts.append(time.monotonic())
        if len(attempts) < 3:
            raise TransientError("429", retry_after=0.1)
        return "ok"

    loop = asyncio.get_running_loop()
    assert await call_with_retries(attempt, loop.time() + 5) == "ok"
    assert attempts[2] - attempts[1] >= 0.09


async def test_gives_up_before_sleeping_past_the_deadline():
    async def attempt(remaining):
        raise TransientError("rate limited", retry_after=30)

    started = time.monotonic()
    with pytest.raises(HookError, match="retry after 30 s"):
        await call_with_retries(attempt, asyncio.get_running_loop().time() + 2)
    assert time.monotonic() - started < 0.5


async def test_attempts_get_a_share_of_the_remaining_time_and_permanent_errors_are_not_retried():
    seen = []

    async def attempt(remaining):
        seen.append(remaining)
        raise HookError("unknown model")

    with pytest.raises(HookError, match="unknown model"):
        await call_with_retries(attempt, asyncio.get_running_loop().time() + 3)
    assert len(seen) == 1 and 1.9 < seen[0] <= 2  # 2/3 of 3 s: time is kept for a retry


def test_parse_retry_after():
    assert parse_retry_after({"retry-after": "2"}) == 2
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0
    assert parse_retry_after({}) is None
