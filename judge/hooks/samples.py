"""Self-consistency: a prompt hook with ``samples: k`` judges k times and votes.

The k judgements are independent (each is its own model call, and its own entry of the
eval cache: :attr:`~judge.hooks.judging.PromptRequest.sample`) and run in parallel
within the hook's one deadline; a sample still running at the deadline counts as failed.
Samples that fail are left out of the vote; when none gave a verdict the hook fails with
the first sample's error (its failMode decides). The rule (``aggregate``):

* ``majority`` — the verdict most samples gave (an odd k; a tie left by failed samples
  is a hook error: nothing decided it);
* ``any`` — one block blocks (for checks where a single doubt should stop the agent);
* ``all`` — blocks only when every sample that answered blocks.

The verdict carries every sample (:class:`~judge.decision.SampleVerdict`) and its
``agreement``: the share of the samples with a verdict that gave the hook's verdict (1.0
when all agree; under ``majority`` never below 0.5). Its reason and citations are those
of the first sample that gave the verdict with a reason; its usage is every sample's.
In a cascade each stage takes its samples (:mod:`judge.hooks.cascade`), and a stage whose
samples agree less than ``escalateBelow`` goes on to the next model.
"""

from __future__ import annotations

import asyncio
import dataclasses

from judge.decision import SampleVerdict, Usage
from judge.errors import HookError
from judge.hooks.judging import PromptJudge, PromptRequest, PromptVerdict

_Answer = tuple[PromptVerdict | None, str | None, Usage]


async def _one(judge: PromptJudge, request: PromptRequest, deadline: float) -> tuple[_Answer, str | None]:
    """One sample by ``deadline``: its verdict, or None with why, and the tokens it used;
    and the model it was judged by when it failed."""
    try:
        async with asyncio.timeout_at(deadline):
            verdict = await judge.evaluate(request)
        return (verdict, None, verdict.usage), None
    except TimeoutError:
        return (None, f"timed out after {request.hook.timeout}s", Usage()), None
    except HookError as exc:
        spent = exc.usage if isinstance(exc.usage, Usage) else Usage()
        return (None, str(exc) or type(exc).__name__, spent), exc.model
    except Exception as exc:  # a sample's failure is a failed sample, not the hook's
        return (None, f"{type(exc).__name__}: {exc}", Usage()), None


def _record(answer: _Answer) -> SampleVerdict:
    verdict, error, _ = answer
    if verdict is None:
        return SampleVerdict(verdict="error", error=error)
    return SampleVerdict(verdict="allow" if verdict.ok else "block", reason=verdict.reason)


def decide(aggregate: str, verdicts: list[PromptVerdict]) -> bool:
    """Whether ``verdicts`` (at least one) allow under ``aggregate``; HookError on a tie
    under ``majority``."""
    allows = sum(1 for v in verdicts if v.ok)
    blocks = len(verdicts) - allows
    if aggregate == "any":
        return blocks == 0
    if aggregate == "all":
        return allows > 0
    if allows == blocks:
        raise HookError(f"the samples tied ({allows} allow, {blocks} block): no majority")
    return allows > blocks


def aggregated(aggregate: str, answers: list[_Answer], model: str | None = None) -> PromptVerdict:
    """The hook's verdict from its samples' answers (module docstring); ``model`` names the
    model in the error when no verdict can be had."""
    usage = sum((spent for _, _, spent in answers), Usage())
    records = [_record(answer) for answer in answers]
    verdicts = [verdict for verdict, _, _ in answers if verdict is not None]
    if not verdicts:
        first = next((error for _, error, _ in answers if error), "no verdict")
        raise HookError(f"all {len(answers)} samples failed; the first: {first}", model=model, usage=usage)
    try:
        ok = decide(aggregate, verdicts)
    except HookError as exc:
        raise HookError(str(exc), model=verdicts[0].model or model, usage=usage) from None
    agreeing = [v for v in verdicts if v.ok == ok]
    chosen = next((v for v in agreeing if v.reason and v.reason.strip()), agreeing[0])
    return chosen.model_copy(
        update={"usage": usage, "samples": records, "agreement": len(agreeing) / len(verdicts)}
    )


async def judge_samples(judge: PromptJudge, request: PromptRequest) -> PromptVerdict:
    """``request.hook.samples`` judgements of ``request`` in parallel by its deadline, voted
    by the hook's ``aggregate`` (module docstring). One sample is one plain judgement."""
    k = request.hook.samples
    if k <= 1:
        return await judge.evaluate(request)
    deadline = request.deadline_in(asyncio.get_running_loop())
    found = await asyncio.gather(
        *(_one(judge, dataclasses.replace(request, sample=i, deadline=deadline), deadline) for i in range(k))
    )
    model = next((failed for _, failed in found if failed), None)
    return aggregated(request.hook.aggregate, [answer for answer, _ in found], model)
