"""How a Stop round ends: the outcome of every Stop decision, and the rules that end a
loop honestly beside ``maxRejections``.

Three answers end a loop without pretending the work was done:

* **impossible** - a hook rejects with ``"impossible": true`` and a reason: the work
  cannot be finished without the user (a credential only they have, a decision only they
  can make). The stop is allowed, nothing is counted, and the reason is the user's to read.
* **stalled** - the agent comes back with the same final answer (case and whitespace
  aside) and the prompt hooks reject it with the same reasons as the loop's previous
  rejection: sending it back again would loop. ``repeats: N`` on a prompt hook tolerates N
  identical repeats (the maximum over the prompt hooks; default 0: the first identical
  repeat ends it). The gate keeps the last rejection per session
  (:class:`~judge.state.stop_memory.StopMemory`); a round in which a blocking hook failed
  is never stalled (its answer was not judged).
* **deferred** - the context's ``background_tasks`` is not empty (the agent is waiting
  for work it started; Claude Code wakes it when that work ends): prompt hooks with
  ``backgroundTasks: defer`` (the default) are not run. Command hooks still run.

Every Stop decision has one outcome; when several rules apply, the first row wins:

=================  ========  ==========================================================
outcome            decision  when
=================  ========  ==========================================================
``failed_closed``  block     sent back, and every hook that sent it back did so by its
                             own error (``failMode: block``)
``rejected``       block     sent back by a hook's rejection (a command hook's block is
                             never overridden by the rows below: it has no implicit limit)
``impossible``     allow     a hook answered impossible (with a reason)
``stalled``        allow     a prompt rejection that repeats the loop's last one
``forced``         allow     the rejection reached ``maxRejections`` (``forcedStop``)
``failed_open``    allow     nothing rejected, and a hook error let it stop
``deferred``       allow     nothing rejected or failed; prompt hooks were deferred
``approved``       allow     nothing rejected
=================  ========  ==========================================================

``rejectionCount`` is the count after the round, except that ``forced`` and ``stalled``
report the count that ended the loop (the gate then starts the next loop at 0).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from judge.config import Hook
from judge.decision import Decision, HookOutcome, StopOutcome
from judge.state.stop_memory import StopMemory

Selected = Sequence[tuple[str, int, Hook]]


def background_tasks(context: dict[str, Any]) -> int:
    """How many background tasks the context says are still running (0: none, or no list)."""
    tasks = context.get("background_tasks")
    return len(tasks) if isinstance(tasks, list) else 0


def defers(hook: Hook, context: dict[str, Any]) -> bool:
    """Whether this Stop hook is not run now: a prompt hook with ``backgroundTasks: defer``
    while background tasks run."""
    return hook.type == "prompt" and hook.background_tasks == "defer" and background_tasks(context) > 0


def deferred_outcome(level: str, index: int, hook: Hook) -> HookOutcome:
    """The result of a prompt hook that was not run (see :func:`defers`)."""
    return HookOutcome(
        level="agent" if level == "agent" else "custom",
        index=index,
        type=hook.type,
        decision="allow",
        mode="shadow" if hook.mode == "shadow" else None,
        deferred=True,
    )


def normalised(text: str) -> str:
    """``text`` as the stalled rule compares it: case folded, whitespace collapsed."""
    return " ".join(text.casefold().split())


def digest(text: str) -> str:
    return hashlib.sha256(normalised(text).encode("utf-8", "surrogatepass")).hexdigest()


def remembered(final_output: str, reason: str, last: StopMemory | None) -> StopMemory:
    """This rejected round as the gate keeps it: its digests, and how many identical
    repeats of the previous rejection it makes."""
    answer, why = digest(final_output), digest(reason)
    same = last is not None and last.answer == answer and last.reason == why
    return StopMemory(answer, why, last.repeats + 1 if same and last is not None else 0)


def _prompt_hooks(hooks: Selected) -> list[Hook]:
    return [h for _, _, h in hooks if h.type == "prompt" and h.mode != "shadow"]


def _unblocked(effective: list[HookOutcome]) -> StopOutcome:
    if any(o.error is not None for o in effective):
        return "failed_open"
    return "deferred" if any(o.deferred for o in effective) else "approved"


def _sent_back(blocking: list[HookOutcome]) -> StopOutcome:
    return "failed_closed" if all(o.error is not None for o in blocking) else "rejected"


def stop_decision(
    event: str,
    context: dict[str, Any],
    hooks: Selected,
    outcomes: list[HookOutcome],
    last: StopMemory | None = None,
) -> Decision:
    """The decision of one Stop round from its hooks' results (the module docstring's
    table). ``context`` is the one the hooks saw; ``last``: the loop's previous rejection."""
    count = int(context.get("stop_rejection_count") or 0)
    effective = [o for o in outcomes if o.effective]
    blocking = [o for o in effective if o.decision == "block"]
    reason = "\n".join(o.reason or "" for o in blocking) or None
    if not blocking:
        outcome = _unblocked(effective)
        return Decision(event=event, decision="allow", rejectionCount=count, hooks=outcomes, outcome=outcome)
    counted = [o for o in blocking if o.counts_as_rejection]
    commands = [o for o in blocking if not o.counts_as_rejection and not o.impossible]
    new_count = count + 1 if counted else count
    memory = remembered(str(context.get("final_output") or ""), reason or "", last)

    def ends(outcome: StopOutcome, rejections: int, forced: bool = False) -> Decision:
        return Decision(
            event=event,
            decision="allow",
            reason=reason,
            forcedStop=forced,
            rejectionCount=rejections,
            hooks=outcomes,
            outcome=outcome,
        )

    if not commands:  # a command hook's block stands: no rule below overrides it
        if any(o.impossible for o in blocking):
            return ends("impossible", count)
        prompt_hooks = _prompt_hooks(hooks)
        tolerated = max(h.repeats for h in prompt_hooks)
        if memory.repeats > tolerated and all(o.error is None for o in blocking):
            return ends("stalled", new_count)
        if new_count >= max(h.max_rejections for h in prompt_hooks):
            return ends("forced", new_count, forced=True)
    return Decision(
        event=event,
        decision="block",
        reason=reason,
        rejectionCount=new_count,
        hooks=outcomes,
        outcome=_sent_back([o for o in blocking if not o.impossible]),  # (what sent it back)
        stop_memory=memory,
    )


def notice(decision: Decision, failures: list[str] | None = None) -> str | None:
    """What the user is told of a Stop that did not simply end approved or rejected:
    ``<event> <outcome>: <why>`` (None for approved, rejected and tool events).
    ``failures``: the failed hooks as the caller words them (default: the decision's
    :meth:`~judge.decision.Decision.error_lines`)."""
    outcome, event = decision.outcome, decision.event
    if outcome in (None, "approved", "rejected"):
        return None
    unresolved = f" Unresolved: {decision.reason}" if decision.reason else ""
    if outcome == "forced":
        why = f"allowed after {decision.rejection_count} rejection(s) (maxRejections reached).{unresolved}"
    elif outcome == "impossible":
        why = f"the judge says this cannot be finished without you: {decision.reason}"
    elif outcome == "stalled":
        why = (
            "the agent gave the same answer again and the judge the same reason, so it was "
            f"allowed to stop instead of being sent back again.{unresolved}"
        )
    elif outcome == "deferred":
        waiting = sum(1 for h in decision.hooks if h.deferred and h.effective)
        why = (
            f"{waiting} prompt hook(s) not run while background tasks run; "
            "the stop after that work ends is judged"
        )
    else:
        lines = decision.error_lines() if failures is None else failures
        why = "; ".join(lines) or "a hook could not decide"
    return f"{event} {outcome}: {why}"
