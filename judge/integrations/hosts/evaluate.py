"""One host hook call evaluated through the gate: context, transcript, decision, verdict.

* The judge context (:func:`build_context`) carries what every way in gives - the event,
  ``session_id``, ``cwd``, ``agent_name``, the transcript as ``execution_summary``, the
  answer as ``final_output`` or the tool call - plus ``host`` (``codex``, ``gemini``,
  ``copilot``, ``cursor``) and the host's own extras (Gemini's ``prompt``, Copilot's
  ``stop_reason``, Codex's ``turn_id``).
* The host's session log is rendered into a private temporary file
  (:mod:`judge.transcripts.host_logs`), removed afterwards; when the Stop input does not
  carry the answer (Copilot, Cursor), the log's last answer is judged.
* Stop counts are kept per session (per subagent for SubagentStop) in the state file, as
  for ``judge claude-code``; a host's ``stop_hook_active: false`` (Cursor: ``loop_count:
  0``) starts a new loop.
* Hosts that honour Stop blocks without limit (Codex, Gemini) get judge's own cap: after
  :data:`JUDGE_BLOCK_CAP` blocks in a row (``$JUDGE_STOP_BLOCK_CAP``) the next stop is let
  through and the user is told. ``maxRejections`` bounds prompt hooks; the cap also bounds
  command hooks, which ``maxRejections`` does not count.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from judge.config import STOP_EVENTS, Config
from judge.decision import Decision
from judge.hooks.outcomes import notice
from judge.integrations.claude_code.answer import warn
from judge.integrations.hosts.dialect import Dialect, HostCall, Verdict
from judge.transcripts.claude_code_text import one_line

#: Stop blocks in a row judge allows on a host without a cap of its own (Claude Code's).
JUDGE_BLOCK_CAP = 8
BLOCK_CAP_ENV = "JUDGE_STOP_BLOCK_CAP"
DEFAULT_BLOCK_REASON = "Blocked by judge"
#: Failed hooks named in one note (the rest are counted).
MAX_FAILURES_TOLD = 3


def judge_block_cap(env: Mapping[str, str] | None = None) -> int:
    """``$JUDGE_STOP_BLOCK_CAP`` (a positive number), else :data:`JUDGE_BLOCK_CAP`."""
    raw = (os.environ if env is None else env).get(BLOCK_CAP_ENV, "").strip()
    try:
        value = int(raw)
    except ValueError:
        return JUDGE_BLOCK_CAP
    return value if value > 0 else JUDGE_BLOCK_CAP


def session_key(call: HostCall) -> str | None:
    """Where the Stop count is kept: per session, per subagent for SubagentStop; the
    transcript's path when the host names no session."""
    base = call.session_id or (f"transcript:{call.transcript_path}" if call.transcript_path else None)
    if base is None or call.event != "SubagentStop":
        return base
    return f"{base}:subagent:{call.agent_id or call.agent_type or 'subagent'}"


def probe_context(call: HostCall) -> dict[str, Any]:
    """Enough of the context to select hooks."""
    assert call.event is not None
    ctx: dict[str, Any] = {"hook_event_name": call.event}
    if call.agent_type:
        ctx["agent_name"] = call.agent_type
    if call.tool_name is not None:
        ctx["tool_name"] = call.tool_name
    return ctx


def build_context(
    dialect: Dialect, call: HostCall, transcript: Path | None, last_text: str | None
) -> dict[str, Any]:
    """The hook context for ``call`` (``hook_event_name`` is the judge event)."""
    assert call.event is not None
    ctx = probe_context(call)
    ctx["host"] = dialect.name
    present = {
        "session_id": call.session_id,
        "execution_summary": str(transcript) if transcript is not None else None,
        "cwd": call.cwd,
        "permission_mode": call.permission_mode,
        "agent_id": call.agent_id,
    }
    ctx.update({name: value for name, value in present.items() if value})
    ctx.update({k: v for k, v in call.extra.items() if k not in ctx})
    if call.event in STOP_EVENTS:
        answer = call.final_output
        if answer is None or (dialect.answer_from_log and last_text is not None):
            answer = last_text
        ctx["final_output"] = answer or ""
        return ctx
    ctx["tool_input"] = call.tool_input if call.tool_input is not None else {}
    if call.tool_use_id:
        ctx["tool_use_id"] = call.tool_use_id
    if call.event == "PostToolUse":
        ctx["tool_result"] = call.tool_result
        ctx["tool_succeeded"] = call.tool_succeeded
        if not call.tool_succeeded:
            ctx["tool_error"] = call.tool_error
    return ctx


def _render(dialect: Dialect, source: Path) -> tuple[Path, str | None]:
    from judge.transcripts.host_logs import render_host_log

    fd, name = tempfile.mkstemp(prefix="judge-host-transcript-", suffix=".txt")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as out:
            last = render_host_log(dialect.transcript_format, source, out)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name), last


@contextlib.asynccontextmanager
async def host_transcript(dialect: Dialect, call: HostCall) -> AsyncIterator[tuple[Path | None, str | None]]:
    """The host's log rendered to a private temporary file, and its last answer; (None,
    None) when there is none or it cannot be read (a warning says why)."""
    source = Path(call.transcript_path).expanduser() if call.transcript_path else None
    rendered: Path | None = None
    last: str | None = None
    if source is not None:
        try:
            rendered, last = await asyncio.to_thread(_render, dialect, source)
        except (OSError, UnicodeError) as exc:
            warn(f"cannot read the transcript {source} ({exc}); judged without it")
    try:
        yield rendered, last
    finally:
        if rendered is not None:
            rendered.unlink(missing_ok=True)


def verdict_for(dialect: Dialect, call: HostCall, decision: Decision, rewrite: str | None) -> Verdict:
    """The host-neutral answer for ``decision``."""
    verdict = Verdict(additional_context=decision.additional_context)
    if decision.decision == "block":
        verdict.block = decision.reason or DEFAULT_BLOCK_REASON
    elif call.event in STOP_EVENTS and decision.outcome not in ("failed_open", "failed_closed"):
        told = notice(decision)  # forced, impossible, stalled, deferred: the user is told
        if told is not None:
            verdict.notes.append(told)
    elif call.event == "PreToolUse":
        _pre_tool_use(dialect, decision, verdict, rewrite)
    failed = [hook for hook in decision.hooks if hook.error is not None and hook.effective]
    for hook in failed[:MAX_FAILURES_TOLD]:
        verdict.notes.append(
            hook.failure_line(decision.event, "could not run", one_line(str(hook.error), 300))
        )
    if len(failed) > MAX_FAILURES_TOLD:
        verdict.notes.append(f"and {len(failed) - MAX_FAILURES_TOLD} more")
    verdict.notes += decision.notes
    return verdict


def _pre_tool_use(dialect: Dialect, decision: Decision, verdict: Verdict, rewrite: str | None) -> None:
    """A rewrite the host can take (a dict where the host merges arguments), or a denial
    saying what the policy wanted; an "ask": the host's own confirmation where it has one,
    else the call runs (as judge's rules say where no one can be asked) and the user is told."""
    if decision.ask is not None:
        if dialect.asks:
            verdict.ask = decision.ask
        else:
            reason = f" ({decision.ask})" if decision.ask else ""
            verdict.notes.append(
                f"a hook asks to confirm this call{reason}; {dialect.title} cannot ask, so it runs"
            )
    updated = decision.updated_input
    if updated is None:
        return
    if (dialect.rewrites or rewrite == "allow") and isinstance(updated, dict):
        verdict.updated_input = updated
        return
    verdict.block = (
        f"the policy would run this call rewritten as {one_line(str(updated), 300)}; "
        f"{dialect.title} cannot take the rewrite without skipping its own approval "
        "(judge --rewrite allow would): make the call that way instead"
    )


async def apply_block_cap(dialect: Dialect, call: HostCall, verdict: Verdict, store: Any, key: str) -> None:
    """On a host without a cap of its own, let the stop through after judge's cap of
    blocks in a row (counted per session key in ``store``)."""
    counter = f"{key}:{dialect.name}-blocks"
    if verdict.block is None:  # the agent stops; its next stop starts a new loop
        return
    if call.new_loop:
        await asyncio.to_thread(store.reset, counter)
    cap = judge_block_cap()
    count = await asyncio.to_thread(store.increment_rejection_count, counter, 1)
    if count > cap:
        await asyncio.to_thread(store.reset, counter)
        warn(f"{cap} Stop blocks in a row: letting the agent stop ({dialect.title} has no cap of its own)")
        verdict.notes.append(
            f"the agent was let stop after {cap} blocks in a row ({dialect.title} sets no limit; "
            f"judge's is {BLOCK_CAP_ENV}={cap}). Unresolved: {verdict.block}"
        )
        verdict.block = None


async def evaluate(
    dialect: Dialect,
    call: HostCall,
    config: Config,
    state_path: Path | None,
    data_dir: Path | None,
    rewrite: str | None = None,
) -> Verdict:
    """Evaluate ``call`` with ``config`` through the gate; the verdict for the host."""
    from judge.hooks.engine import Engine
    from judge.hooks.gate import Gate
    from judge.logs.audit import AuditLog
    from judge.state import Store

    assert call.event is not None
    engine = Engine(config)
    if not engine.selected_hooks(call.event, probe_context(call)):
        return Verdict()  # nothing configured for this event/tool: no transcript work, no state
    stop = call.event in STOP_EVENTS
    key = session_key(call)
    store = Store(state_path) if stop and key and state_path is not None else None
    audit = AuditLog(data_dir) if data_dir is not None else None
    gate = Gate(engine, store=store, audit=audit)
    async with host_transcript(dialect, call) as (transcript, last_text):
        if stop and call.final_output is None and last_text is None:
            warn("the agent's final answer was not found in the hook input or the transcript")
        context = build_context(dialect, call, transcript, last_text)
        decision = await gate.decide(
            call.event,
            context,
            session_id=key,
            new_loop=store is not None and call.new_loop,
            stop_hook_active=call.stop_hook_active,
        )
    for hook in decision.hooks:
        if hook.error:
            warn(f"{hook.level} {call.event}[{hook.index}] hook error: {hook.error}")
    for note in decision.notes:
        warn(note)
    return verdict_for(dialect, call, decision, rewrite)


async def bound_stops(dialect: Dialect, call: HostCall, verdict: Verdict, state_path: Path | None) -> Verdict:
    """A Stop's verdict on a host without a cap of its own, bounded by judge's cap
    (whether judge decided or its failMode did)."""
    from judge.state import Store

    if call.event not in STOP_EVENTS or dialect.block_cap is not None or verdict.block is None:
        return verdict
    key = session_key(call)
    if key is not None and state_path is not None:
        await apply_block_cap(dialect, call, verdict, Store(state_path), key)
    elif verdict.block is not None:  # no session to count in: a block could loop for ever
        warn("the hook input names no session: not blocking the stop (nothing would bound the loop)")
        verdict.notes.append(f"not blocked, since the hook input names no session: {verdict.block}")
        verdict.block = None
    return verdict
