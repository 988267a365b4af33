"""What ``judge claude-code`` answers when it cannot do its work: the selected hooks'
failMode decides, and the user is told.

* A hook that did not finish (a deadline, a cancelling signal) or an adapter failure
  after the configuration loaded (a damaged state file): :func:`fail_mode_output` over
  the hooks the input selects - any ``failMode: block`` (the default on PreToolUse)
  blocks with ``Hook error: ...``, else a ``systemMessage`` says what was not checked.
  Shadow hooks never block.
* Unusable hook input (not JSON, wrong types, over the size limit): when its event (and
  tool) can still be read and judge has hooks for them, the same; else only a warning on
  stderr, since nothing is configured to check.
* No usable configuration: PreToolUse is denied, the other events go through with a
  ``systemMessage`` (:func:`judge.integrations.claude_code.output.adapter_failure_output`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from judge.config import STOP_EVENTS, Config, Hook, load_config
from judge.decision import Decision
from judge.errors import ConfigError
from judge.integrations.claude_code.answer import warn
from judge.integrations.claude_code.context import probe_context
from judge.integrations.claude_code.fast_path import MAX_STDIN_BYTES
from judge.integrations.claude_code.output import (
    adapter_failure_output,
    claude_code_output,
    unchecked,
    with_note,
)
from judge.integrations.claude_code.protocol import (
    DEFAULT_REWRITE_MODE,
    HANDLED_EVENTS,
    ClaudeCodeInput,
    InputError,
    RewriteMode,
    head_fields,
)
from judge.integrations.claude_code.versions import StopForm, session_version, stop_feedback_form
from judge.validation import runnable


def selected_hooks(config: Config, hook_input: ClaudeCodeInput) -> list[tuple[str, int, Hook]]:
    """The judge hooks this input selects (by event, agent and tool name)."""
    from judge.hooks.engine import Engine

    return Engine(config).selected_hooks(hook_input.config_event, probe_context(hook_input))


def fail_mode_output(
    hook_input: ClaudeCodeInput,
    hooks: list[tuple[str, int, Hook]],
    problem: str,
    rewrite: RewriteMode = DEFAULT_REWRITE_MODE,
) -> dict[str, Any]:
    """The answer when the selected hooks could not finish: per their failMode.

    Any hook with ``failMode: block`` (the default on PreToolUse) blocks with
    ``Hook error: <problem>``; otherwise the event goes through with a ``systemMessage``.
    Shadow hooks never block.
    """
    event = hook_input.config_event
    if not any(h.fails_closed(event) for _, _, h in hooks):
        return {"systemMessage": f"judge: {unchecked(event, problem)}"}
    outcome = "failed_closed" if event in STOP_EVENTS else None
    decision = Decision(event=event, decision="block", reason=f"Hook error: {problem}", outcome=outcome)
    out = answer_for(decision, hook_input, rewrite)
    assert out is not None  # a block always has an answer
    return out


def answer_for(
    decision: Decision, hook_input: ClaudeCodeInput, rewrite: RewriteMode
) -> dict[str, Any] | None:
    """Claude Code's answer for ``decision`` on this input (``None``: print nothing). A Stop
    rejection continues the turn in the form the session's Claude Code understands (its
    version read from the transcript's rows)."""
    form: StopForm = "block"
    if decision.decision == "block" and hook_input.config_event in STOP_EVENTS:
        path = hook_input.transcript_path or hook_input.agent_transcript_path
        form = stop_feedback_form(session_version(Path(path).expanduser() if path else None))
    return claude_code_output(
        decision,
        hook_input.hook_event_name,
        rewrite,
        hook_input.tool_name,
        hook_input.tool_input,
        hook_input.tool_response,
        stop_form=form,
    )


def adapter_failure(event: str, problem: str) -> dict[str, Any]:
    """No usable configuration: deny a PreToolUse call, let the rest go on; say so."""
    blocking = event in ("PreToolUse", "PreSkillShellCommand")
    warn(f"{problem}; {'denying the tool call (fail closed)' if blocking else 'not blocking'}")
    return adapter_failure_output(event, problem)


def hooks_failure(
    hook_input: ClaudeCodeInput, config: Config, problem: str, rewrite: RewriteMode, note: str | None = None
) -> dict[str, Any] | None:
    """The adapter failed after the configuration was loaded: the selected hooks' failMode
    decides (PreToolUse hooks block by default), as when they time out. ``note``: what the
    user was to be told besides (say, that the configuration file changed)."""
    try:
        output = fail_mode_output(hook_input, selected_hooks(config, hook_input), problem, rewrite)
    except Exception:  # choosing the hooks failed too: the event's default
        return adapter_failure(hook_input.hook_event_name, problem)
    blocking = "systemMessage" not in output
    warn(f"{problem}; {'blocking (failMode)' if blocking else 'not blocking'}")
    return with_note(output, note)


def input_failure(
    exc: InputError, config_path: str | None, load: Callable[[str, str | None], Config] | None = None
) -> dict[str, Any] | None:
    """Unusable hook input. When its event is readable and judge has hooks for it (at agent
    level or for the input's custom agent), their failMode decides (a PreToolUse call is
    denied) and the user is told; a configuration that cannot be loaded either is answered
    as :func:`adapter_failure` answers it; else it is only logged: nothing is configured
    to check. ``load(path, session_id)`` gives the configuration the session is judged by
    (its pinned one, so an edited file cannot wave such a call through); default: the file."""
    event = exc.event
    if event not in HANDLED_EVENTS or not config_path:
        warn(f"{exc}; not blocking")
        return None
    data = exc.data or {}
    session = data.get("session_id")
    try:
        if load is not None:
            config = load(config_path, session if isinstance(session, str) and session else None)
        else:
            config = runnable(load_config(config_path))
    except (ConfigError, OSError) as problem:
        return adapter_failure(event, f"{exc}, and the configuration {config_path} is unusable ({problem})")
    tool, agent = data.get("tool_name"), data.get("agent_type")
    loose = ClaudeCodeInput.model_construct(
        hook_event_name=event, tool_name=tool if isinstance(tool, str) and tool else None
    )
    if isinstance(agent, str):
        hooks = config.hooks_for(loose.config_event, agent)
    else:  # the agent is not known: every custom agent's hooks may apply
        hooks = config.every_hook_for(loose.config_event)
    if loose.tool_name is not None:
        hooks = [(level, i, hook) for level, i, hook in hooks if hook.matches(loose.tool_name)]
    if not hooks:
        warn(f"{exc}; not blocking (no hook for it)")
        return None
    output = fail_mode_output(loose, hooks, str(exc))
    warn(f"{exc}; {'not blocking' if 'systemMessage' in output else 'blocking (failMode)'}")
    return output


def too_big(text: str) -> InputError:
    """The error for an input over the size limit, with its event and tool when its first
    64 KiB name them (so that event's failMode can decide)."""
    return InputError(f"hook input larger than {MAX_STDIN_BYTES} bytes", head_fields(text))


def checked_size(text: str) -> str:
    """Hook input read by the fast path: refuse one cut at the size limit (UTF-8 length)."""
    if len(text) > MAX_STDIN_BYTES // 4 and len(text.encode("utf-8")) > MAX_STDIN_BYTES:
        raise too_big(text)
    return text


def hook_text(data: bytes | None) -> str | InputError:
    """The hook input from stdin's bytes (at most one byte over the limit read), or why
    there is none: no stdin, or an input over the size limit."""
    if data is None:
        return InputError("no hook input: Claude Code passes the hook JSON on stdin")
    text = data.decode("utf-8", errors="replace")
    return too_big(text) if len(data) > MAX_STDIN_BYTES else text
