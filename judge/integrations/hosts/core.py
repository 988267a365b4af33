"""The adapter core every host shares: ``judge codex``, ``judge gemini``, ``judge copilot``,
``judge cursor``. A pure function of the flags and the hook input: :func:`respond` returns
the :class:`~judge.integrations.claude_code.answer.Answer` (stdout, stderr lines, exit
code) that :mod:`judge.cli.hosts` writes - or that a resident judge's client would.

It behaves as ``judge claude-code`` does, per host dialect (:mod:`.dialect`):

* the same configuration (``--config`` or ``$JUDGE_CONFIG``), pinned for the session at
  its first judged call (:mod:`judge.integrations.claude_code.config`), the same state
  file (``--state``) with per-session Stop counts, the same audit logs (``--data-dir``);
* the host's event mapped to judge's Stop / SubagentStop / PreToolUse / PostToolUse and
  judged through the gate (:mod:`.evaluate`); events judge does not serve are a silent
  no-op (nothing on stdout, exit 0);
* always exit 0 with the host's JSON: every host reads JSON reliably on exit 0, while
  exit 2 means different things to each (Copilot drops the reason, Gemini treats any
  exit of 2 or more as a denial);
* judge's own failures answered per the selected hooks' failMode: a PreToolUse check
  that cannot run - unusable input, an invalid configuration, a damaged state file, the
  ``--timeout`` deadline or a cancelling signal - is **denied** with the reason; a Stop or
  PostToolUse goes on and the user is told (where the host shows a message; stderr
  always). No configuration at all: nothing is checked, nothing blocked.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from judge.config import Config, load_config
from judge.errors import ConfigError, ContextError
from judge.integrations.claude_code.adapter import bounded, deadline_seconds, process_age
from judge.integrations.claude_code.answer import Answer, collecting, warn
from judge.integrations.claude_code.config import session_configuration
from judge.integrations.claude_code.fast_path import MAX_STDIN_BYTES, default_state_path
from judge.integrations.hosts.dialect import Dialect, HostCall, HostInputError, Verdict
from judge.integrations.hosts.evaluate import bound_stops, evaluate, probe_context
from judge.llm.providers.features_memo import FILE_NAME as MEMO_FILE
from judge.llm.providers.features_memo import remembering
from judge.validation import runnable

REWRITE_MODES = ("passthrough", "allow")


def read_input(dialect: Dialect, hook_text: str) -> dict[str, Any]:
    """The hook input's JSON object; :class:`HostInputError` saying what is wrong with it."""
    if not hook_text.strip():
        raise HostInputError(f"no hook input on stdin (expected {dialect.title}'s hook JSON)")
    if len(hook_text) > MAX_STDIN_BYTES // 4 and len(hook_text.encode("utf-8")) > MAX_STDIN_BYTES:
        raise HostInputError(f"hook input larger than {MAX_STDIN_BYTES} bytes")
    try:
        data = json.loads(hook_text)
    except json.JSONDecodeError as exc:
        raise HostInputError(
            f"hook input is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except RecursionError:
        raise HostInputError("hook input is nested too deeply to be read") from None
    if not isinstance(data, dict):
        raise HostInputError(f"hook input must be a JSON object, got {type(data).__name__}")
    return data


def _paths(args: argparse.Namespace) -> tuple[str | None, Path, Path | None]:
    """(the configuration, the state file, the audit folder) from the flags and environment."""
    config_path = getattr(args, "config", None) or os.environ.get("JUDGE_CONFIG")
    state_arg = getattr(args, "state", None)
    state_path = Path(state_arg).expanduser() if state_arg else Path(default_state_path())
    data_arg = getattr(args, "data_dir", None) or os.environ.get("JUDGE_DATA_DIR")
    return config_path, state_path, Path(data_arg).expanduser() if data_arg else None


def fail_mode_verdict(
    config: Config, call: HostCall, problem: str, hooks: list[Any] | None = None
) -> Verdict:
    """The answer when the selected hooks could not finish: any ``failMode: block`` (the
    default on PreToolUse) blocks with ``Hook error: <problem>``; else the call goes on
    and the user is told."""
    from judge.hooks.engine import Engine

    assert call.event is not None
    if hooks is None:
        hooks = Engine(config).selected_hooks(call.event, probe_context(call))
    if any(hook.fails_closed(call.event) for _, _, hook in hooks):
        warn(f"{problem}; blocking (failMode)")
        return Verdict(block=f"Hook error: {problem}")
    warn(f"{problem}; not blocking")
    return Verdict(notes=[f"{problem}; not checked"])


def unusable_setup(call: HostCall, problem: str) -> Verdict:
    """No usable configuration: a PreToolUse call is denied, the rest go on; said both ways."""
    if call.event == "PreToolUse":
        warn(f"{problem}; denying the tool call (fail closed)")
        return Verdict(block=f"judge policy check could not run ({problem}); fix the judge setup, then retry")
    warn(f"{problem}; not blocking")
    return Verdict(notes=[f"{problem}; not checked"])


def input_failure(
    dialect: Dialect, args: argparse.Namespace, exc: HostInputError, data: Any
) -> dict[str, Any] | None:
    """Unusable hook input. When its event is readable and judge has hooks for it (and its
    tool), their failMode decides (a PreToolUse call is denied); else it is only logged."""
    loose = data if isinstance(data, dict) else {}
    host_event = dialect.host_event_of(loose, getattr(args, "event", None))
    event = dialect.config_events.get(host_event or "") or exc.event
    config_path, _, _ = _paths(args)
    if host_event is None or event is None or not config_path:
        warn(f"{exc}; not blocking")
        return None
    call = HostCall(host_event=host_event, event=event, tool_name=dialect.tool_of(loose) or exc.tool)
    try:
        config = runnable(load_config(config_path))
    except (ConfigError, OSError) as problem:
        reason = f"{exc}, and the configuration {config_path} is unusable ({problem})"
        return dialect.render(call, unusable_setup(call, reason))
    hooks = config.every_hook_for(event)
    if call.tool_name is not None:
        hooks = [(level, i, hook) for level, i, hook in hooks if hook.matches(call.tool_name)]
    if not hooks:
        warn(f"{exc}; not blocking (no hook for it)")
        return None
    return dialect.render(call, fail_mode_verdict(config, call, str(exc), hooks))


def _judged(
    dialect: Dialect, call: HostCall, config: Config, args: argparse.Namespace, started: float, age: float
) -> Verdict:
    """``call`` evaluated within the deadline, its failures per failMode, its Stop bounded."""
    _, state_path, data_dir = _paths(args)
    rewrite = getattr(args, "rewrite", None)
    timeout = getattr(args, "timeout", None)
    seconds = deadline_seconds(timeout, started, age)

    async def judged() -> Verdict:
        verdict = await bounded(
            lambda: evaluate(dialect, call, config, state_path, data_dir, rewrite),
            lambda problem: fail_mode_verdict(config, call, problem),
            seconds,
            timeout,
        )
        return await bound_stops(dialect, call, verdict, state_path)

    try:
        with remembering(state_path.parent / MEMO_FILE):  # what servers lack, kept between calls
            return asyncio.run(judged())
    except ContextError as exc:
        return _hooks_failure(config, call, str(exc))
    except Exception as exc:  # an adapter failure (say, a damaged state file): per failMode
        return _hooks_failure(config, call, f"unexpected failure ({type(exc).__name__}: {exc})")


def _hooks_failure(config: Config, call: HostCall, problem: str) -> Verdict:
    try:
        return fail_mode_verdict(config, call, problem)
    except Exception:  # choosing the hooks failed too: the event's default
        return unusable_setup(call, problem)


def _respond(
    dialect: Dialect, args: argparse.Namespace, hook_text: str | HostInputError, started: float, age: float
) -> dict[str, Any] | None:
    data: dict[str, Any] | None = None
    try:
        if isinstance(hook_text, HostInputError):
            raise hook_text
        data = read_input(dialect, hook_text)
        call = dialect.parse(data, getattr(args, "event", None))
    except HostInputError as exc:
        return input_failure(dialect, args, exc, data)
    if call.event is None:  # a no-op, silently on stdout
        warn(f"event {call.host_event!r} is not handled; ignored")
        return None
    if call.skip is not None:
        warn(f"{call.skip}; not judged")
        return None
    config_path, state_path, _ = _paths(args)
    if not config_path:
        warn("no configuration: pass --config CONFIG or set JUDGE_CONFIG; not blocking")
        return None
    rewrite = getattr(args, "rewrite", None)
    if rewrite is not None and rewrite not in REWRITE_MODES:
        return dialect.render(
            call, unusable_setup(call, f"rewrite mode {rewrite!r} is not one of passthrough, allow")
        )
    try:
        config, note = session_configuration(config_path, state_path, call.session_id)
    except ConfigError as exc:
        for problem in exc.problems:
            warn(f"{config_path}: {problem}")
        first = exc.problems[0] if exc.problems else "invalid"
        return dialect.render(
            call, unusable_setup(call, f"invalid judge configuration {config_path}: {first}")
        )
    verdict = _judged(dialect, call, config, args, started, age)
    if note is not None:
        verdict.notes.append(note)
    return dialect.render(call, verdict)


def respond(
    dialect: Dialect, args: argparse.Namespace, hook_text: str | HostInputError, age: float | None = None
) -> Answer:
    """``judge <host>``'s answer to ``hook_text`` (or the reason there is none): the host's
    JSON on stdout, problems on stderr, exit code 0. ``age``: seconds already spent on
    this event, counted against ``--timeout`` (default: this process's age)."""
    started = time.monotonic()
    answer = Answer(prefix=f"judge {dialect.name}")
    with collecting(answer):
        answer.say(_respond(dialect, args, hook_text, started, process_age() if age is None else age))
    return answer
