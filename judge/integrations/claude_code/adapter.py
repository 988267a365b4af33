"""``judge claude-code``: the gate as a Claude Code command hook.

Claude Code runs the command with the hook input JSON on stdin and reads the answer from
stdout. This module maps that input to judge's hook context
(:mod:`~judge.integrations.claude_code.context`), evaluates it with
:class:`judge.hooks.gate.Gate`, and answers in Claude Code's output format
(:mod:`~judge.integrations.claude_code.output`): :func:`respond` returns the
:class:`~judge.integrations.claude_code.answer.Answer` that :mod:`judge.cli.claude_code`
writes.

The process always exits 0: Claude Code only reads the JSON answer reliably on exit 0, so
every block is expressed in JSON. Problems of the adapter itself are reported on stderr
and answered per the failMode of the hooks the call selects
(:mod:`~judge.integrations.claude_code.failure`): a PreToolUse call whose policy check
cannot run — unusable hook input, a damaged state file, an unexpected failure — is
**denied** with the reason, a Stop or PostToolUse goes on with a
``systemMessage`` unless a hook says ``failMode: block``; an invalid configuration denies
PreToolUse calls and lets the rest through with a ``systemMessage``. A hook that could
not decide (its model down or timed out, its script crashing) is answered per its
failMode and named in a ``systemMessage``, so a check that did not run is never silent.
With no configuration at all (no ``--config``, no ``JUDGE_CONFIG``) nothing is checked
and nothing is blocked. ``SessionStart`` pins the configuration the session is judged
by (:mod:`~judge.integrations.claude_code.pin`); events judge does not handle
(``WorktreeCreate``, ...) are a silent no-op: nothing on stdout, exit 0.

Deadline and signals: with ``--timeout SECONDS`` judge answers before that deadline by
itself, per the failMode of the hooks it was running (PreToolUse hooks fail closed by
default, so the call is denied) — Claude Code's own hook timeout, set above it by the
installer, would otherwise kill judge and let the tool run unchecked. On SIGTERM, SIGINT
or SIGHUP the evaluation is cancelled the same way: running hook commands (their whole
process groups) are killed and the rendered transcript copy is removed before exit.

Claude Code tells a Stop hook ``stop_hook_active: true/false``; the rejection count that
``maxRejections`` needs is kept here per ``session_id`` in a SQLite state file (``--state``,
``$JUDGE_STATE``, or ``$XDG_DATA_HOME/judge/state.sqlite`` /
``~/.local/share/judge/state.sqlite``). ``stop_hook_active: false`` starts a new loop, so
the count is reset then; hooks see ``stop_hook_active: true`` when Claude Code says so or
the count is above zero.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from judge.config import STOP_EVENTS, Config
from judge.errors import ConfigError, ContextError
from judge.hooks.judging import PromptJudge
from judge.integrations.claude_code.answer import PREFIX, Answer, collecting, warn
from judge.integrations.claude_code.config import session_configuration, start_session
from judge.integrations.claude_code.context import (
    SubagentOutputMissing,
    build_context,
    probe_context,
    session_key,
    transcript_source,
)
from judge.integrations.claude_code.failure import (
    adapter_failure,
    answer_for,
    checked_size,
    fail_mode_output,
    hooks_failure,
    input_failure,
    selected_hooks,
)
from judge.integrations.claude_code.fast_path import default_state_path as fast_default_state_path
from judge.integrations.claude_code.output import with_failures_told, with_note
from judge.integrations.claude_code.protocol import (
    DEFAULT_REWRITE_MODE,
    HANDLED_EVENTS,
    REWRITE_ENV,
    REWRITE_MODES,
    SESSION_START,
    ClaudeCodeInput,
    InputError,
    RewriteMode,
    parse_input,
)
from judge.llm.providers.features_memo import FILE_NAME as MEMO_FILE
from judge.llm.providers.features_memo import remembering
from judge.transcripts.render_cache import RenderError, rendering

__all__ = [
    "PREFIX",
    "ClaudeCodeInput",
    "answer_for",
    "build_context",
    "fail_mode_output",
    "handle",
    "parse_input",
    "respond",
    "selected_hooks",
]

T = TypeVar("T")
#: Signals that cancel an evaluation (hook children killed, temp files removed).
CANCEL_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def default_state_path() -> Path:
    """``$JUDGE_STATE``, else the per-user data dir (``$XDG_DATA_HOME`` or ``~/.local/share``);
    the same place the fast path looks for its config index."""
    return Path(fast_default_state_path())


async def handle(
    hook_input: ClaudeCodeInput,
    config: Config,
    state_path: Path | None,
    data_dir: Path | None = None,
    judge: PromptJudge | None = None,
    rewrite: RewriteMode = DEFAULT_REWRITE_MODE,
) -> dict[str, Any] | None:
    """Evaluate one Claude Code hook call; return the JSON to print (``None``: print nothing)."""
    from judge.hooks.engine import Engine
    from judge.hooks.gate import Gate
    from judge.logs.audit import AuditLog
    from judge.state import Store

    event = hook_input.config_event
    engine = Engine(config, judge=judge)
    hooks = engine.selected_hooks(event, probe_context(hook_input))
    if not hooks:
        return None  # nothing configured for this event/tool: no transcript work, no state
    stop = event in STOP_EVENTS
    key = session_key(hook_input)
    store = Store(state_path) if stop and key and state_path is not None else None
    # A fresh stop attempt (not a continuation we caused) starts a new rejection loop.
    new_loop = store is not None and not hook_input.stop_hook_active
    audit = AuditLog(data_dir) if data_dir is not None else None
    gate = Gate(engine, store=store, audit=audit)
    cache_dir = state_path.parent / "render-cache" if state_path is not None else None
    active = hook_input.stop_hook_active
    source = transcript_source(hook_input)
    unread = None if source is None or source.is_file() else f"transcript {source} not found"
    try:
        try:
            async with rendering(source, cache_dir) as (transcript, last_text):
                context = build_context(hook_input, transcript, last_text)
                decision = await gate.decide(
                    event, context, session_id=key, new_loop=new_loop, stop_hook_active=active
                )
        except RenderError as exc:
            warn(str(exc))
            unread = str(exc)
            context = build_context(hook_input, None, None)
            decision = await gate.decide(
                event, context, session_id=key, new_loop=new_loop, stop_hook_active=active
            )
    except SubagentOutputMissing as exc:
        warn(str(exc))
        return fail_mode_output(hook_input, hooks, str(exc), rewrite)
    for hook in decision.hooks:
        if hook.error:
            warn(f"{hook.level} {event}[{hook.index}] hook error: {hook.error}")
    # A judge that could not read the transcript decided on the final answer alone: say so.
    judged = any(hook.type == "prompt" and hook.effective for hook in decision.hooks)
    notes = [f"{unread}; judged without it"] if unread and judged else []
    for note in decision.notes:
        warn(note)
    notes += decision.notes
    return with_failures_told(answer_for(decision, hook_input, rewrite), decision, notes)


async def bounded(
    run: Callable[[], Coroutine[Any, Any, T]],
    on_failure: Callable[[str], T],
    seconds: float | None,
    timeout: float | None = None,
) -> T:
    """``run()`` under a deadline (``seconds``) and the cancelling signals;
    ``on_failure(problem)`` when either ends it. Cancellation unwinds the evaluation first:
    command hooks' process groups are killed and temporary files removed."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    received: list[str] = []

    def on_signal(sig: signal.Signals) -> None:
        received.append(sig.name)
        if task is not None:
            task.cancel()

    for sig in CANCEL_SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        async with asyncio.timeout(seconds):
            return await run()
    except TimeoutError:
        problem = f"judge did not finish within its --timeout of {timeout or seconds:g} s"
    except asyncio.CancelledError:
        if not received:
            raise
        problem = f"judge was stopped by {received[0]}"
    finally:
        for sig in CANCEL_SIGNALS:
            loop.remove_signal_handler(sig)
    return on_failure(problem)


async def run_bounded(
    hook_input: ClaudeCodeInput,
    config: Config,
    state_path: Path | None,
    data_dir: Path | None,
    rewrite: RewriteMode,
    seconds: float | None,
    timeout: float | None = None,
) -> dict[str, Any] | None:
    """:func:`handle` under :func:`bounded`: the fail-mode answer when the deadline or a
    signal ends it."""

    def failed(problem: str) -> dict[str, Any] | None:
        warn(problem)
        return fail_mode_output(hook_input, selected_hooks(config, hook_input), problem, rewrite)

    return await bounded(
        lambda: handle(hook_input, config, state_path, data_dir, rewrite=rewrite), failed, seconds, timeout
    )


def process_age() -> float:
    """Seconds since this process started (interpreter start-up included); 0 if unknown."""
    try:
        stat = Path("/proc/self/stat").read_text()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        ticks = int(stat.rsplit(")", 1)[1].split()[19])
        return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def deadline_seconds(timeout: float | None, started: float, age: float = 0.0) -> float | None:
    """Seconds left for the evaluation: ``--timeout`` minus what has passed since the
    process started (``age`` at ``started``), minus a margin for unwinding (killing hook
    children, removing files) and printing the answer."""
    if timeout is None:
        return None
    margin = max(0.3, min(1.0, timeout * 0.1))
    return max(0.05, timeout - age - (time.monotonic() - started) - margin)


def rewrite_mode(value: str | None) -> RewriteMode:
    """``--rewrite``, else ``$JUDGE_CLAUDE_CODE_REWRITE``, else ``passthrough``."""
    raw = (value or os.environ.get(REWRITE_ENV) or DEFAULT_REWRITE_MODE).strip()
    if raw == "ask":
        return "ask"
    if raw == "allow":
        return "allow"
    if raw == "passthrough":
        return "passthrough"
    raise ConfigError([f"rewrite mode {raw!r} is not one of {', '.join(REWRITE_MODES)}"])


def respond(args: argparse.Namespace, hook_text: str | InputError, age: float | None = None) -> Answer:
    """``judge claude-code``'s answer to the hook input ``hook_text`` (or the reason there is
    none): Claude Code's JSON on stdout, problems on stderr, exit code 0 (see the module
    docstring). ``age``: seconds the caller has spent on this event so far, counted against
    ``--timeout`` (default: this process's age)."""
    started = time.monotonic()
    answer = Answer()
    with collecting(answer):
        answer.say(_respond(args, hook_text, started, process_age() if age is None else age))
    return answer


def _respond(
    args: argparse.Namespace, hook_text: str | InputError, started: float, age: float
) -> dict[str, Any] | None:
    try:
        if isinstance(hook_text, InputError):
            raise hook_text
        hook_input = parse_input(checked_size(hook_text))
    except InputError as exc:
        config_path = getattr(args, "config", None) or os.environ.get("JUDGE_CONFIG")
        state_arg = getattr(args, "state", None)
        state = Path(state_arg).expanduser() if state_arg else default_state_path()

        def load(path: str, session: str | None) -> Config:  # the session's pinned configuration
            return session_configuration(path, state, session)[0]

        return input_failure(exc, config_path, load)
    event = hook_input.hook_event_name
    if event == SESSION_START:
        start_session(args, hook_input)
        return None
    if event not in HANDLED_EVENTS:
        # A no-op, silently on stdout: any output could break events such as WorktreeCreate.
        warn(f"event {event!r} is not handled (handled: {', '.join(HANDLED_EVENTS)}); ignored")
        return None
    config_path = getattr(args, "config", None) or os.environ.get("JUDGE_CONFIG")
    if not config_path:
        warn("no configuration: pass --config CONFIG or set JUDGE_CONFIG; not blocking")
        return None
    try:
        rewrite = rewrite_mode(getattr(args, "rewrite", None))
    except ConfigError as exc:
        return adapter_failure(event, exc.problems[0])
    state_arg = getattr(args, "state", None)
    state_path = Path(state_arg).expanduser() if state_arg else default_state_path()
    try:
        pinned = bool(getattr(args, "pinned", False))
        config, note = session_configuration(config_path, state_path, hook_input.session_id, pinned)
    except ConfigError as exc:
        for problem in exc.problems:
            warn(f"{config_path}: {problem}")
        first = exc.problems[0] if exc.problems else "invalid"
        return adapter_failure(event, f"invalid judge configuration {config_path}: {first}")
    data_arg = getattr(args, "data_dir", None) or os.environ.get("JUDGE_DATA_DIR")
    data_dir = Path(data_arg).expanduser() if data_arg else None
    timeout = getattr(args, "timeout", None)
    seconds = deadline_seconds(timeout, started, age)
    try:
        with remembering(state_path.parent / MEMO_FILE):  # what servers lack, kept between calls
            bounded = run_bounded(hook_input, config, state_path, data_dir, rewrite, seconds, timeout)
            output = asyncio.run(bounded)
    except ContextError as exc:
        return hooks_failure(hook_input, config, str(exc), rewrite, note)
    except Exception as exc:  # an adapter failure (say, a damaged state file): per failMode
        return hooks_failure(
            hook_input, config, f"unexpected failure ({type(exc).__name__}: {exc})", rewrite, note
        )
    return with_note(output, note)
