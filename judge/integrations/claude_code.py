"""``judge claude-code``: the gate as a Claude Code command hook (INTERFACES §6).

Claude Code runs the command with the hook input JSON on stdin and reads the answer
from stdout. This module maps that input to the SPEC context, evaluates it with
:class:`judge.gate.Gate`, and prints Claude Code's output format:

* Stop / SubagentStop: ``{"decision": "block", "reason": ...}`` sends the agent back to
  work; nothing is printed to let it stop; ``{"systemMessage": ...}`` tells the user a
  stop was forced at ``maxRejections``.
* PostToolUse: ``{"decision": "block", "reason": ...}`` (the reason is shown to Claude),
  and ``hookSpecificOutput.additionalContext`` when a hook supplied context.
* PreToolUse: ``hookSpecificOutput.permissionDecision: "deny"`` with
  ``permissionDecisionReason``; a rewritten input as ``hookSpecificOutput.updatedInput``
  with ``permissionDecision: "ask"`` (the rewrite never skips the user's approval).

The process always exits 0: Claude Code only reads the JSON answer on exit 0, so every
block is expressed in JSON. Problems of the adapter itself are reported on stderr. They
never block a Stop or a PostToolUse (a broken setup must not wedge the user's agent; the
user is told through a ``systemMessage``), but a PreToolUse call whose policy check
cannot run — an invalid configuration, an unexpected failure — is **denied** with the
reason (SPEC §6: a broken policy check must not pass silently). With no configuration at
all (no ``--config``, no ``JUDGE_CONFIG``) nothing is checked and nothing is blocked.
Hook errors during evaluation follow each hook's ``failMode`` (PreToolUse hooks fail
closed by default).

Claude Code only tells a Stop hook ``stop_hook_active: true/false``; the rejection count
that ``maxRejections`` needs is kept here per ``session_id`` in a SQLite state file
(``--state``, ``$JUDGE_STATE``, or ``$XDG_DATA_HOME/judge/state.sqlite`` /
``~/.local/share/judge/state.sqlite``). ``stop_hook_active: false`` starts a new loop, so
the count is reset then.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from judge.config import STOP_EVENTS, TOOL_EVENTS, Config, HookSet, load_config
from judge.decision import Decision, PromptJudge
from judge.errors import ConfigError, ContextError
from judge.integrations.claude_code_render_cache import RenderError, rendered_transcript
from judge.validation import runnable

SUPPORTED_EVENTS: tuple[str, ...] = ("Stop", "SubagentStop", "PostToolUse", "PreToolUse")
#: Largest hook input read from stdin (tool inputs/outputs can be big, not this big).
MAX_STDIN_BYTES = 64 * 1024 * 1024
PREFIX = "judge claude-code"


class ClaudeCodeInput(BaseModel):
    """Claude Code's hook input (the fields used here; others are kept and ignored)."""

    model_config = ConfigDict(extra="allow")

    hook_event_name: str
    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    permission_mode: str | None = None
    stop_hook_active: bool = False
    last_assistant_message: str | None = None
    agent_id: str | None = None
    agent_type: str | None = None
    agent_transcript_path: str | None = None
    tool_name: str | None = None
    tool_input: Any = None
    tool_response: Any = None
    tool_use_id: str | None = None


class InputError(Exception):
    """The hook input on stdin is unusable."""


def default_state_path() -> Path:
    """``$JUDGE_STATE``, else the per-user data dir (``$XDG_DATA_HOME`` or ``~/.local/share``)."""
    env = os.environ.get("JUDGE_STATE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "judge" / "state.sqlite"


def parse_input(text: str) -> ClaudeCodeInput:
    """Validate the stdin JSON; raise :class:`InputError` with a readable message."""
    if not text.strip():
        raise InputError("no hook input on stdin (expected Claude Code's hook JSON)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise InputError(f"hook input is not JSON ({where}: {exc.msg})") from None
    if not isinstance(data, dict):
        raise InputError(f"hook input must be a JSON object, got {type(data).__name__}")
    try:
        return ClaudeCodeInput.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<input>'}: {err['msg']}" for err in exc.errors()
        )
        raise InputError(f"invalid hook input: {problems}") from None


# ---------------------------------------------------------------------------
# Mapping in and out


def session_key(hook_input: ClaudeCodeInput) -> str | None:
    """Where the Stop rejection count is kept: per session, per subagent for SubagentStop."""
    if not hook_input.session_id:
        return None
    if hook_input.hook_event_name == "SubagentStop":
        agent = hook_input.agent_id or hook_input.agent_type or "subagent"
        return f"{hook_input.session_id}:subagent:{agent}"
    return hook_input.session_id


def transcript_source(hook_input: ClaudeCodeInput) -> Path | None:
    """The JSONL to render: a subagent's own transcript for SubagentStop when given."""
    raw = hook_input.transcript_path
    if hook_input.hook_event_name == "SubagentStop" and hook_input.agent_transcript_path:
        raw = hook_input.agent_transcript_path
    return Path(raw).expanduser() if raw else None


def build_context(
    hook_input: ClaudeCodeInput, transcript: Path | None, last_text: str | None
) -> dict[str, Any]:
    """The SPEC §2 context for this hook input."""
    event = hook_input.hook_event_name
    ctx: dict[str, Any] = {"hook_event_name": event}
    if hook_input.agent_type:
        ctx["agent_name"] = hook_input.agent_type
    if hook_input.session_id:
        ctx["session_id"] = hook_input.session_id
    if transcript is not None:
        ctx["execution_summary"] = str(transcript)
    if hook_input.cwd:
        ctx["cwd"] = hook_input.cwd
    if hook_input.permission_mode:
        ctx["permission_mode"] = hook_input.permission_mode
    if event in STOP_EVENTS:
        # last_assistant_message first: the transcript file can lag behind the hook.
        final = hook_input.last_assistant_message
        ctx["final_output"] = final if final is not None else (last_text or "")
        if hook_input.agent_id:
            ctx["agent_id"] = hook_input.agent_id
    elif event in TOOL_EVENTS:
        ctx["tool_name"] = hook_input.tool_name
        ctx["tool_input"] = hook_input.tool_input if hook_input.tool_input is not None else {}
        if hook_input.tool_use_id:
            ctx["tool_use_id"] = hook_input.tool_use_id
        if event == "PostToolUse":
            ctx["tool_result"] = hook_input.tool_response
            ctx["tool_succeeded"] = True
    return ctx


def claude_code_output(decision: Decision) -> dict[str, Any] | None:
    """Claude Code's JSON answer for ``decision``; ``None`` means print nothing (allow)."""
    event = decision.event
    if event in STOP_EVENTS:
        if decision.decision == "block":
            return {"decision": "block", "reason": decision.reason or "Blocked by judge"}
        if decision.forced_stop:
            unresolved = f" Unresolved: {decision.reason}" if decision.reason else ""
            return {
                "systemMessage": f"judge: stop forced after {decision.rejection_count} rejection(s) "
                f"(maxRejections reached).{unresolved}"
            }
        return None
    if event == "PreToolUse":
        specific: dict[str, Any] = {"hookEventName": "PreToolUse"}
        if decision.decision == "block":
            specific["permissionDecision"] = "deny"
            specific["permissionDecisionReason"] = decision.reason or "Blocked by judge"
            return {"hookSpecificOutput": specific}
        if decision.updated_input is not None:
            # Claude Code applies updatedInput only with a permission decision; "ask" applies
            # the rewrite while keeping the user's approval (never silently "allow").
            specific["permissionDecision"] = "ask"
            specific["permissionDecisionReason"] = "judge hook rewrote the tool input"
            specific["updatedInput"] = decision.updated_input
        if decision.additional_context is not None:
            specific["additionalContext"] = decision.additional_context
        return {"hookSpecificOutput": specific} if len(specific) > 1 else None
    # PostToolUse
    out: dict[str, Any] = {}
    if decision.decision == "block":
        out = {"decision": "block", "reason": decision.reason or "Tool result blocked by hook"}
    if decision.additional_context is not None:
        out["hookSpecificOutput"] = {
            "hookEventName": "PostToolUse",
            "additionalContext": decision.additional_context,
        }
    return out or None


# ---------------------------------------------------------------------------
# Running one hook call


async def handle(
    hook_input: ClaudeCodeInput,
    config: Config,
    state_path: Path | None,
    data_dir: Path | None = None,
    judge: PromptJudge | None = None,
) -> dict[str, Any] | None:
    """Evaluate one Claude Code hook call; return the JSON to print (``None``: print nothing)."""
    from judge.audit import AuditLog
    from judge.engine import Engine
    from judge.gate import Gate
    from judge.state import Store

    event = hook_input.hook_event_name
    engine = Engine(config, judge=judge)
    probe = build_context(hook_input, None, None)
    if not engine.selected_hooks(event, probe):
        return None  # nothing configured for this event/tool: no transcript work, no state
    stop = event in STOP_EVENTS
    key = session_key(hook_input)
    store = Store(state_path) if stop and key and state_path is not None else None
    # A fresh stop attempt (not a continuation we caused) starts a new rejection loop.
    new_loop = store is not None and not hook_input.stop_hook_active
    audit = AuditLog(data_dir) if data_dir is not None else None
    gate = Gate(engine, store=store, audit=audit)
    cache_dir = state_path.parent / "render-cache" if state_path is not None else None
    try:
        with rendered_transcript(transcript_source(hook_input), cache_dir) as (transcript, last_text):
            context = build_context(hook_input, transcript, last_text)
            decision = await gate.decide(event, context, session_id=key, new_loop=new_loop)
    except RenderError as exc:
        _warn(str(exc))
        context = build_context(hook_input, None, None)
        decision = await gate.decide(event, context, session_id=key, new_loop=new_loop)
    for hook in decision.hooks:
        if hook.error:
            _warn(f"{hook.level} {event}[{hook.index}] hook error: {hook.error}")
    return claude_code_output(decision)


def _warn(message: str) -> None:
    print(f"{PREFIX}: {message}", file=sys.stderr)


def adapter_failure_output(event: str, problem: str) -> dict[str, Any]:
    """What Claude Code gets when the adapter cannot evaluate a configured event.

    PreToolUse fails closed (the call is denied with the reason); Stop and PostToolUse go
    through, with a ``systemMessage`` so the user sees the setup is broken.
    """
    if event == "PreToolUse":
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": f"judge policy check could not run ({problem}); "
                "fix the judge setup, then retry",
            }
        }
    return {"systemMessage": f"judge: {problem}; not checked"}


def _adapter_failure(event: str, problem: str) -> None:
    blocking = event == "PreToolUse"
    _warn(f"{problem}; {'denying the tool call (fail closed)' if blocking else 'not blocking'}")
    print(json.dumps(adapter_failure_output(event, problem), ensure_ascii=False))


def _read_stdin() -> str:
    if sys.stdin is None or sys.stdin.isatty():
        raise InputError("no hook input: Claude Code passes the hook JSON on stdin")
    data = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    if len(data) > MAX_STDIN_BYTES:
        raise InputError(f"hook input larger than {MAX_STDIN_BYTES} bytes")
    return data.decode("utf-8", errors="replace")


def _write_config_index(state_path: Path, config_path: str, config: Config) -> None:
    """Let later calls skip loading ``config`` when no hook can match (see claude_code_fast)."""
    from judge.config import EVENTS
    from judge.integrations.claude_code_fast import write_index

    def matchers(hooks: HookSet) -> dict[str, list[str | None]]:
        return {e: [h.matcher for h in hooks.for_event(e)] for e in EVENTS if hooks.for_event(e)}

    agents = {name: matchers(agent.hooks) for name, agent in config.custom_agents.items()}
    write_index(str(state_path), config_path, matchers(config.hooks), agents)


def main(args: argparse.Namespace) -> int:
    """Entry point of ``judge claude-code``. Always exits 0 (see the module docstring)."""
    try:
        stdin_text = getattr(args, "stdin_text", None)
        hook_input = parse_input(stdin_text if stdin_text is not None else _read_stdin())
    except InputError as exc:
        _warn(f"{exc}; not blocking")
        return 0
    event = hook_input.hook_event_name
    if event not in SUPPORTED_EVENTS:
        _warn(f"event {event!r} is not handled (supported: {', '.join(SUPPORTED_EVENTS)}); not blocking")
        return 0
    config_path = getattr(args, "config", None) or os.environ.get("JUDGE_CONFIG")
    if not config_path:
        _warn("no configuration: pass --config CONFIG or set JUDGE_CONFIG; not blocking")
        return 0
    try:
        config = runnable(load_config(config_path))  # templates and models checked too
    except ConfigError as exc:
        for problem in exc.problems:
            _warn(f"{config_path}: {problem}")
        first = exc.problems[0] if exc.problems else "invalid"
        _adapter_failure(event, f"invalid judge configuration {config_path}: {first}")
        return 0
    state_arg = getattr(args, "state", None)
    state_path = Path(state_arg).expanduser() if state_arg else default_state_path()
    _write_config_index(state_path, config_path, config)
    data_arg = getattr(args, "data_dir", None) or os.environ.get("JUDGE_DATA_DIR")
    data_dir = Path(data_arg).expanduser() if data_arg else None
    try:
        output = asyncio.run(handle(hook_input, config, state_path, data_dir))
    except ContextError as exc:
        _adapter_failure(event, str(exc))
        return 0
    except Exception as exc:  # an adapter failure: fail closed only where a policy is checked
        _adapter_failure(event, f"unexpected failure ({type(exc).__name__}: {exc})")
        return 0
    if output is not None:
        print(json.dumps(output, ensure_ascii=False))
    return 0
