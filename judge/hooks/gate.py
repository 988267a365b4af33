"""The gate: the engine plus durable state and audit logs.

This is what the CLI, the HTTP service, the Claude Code adapter and the Python
integration call. It keeps the Stop rejection count per session itself (so a caller
that does not pass ``stop_rejection_count`` still cannot loop for ever), and the loop's
last rejection (so a stalled loop ends), and writes the audit logs; the rules themselves
stay in :mod:`judge.hooks.engine` and :mod:`judge.hooks.outcomes`.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from judge.config import STOP_EVENTS
from judge.context import StopContext, parse_context
from judge.decision import Decision, HookOutcome
from judge.errors import ContextError, StateUnavailable
from judge.files import storable_text
from judge.hooks.engine import Engine
from judge.logs.audit import AuditLog
from judge.state import StateStore, StopMemory
from judge.state.session_lock import DEFAULT_WAIT_SECONDS

_log = logging.getLogger("judge.gate")


def count_key(event: str, session_id: str) -> str:
    """Where a session's rejection count for ``event`` is kept in the store.

    A SubagentStop loop is not the session's Stop loop: an allowed subagent stop must not
    reset the main agent's count (nor share it).
    """
    return session_id if event == "Stop" else f"{session_id}:{event}"


def spend_keys(session_id: str | None) -> list[str]:
    """Where spending is recorded: the session (when known) and the UTC day."""
    day = f"day:{datetime.now(UTC):%Y-%m-%d}"
    return [f"session:{session_id}", day] if session_id else [day]


class Gate:
    """Engine + optional :class:`StateStore` (rejection counts) + optional :class:`AuditLog`."""

    def __init__(
        self,
        engine: Engine,
        store: StateStore | None = None,
        audit: AuditLog | None = None,
        *,
        lock_wait: float = DEFAULT_WAIT_SECONDS,
    ) -> None:
        self.engine = engine
        self.store = store
        self.audit = audit
        #: longest wait for a concurrent Stop round of the same session (SessionBusy after)
        self.lock_wait = lock_wait

    async def decide(
        self,
        event: str,
        context: dict[str, Any],
        transcript: str | Path | None = None,
        session_id: str | None = None,
        *,
        new_loop: bool = False,
        stop_hook_active: bool = False,
        last_rejection: StopMemory | None = None,
    ) -> Decision:
        """Evaluate ``event``; Stop counts are merged with and saved to the store.

        With a store, the Stop rounds of one session run one at a time (across processes
        and hosts: ``StateStore.session_round``). ``new_loop`` resets the session's count first
        (a fresh stop attempt), in the same locked round. ``stop_hook_active``: the host
        says the agent is already continuing because of a Stop hook (Claude Code's flag);
        hooks then see ``stop_hook_active: true`` even when this gate's own count is 0.
        ``last_rejection``: the loop's previous rejection as the caller keeps it (a gate
        without a store; with one, the store's is used), returned in
        ``Decision.stop_memory`` while the loop goes on.
        """
        if not isinstance(context, dict):
            raise ContextError(f"context must be a JSON object, got {type(context).__name__}")
        sid = session_id or context.get("session_id")
        sid = storable_text(str(sid)) if sid is not None else None
        if event in STOP_EVENTS and self.store is not None and sid:
            # read count -> decide -> write count, one round of the session at a time
            async with self.store.session_round(count_key(event, sid), self.lock_wait):
                if new_loop:
                    await asyncio.to_thread(self.store.reset, count_key(event, sid))
                return await self._decide(event, context, transcript, sid, stop_hook_active)
        return await self._decide(event, context, transcript, sid, stop_hook_active, last_rejection)

    def _exhausted(self, keys: list[str]) -> str | None:
        """Why prompt hooks may not run now (a spent budget), or None."""
        assert self.store is not None
        budget = self.engine.config.budgets
        for key in keys:
            limit = budget.per_session_usd if key.startswith("session:") else budget.per_day_usd
            if limit is not None:
                spent = self.store.spent(key)
                if spent >= limit:
                    what = "session" if key.startswith("session:") else "daily"
                    return (
                        f"budget exhausted: {what} budget of ${limit:g} spent (${spent:.4f}); "
                        "model not called"
                    )
        return None

    async def _decide(
        self,
        event: str,
        context: dict[str, Any],
        transcript: str | Path | None,
        sid: str | None,
        stop_hook_active: bool = False,
        last: StopMemory | None = None,
    ) -> Decision:
        stop = event in STOP_EVENTS
        stored = 0
        key = count_key(event, sid) if sid else ""
        if stop and self.store is not None and sid:
            stored, last = await asyncio.to_thread(self.store.stop_loop, key)
            # Validated as the engine would (a malformed count is an error, not a 0).
            parsed = parse_context(event, context)
            given_count = parsed.stop_rejection_count if isinstance(parsed, StopContext) else 0
            count = max(stored, given_count)
            context = {**context, "stop_rejection_count": count, "stop_hook_active": count > 0}
        budget = self.engine.config.budgets
        tracked = self.store is not None and (budget.per_session_usd or budget.per_day_usd)
        keys = spend_keys(sid) if tracked else []
        exhausted = await asyncio.to_thread(self._exhausted, keys) if tracked else None
        decision = await self.engine.evaluate(
            event,
            context,
            transcript,
            budget_exhausted=exhausted,
            stop_hook_active=stop_hook_active,
            last_rejection=last,
        )
        if tracked and self.store is not None and decision.cost_usd > 0:
            await asyncio.to_thread(self.store.add_spend, keys, decision.cost_usd)
        if stop and self.store is not None and sid:
            if decision.decision == "block":
                # Add what this round added (atomically), so concurrent rounds of one
                # session are never lost.
                delta = decision.rejection_count - stored
                memory = decision.stop_memory
                await asyncio.to_thread(self.store.record_rejection, key, delta, memory)
            else:
                # The agent stops (however the loop ended): the next Stop starts a new loop.
                await asyncio.to_thread(self.store.reset, key)
                if decision.outcome not in ("forced", "stalled"):
                    # Report the count as it now is (a loop cut at its limit or stalled keeps
                    # the count that ended it).
                    decision = decision.model_copy(update={"rejection_count": 0})
        if self.audit is not None:
            logged = {**context, "session_id": sid} if sid else context
            try:
                await asyncio.to_thread(self.audit.record, event, logged, decision, transcript)
            except (OSError, ValueError, TypeError) as exc:
                # A log file is a side channel: the decision stands, and the caller is told.
                # Records kept in the state database are the record: an allow that cannot be
                # recorded is answered per failMode, a block stands (a database problem must
                # not let through what a hook caught).
                in_database = isinstance(exc, StateUnavailable)
                if in_database and decision.decision != "block":
                    raise
                where = "" if in_database else f" in {self.audit.data_dir}"
                problem = f"could not write the audit log{where}: {exc}"
                _log.error("%s", problem)
                decision = decision.model_copy(update={"notes": [*decision.notes, problem]})
        return decision


def fail_mode_decision(engine: Engine, event: str, context: dict[str, Any], problem: str) -> Decision:
    """Every selected hook failed with ``problem``; each applies its ``failMode``."""
    outcomes = []
    for level, index, hook in engine.selected_hooks(event, context):
        blocks = hook.fail_mode_for(event) == "block"
        outcomes.append(
            HookOutcome(
                level="agent" if level == "agent" else "custom",
                index=index,
                type=hook.type,
                decision="block" if blocks else "allow",
                reason=f"Hook error: {problem}" if blocks else None,
                error=problem,
                mode="shadow" if hook.mode == "shadow" else None,
                calibration=engine.config.calibration_at(
                    event, level, index, hook, context.get("agent_name")
                ),
            )
        )
    blocking = [o for o in outcomes if o.effective and o.decision == "block"]
    stop = event in STOP_EVENTS
    if not blocking:
        failed = "failed_open" if outcomes else "approved"  # (approved: there was nothing to check)
        return Decision(event=event, decision="allow", hooks=outcomes, outcome=failed if stop else None)
    count = context.get("stop_rejection_count") if stop else 0
    return Decision(
        event=event,
        decision="block",
        reason=f"Hook error: {problem}",
        rejectionCount=count if isinstance(count, int) and count >= 0 else 0,
        hooks=outcomes,
        outcome="failed_closed" if stop else None,
    )
