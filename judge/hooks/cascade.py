"""Model cascades: a prompt hook whose ``model`` is a list judges stage by stage.

``model: [Fast, Reasoning]`` asks the first (cheap) model; an approval ends the
judgement there. Anything else - a rejection (with or without a reason), a hook error,
a timeout, an answer that is not a verdict - goes to the next stage, whose verdict
confirms or overrides it. The last stage's verdict is the hook's; when the last stage
fails too, the hook fails (:class:`~judge.errors.CascadeError`) and its failMode
applies.

With ``samples: k`` each stage judges k times and votes (:mod:`judge.hooks.samples`); a
stage that is not the last whose samples agree less than the hook's ``escalateBelow``
(default 1.0: any disagreement) goes to the next stage even when it approves — an unsure
cheap model hands the case to the stronger one.

Time: the hook's ``timeout`` covers the whole cascade. A stage that is not the last may
use at most half of the time still left, so a stalled cheap model always leaves the
stronger one time to answer.

Each stage is judged by the wrapped :class:`~judge.hooks.judging.PromptJudge` as a hook with
that single model, so caches, fake models and providers work per stage unchanged. The
verdict carries every stage called (:class:`~judge.decision.CascadeStage`); the engine
prices them (:func:`judge.pricing.stages_cost`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time

from judge.decision import CascadeStage, Usage
from judge.errors import CascadeError, HookError
from judge.hooks.judging import PromptJudge, PromptRequest, PromptVerdict
from judge.hooks.samples import judge_samples


def _agreed(previous: CascadeStage, stage: CascadeStage) -> bool | None:
    if "error" in (previous.verdict, stage.verdict):
        return None
    return previous.verdict == stage.verdict


async def _judge_stage(
    judge: PromptJudge, request: PromptRequest, model: str, limit: float
) -> tuple[PromptVerdict | None, CascadeStage]:
    """One stage within ``limit`` seconds: its verdict (None on failure) and its record."""
    seconds = max(1, math.ceil(limit))
    hook = request.hook.model_copy(update={"model": model, "timeout": seconds})
    start = time.perf_counter()
    verdict: PromptVerdict | None = None
    error: str | None = None
    label = model
    usage = Usage()
    loop = asyncio.get_running_loop()
    staged = dataclasses.replace(request, hook=hook, deadline=loop.time() + max(limit, 0.001))
    try:
        if hook.samples > 1:  # the samples keep the stage's deadline themselves
            verdict = await judge_samples(judge, staged)
        else:
            async with asyncio.timeout_at(staged.deadline_in(loop)):
                verdict = await judge.evaluate(staged)
    except TimeoutError:
        error = f"timed out after {limit:.1f}s (its share of the hook's timeout)"
    except HookError as exc:
        error = str(exc) or type(exc).__name__
        label = exc.model or model
        spent = getattr(exc, "usage", None)  # the tokens a failed judgement still used
        usage = spent if isinstance(spent, Usage) else usage
    except Exception as exc:  # a stage's failure is escalated like any hook error
        error = f"{type(exc).__name__}: {exc}"
    duration = round((time.perf_counter() - start) * 1000.0, 3)
    if verdict is None:
        stage = CascadeStage(model=label, verdict="error", error=error, durationMs=duration, usage=usage)
    else:
        stage = CascadeStage(
            model=verdict.model or model,
            verdict="allow" if verdict.ok else "block",
            reason=verdict.reason,
            durationMs=duration,
            usage=verdict.usage,
            samples=verdict.samples,
            agreement=verdict.agreement,
        )
    return verdict, stage


def _settled(request: PromptRequest, verdict: PromptVerdict) -> bool:
    """Whether a stage's verdict ends the cascade before its last stage: an approval its
    samples (if any) agree on at least as much as ``escalateBelow``."""
    agreement = verdict.agreement
    return verdict.ok and (agreement is None or agreement >= request.hook.samples_escalate_below)


async def judge_cascade(judge: PromptJudge, request: PromptRequest) -> PromptVerdict:
    """Judge ``request`` (whose hook lists 2+ models) stage by stage (module docstring)."""
    models = request.hook.models
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.hook.timeout
    stages: list[CascadeStage] = []
    for index, model in enumerate(models):
        last = index == len(models) - 1
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        verdict, stage = await _judge_stage(judge, request, model, remaining if last else remaining / 2)
        if stages:
            stage.agreed = _agreed(stages[-1], stage)
        stages.append(stage)
        if verdict is not None and (last or _settled(request, verdict)):
            total = sum((s.usage for s in stages), Usage())
            return verdict.model_copy(update={"usage": total, "stages": stages})
    failed = stages[-1] if stages else None
    if failed is None or len(stages) < len(models):
        message = f"timed out after {request.hook.timeout}s before the cascade's last stage answered"
    else:
        message = f"every stage of the cascade failed; the last ({failed.model}): {failed.error}"
    raise CascadeError(message, stages, model=failed.model if failed else None)
