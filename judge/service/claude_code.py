"""``POST /api/v2/claude-code``: Claude Code's own hook input in, its hook output out — the
endpoint of Claude Code's ``type: "http"`` hooks.

Claude Code posts the same JSON a command hook reads on stdin and reads a 2xx JSON answer
like a command hook's stdout, so this endpoint answers exactly as ``judge claude-code``
would (:mod:`judge.integrations.claude_code`: its input model, context mapping, answer
forms and fail modes), with the service's configuration, state and logs:

* the event is the payload's ``hook_event_name`` (every event ``judge claude-code``
  handles; any other event, ``SessionStart`` included, gets ``{}``, as the command prints
  nothing); ``agent_type`` names a custom agent as ``agent_name`` does; ``{}`` is also the
  answer when nothing is to be said;
* Stop counts per ``session_id`` (per subagent for SubagentStop) in the service's state
  store, one round at a time per session across replicas, ``stop_hook_active: false``
  starting a new loop;
* the transcript at ``transcript_path`` (``agent_transcript_path`` for a subagent) is read
  only inside ``--transcripts-dir``, through a private snapshot rendered for the request;
  elsewhere, or unreadable, the event is judged without it and the answer says so;
* ``?rewrite=passthrough|ask|allow`` is ``judge claude-code --rewrite``; ``?timeout=S`` its
  ``--timeout``: the answer comes by then, per the hooks' ``failMode``;
* unusable input, a state store that is down, a deadline: the selected hooks' ``failMode``
  decides and the answer says what was not checked (200: a Claude Code http hook that
  fails lets the tool call or the stop through);
* the bearer token as for every endpoint (Claude Code's ``headers`` and
  ``allowedEnvVars``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from judge.decision import Decision
from judge.errors import ApiError, ContextError, StateUnavailable
from judge.hooks.engine import Engine
from judge.hooks.gate import Gate
from judge.integrations.claude_code.answer import Answer, collecting, warn
from judge.integrations.claude_code.context import (
    SubagentOutputMissing,
    build_context,
    probe_context,
    session_key,
    transcript_source,
)
from judge.integrations.claude_code.failure import answer_for, fail_mode_output, input_failure
from judge.integrations.claude_code.output import with_failures_told
from judge.integrations.claude_code.protocol import (
    HANDLED_EVENTS,
    REWRITE_MODES,
    ClaudeCodeInput,
    InputError,
    RewriteMode,
    head_fields,
    parse_input,
)
from judge.service.bodies import json_response
from judge.service.endpoints import Service
from judge.service.files import confine_path, private_folder, remove_folder, snapshot_confined
from judge.state.session_lock import SessionBusy
from judge.transcripts.render_cache import RenderError, rendering

__all__ = ["MAX_TIMEOUT", "ClaudeCodeHooks"]
_log = logging.getLogger("judge.server")
#: Longest ``?timeout=`` (seconds), as ``judge claude-code --timeout``.
MAX_TIMEOUT = 3600.0
#: What ``input_failure`` calls the configuration in its messages.
CONFIG_LABEL = "the service's configuration"
#: How much of an oversized body is read for its event and tool.
HEAD_BYTES = 64 * 1024


class ClaudeCodeHooks:
    """The endpoint, bound to one :class:`~judge.service.endpoints.Service`."""

    def __init__(self, service: Service) -> None:
        self.service = service

    async def post(self, request: Request) -> Response:
        started = time.perf_counter()
        rewrite, seconds = _options(request)
        text = await _hook_text(request, self.service.settings.max_body)
        notes = Answer()
        with collecting(notes):
            output = await self._answer(text, rewrite, seconds, started)
        for line in notes.stderr:
            _log.warning("%s", line)
        return json_response(output if output is not None else {})

    async def _answer(
        self, text: str | InputError, rewrite: RewriteMode, seconds: float | None, started: float
    ) -> dict[str, Any] | None:
        try:
            if isinstance(text, InputError):
                raise text
            hook_input = parse_input(text)
        except InputError as exc:
            config = self.service.settings.config
            return input_failure(exc, CONFIG_LABEL, lambda path, session: config)
        if hook_input.hook_event_name not in HANDLED_EVENTS:
            return None  # SessionStart and the rest: nothing to say (the command prints nothing)
        try:
            engine = await self.service.engine_for(hook_input.agent_type)
        except StateUnavailable as exc:  # the custom agent's hooks cannot be looked up
            name = hook_input.agent_type
            raise ApiError(503, f"custom agent {name!r} could not be looked up: {exc}") from None
        hooks = engine.selected_hooks(hook_input.config_event, probe_context(hook_input))
        if not hooks:
            return None
        try:
            async with asyncio.timeout(seconds):
                return await self._judged(hook_input, engine, rewrite, started)
        except TimeoutError:
            problem = f"judge did not finish within its timeout of {seconds:g} s"
        except (StateUnavailable, SessionBusy) as exc:
            self.service.metrics.state_error()
            problem = str(exc)
        except (SubagentOutputMissing, ContextError) as exc:
            problem = str(exc)
        warn(problem)
        return fail_mode_output(hook_input, hooks, problem, rewrite)

    async def _judged(
        self, hook_input: ClaudeCodeInput, engine: Engine, rewrite: RewriteMode, started: float
    ) -> dict[str, Any] | None:
        """The gate's decision with the transcript (when it can be read) as Claude Code's answer."""
        folder = private_folder()
        try:
            source, unread = await asyncio.to_thread(self._snapshot, hook_input, folder)
            try:
                async with rendering(source) as (transcript, last_text):
                    decision = await self._decide(hook_input, engine, transcript, last_text)
            except RenderError as exc:
                unread = str(exc)
                decision = await self._decide(hook_input, engine, None, None)
        finally:
            remove_folder(folder)
        event = hook_input.config_event
        await self.service.record(event, hook_input.agent_type, hook_input.session_id, decision, started)
        judged = any(hook.type == "prompt" and hook.effective for hook in decision.hooks)
        notes = [f"{unread}; judged without it"] if unread and judged else []
        return with_failures_told(
            answer_for(decision, hook_input, rewrite), decision, [*notes, *decision.notes]
        )

    async def _decide(
        self, hook_input: ClaudeCodeInput, engine: Engine, transcript: Path | None, last_text: str | None
    ) -> Decision:
        key = session_key(hook_input)
        return await Gate(engine, self.service.store, self.service.audit).decide(
            hook_input.config_event,
            build_context(hook_input, transcript, last_text),
            session_id=key,
            new_loop=key is not None and not hook_input.stop_hook_active,
            stop_hook_active=hook_input.stop_hook_active,
        )

    def _snapshot(self, hook_input: ClaudeCodeInput, folder: Path) -> tuple[Path | None, str | None]:
        """The transcript to render (a private snapshot), or why there is none."""
        raw = transcript_source(hook_input)
        if raw is None:
            return None, None
        root = self.service.transcripts_root
        try:
            resolved = Path(confine_path(str(raw), root))
            assert root is not None  # (confine_path refuses a path without a root)
            return snapshot_confined(resolved, root, folder), None
        except ApiError as exc:
            why = exc.message.removeprefix("execution_summary: ")
            return None, f"transcript {raw} not read ({why})"


async def _hook_text(request: Request, limit: int) -> str | InputError:
    """The body as text, or the unusable-input error of a body over ``limit`` bytes (its
    event and tool still read from its start, so that their hooks' failMode decides)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            head = b"".join(chunks)[:HEAD_BYTES].decode("utf-8", errors="replace")
            return InputError(f"hook input larger than {limit} bytes", head_fields(head))
    return b"".join(chunks).decode("utf-8", errors="replace")


def _options(request: Request) -> tuple[RewriteMode, float | None]:
    """``?rewrite=`` and ``?timeout=`` (400 for anything else than their values)."""
    rewrite = request.query_params.get("rewrite", "passthrough")
    if rewrite not in REWRITE_MODES:
        raise ApiError(400, f"rewrite: must be one of {', '.join(REWRITE_MODES)}, got {rewrite[:40]!r}")
    raw = request.query_params.get("timeout")
    seconds = None
    if raw is not None:
        try:
            seconds = float(raw)
        except ValueError:
            seconds = -1.0
        if not 1 <= seconds <= MAX_TIMEOUT:
            raise ApiError(400, f"timeout: must be between 1 and {MAX_TIMEOUT:g} seconds, got {raw[:40]!r}")
    return rewrite, seconds  # type: ignore[return-value]
