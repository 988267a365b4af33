"""The seam between the hook engine and a prompt judge.

The engine hands a :class:`PromptRequest` (the hook, the context, the transcript) to a
:class:`PromptJudge` and gets a :class:`PromptVerdict` back, or a
:class:`~judge.errors.HookError`. :class:`judge.llm.judge.LLMJudge` is the judge that asks a
model; the eval cache, batch runs and tests wrap or replace it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

from judge.decision import CascadeStage, Citation, SampleVerdict, Usage

if TYPE_CHECKING:
    from judge.config import Hook


@dataclass(frozen=True)
class PromptRequest:
    """Everything a prompt judge needs for one judgement."""

    hook: Hook
    context: dict[str, Any]
    transcript_path: Path | None = None
    models: dict[str, str] = field(default_factory=dict)
    base_dir: Path | None = None
    repeat: int = 0
    #: Which of the hook's samples this judgement is (``samples: k``; 0 for the first).
    sample: int = 0
    #: When the judgement must be done, in the running event loop's time (``loop.time()``):
    #: the hook's deadline, set by the engine (:mod:`judge.hooks.engine` owns the timeout);
    #: ``None``: ``hook.timeout`` seconds from when the judge starts.
    deadline: float | None = None

    def deadline_in(self, loop: asyncio.AbstractEventLoop) -> float:
        """The deadline in ``loop``'s time (``hook.timeout`` from now when none was set)."""
        return self.deadline if self.deadline is not None else loop.time() + self.hook.timeout


class PromptVerdict(BaseModel):
    """A prompt judge's answer in the simple format, with what it cost."""

    ok: bool
    reason: str | None = None
    #: A rejection the judge gave as work that cannot be finished without the user
    #: (``{"ok": false, "impossible": true, "reason": ...}``).
    impossible: bool = False
    model: str | None = None
    usage: Usage = Field(default_factory=Usage)
    #: The verified citations of a rejection (hooks with ``evidence: required``).
    citations: list[Citation] | None = None
    #: A cascade's stages, in the order they were called (None: one model).
    stages: list[CascadeStage] | None = None
    #: ``samples`` > 1: each sample's verdict, and the share that gave this verdict.
    samples: list[SampleVerdict] | None = None
    agreement: float | None = None


class PromptJudge(Protocol):
    """Evaluates one prompt hook. Raise :class:`HookError` when no verdict can be had."""

    async def evaluate(self, request: PromptRequest) -> PromptVerdict: ...
