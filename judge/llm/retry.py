"""Retries for provider calls: the ONE place that owns them.

Transient failures (:class:`~judge.llm.providers.base.TransientError`: 429, 5xx, timeouts,
connection errors) are retried with jittered exponential backoff; a server's
``retry-after`` is honoured. A server that cannot be reached at all
(:class:`~judge.llm.providers.base.ConnectionFailure`: connection refused, unknown host)
gets :data:`CONNECT_ATTEMPTS` attempts a fraction of a second apart, not the whole hook
timeout. Everything happens before ``deadline`` (an event-loop time): no sleep runs past
it. An attempt may use :data:`ATTEMPT_SHARE` of the time that remains (all of it when
that share is too short to be worth a retry), so a request that hangs is abandoned and
retried in time. When retrying is hopeless or exhausted the last failure becomes a
:class:`~judge.errors.HookError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)
from tenacity.stop import stop_base

from judge.errors import HookError
from judge.llm.providers.base import ConnectionFailure, TransientError

T = TypeVar("T")

MAX_ATTEMPTS = 6
BACKOFF_MULTIPLIER = 0.5
BACKOFF_MAX = 8.0
#: The least time worth starting another attempt with.
MIN_ATTEMPT_SECONDS = 0.05
#: Attempts for a server that cannot be reached, and the first pause between them.
CONNECT_ATTEMPTS = 3
CONNECT_BACKOFF = 0.25
#: The share of the remaining time one attempt may use, and the least time worth
#: keeping for the retry after it (below that, an attempt gets all the time left).
ATTEMPT_SHARE = 2 / 3
MIN_RETRY_SECONDS = 0.5

_jitter = wait_random_exponential(multiplier=BACKOFF_MULTIPLIER, max=BACKOFF_MAX)


def _remaining(deadline: float) -> float:
    return deadline - asyncio.get_running_loop().time()


def _wait(state: RetryCallState) -> float:
    error = state.outcome.exception() if state.outcome else None
    if isinstance(error, ConnectionFailure):
        return float(CONNECT_BACKOFF * 2 ** (state.attempt_number - 1))
    hint = error.retry_after if isinstance(error, TransientError) else None
    delay = hint if hint is not None else _jitter(state)
    return max(0.0, delay)


class _StopWhenUnreachable(stop_base):
    """Give up on a server that refused (or could not be found) :data:`CONNECT_ATTEMPTS` times."""

    def __call__(self, state: RetryCallState) -> bool:
        error = state.outcome.exception() if state.outcome else None
        return isinstance(error, ConnectionFailure) and state.attempt_number >= CONNECT_ATTEMPTS


def attempt_timeout(remaining: float) -> float:
    """How long one attempt may take when ``remaining`` seconds are left (see module doc)."""
    if remaining * (1 - ATTEMPT_SHARE) < MIN_RETRY_SECONDS:
        return remaining
    return remaining * ATTEMPT_SHARE


class _StopAtDeadline(stop_base):
    """Give up when the next sleep plus a minimal attempt would pass the deadline."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def __call__(self, state: RetryCallState) -> bool:
        return _remaining(self.deadline) - state.upcoming_sleep < MIN_ATTEMPT_SECONDS


_RETRY = retry_if_exception_type(TransientError)


async def call_with_retries(
    attempt: Callable[[float], Awaitable[T]],
    deadline: float,
    *,
    max_attempts: int = MAX_ATTEMPTS,
) -> T:
    """Run ``attempt(timeout_seconds)`` until it succeeds, retrying transient errors.

    ``deadline`` is in :func:`asyncio.get_running_loop().time` seconds.
    """
    retrying = AsyncRetrying(
        retry=_RETRY,
        wait=_wait,
        stop=stop_after_attempt(max_attempts) | _StopWhenUnreachable() | _StopAtDeadline(deadline),
        reraise=True,
    )
    attempts = 0
    try:
        async for state in retrying:
            with state:
                attempts += 1
                remaining = _remaining(deadline)
                if remaining <= 0:
                    raise HookError("the hook timeout was reached before the model answered")
                return await attempt(attempt_timeout(remaining))
    except TransientError as exc:
        hint = f" (server asked to retry after {exc.retry_after:g} s)" if exc.retry_after else ""
        raise HookError(
            f"provider failed after {attempts} attempt{'s' if attempts != 1 else ''}: {exc}{hint}"
        ) from None
    raise AssertionError("unreachable")  # pragma: no cover
