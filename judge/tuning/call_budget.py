"""The tuner's hard limit on LLM calls: every judgement and every optimizer request takes
one call from a :class:`CallBudget`, which refuses any call beyond ``--max-calls``."""

from __future__ import annotations

from typing import Protocol

from judge.errors import JudgeError


class BudgetExhausted(JudgeError):
    """An LLM call was refused because the ``--max-calls`` budget is spent."""


class BudgetError(JudgeError):
    """The budget cannot even cover the baseline measurement."""


class CallBudget:
    """Counts LLM calls; ``limit=None`` means unlimited."""

    def __init__(self, limit: int | None = None) -> None:
        if limit is not None and limit < 0:
            raise ValueError("the call budget must not be negative")
        self.limit = limit
        self.used = 0
        self.refused = 0

    def remaining(self) -> int | None:
        return None if self.limit is None else self.limit - self.used

    def can_afford(self, calls: int) -> bool:
        left = self.remaining()
        return left is None or calls <= left

    def take(self) -> None:
        """Account for one call; raise :class:`BudgetExhausted` when none is left."""
        if self.limit is not None and self.used >= self.limit:
            self.refused += 1
            raise BudgetExhausted(f"LLM call budget of {self.limit} calls is spent")
        self.used += 1


class OptimizerLLM(Protocol):
    """The optimizer's own model: one text request, one text answer (one LLM call)."""

    async def propose(self, prompt: str) -> str: ...


class BudgetedLLM:
    """Wraps an :class:`OptimizerLLM` so each request takes one call from ``budget``."""

    def __init__(self, inner: OptimizerLLM, budget: CallBudget) -> None:
        self.inner = inner
        self.budget = budget

    async def propose(self, prompt: str) -> str:
        self.budget.take()
        return await self.inner.propose(prompt)
