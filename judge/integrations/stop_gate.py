"""The Stop gate for a hand-written agent loop.

When the model produces what it means as its final answer, ask the gate::

    verdict = await stop_gate.check(answer, messages=messages)
    if verdict.stop:
        return answer
    messages.append(verdict.anthropic_message)   # or verdict.openai_message

A rejection comes back as ``continue`` with the reason and the user message to append
(Anthropic-style or OpenAI-style), so the loop can go round again. Rejections are counted
per session (in memory by default, or in a :class:`judge.state.Store` for durability), and
so is each loop's last rejection, so a loop ends honestly: at ``maxRejections`` (``stop``
with ``forced=True``), when the agent repeats its answer and the judge its reason
(``outcome == "stalled"``), when the judge finds the work impossible without the user
(``outcome == "impossible"``), or without judging while background tasks run
(``outcome == "deferred"``, when the context says so). Every verdict has the decision's
``outcome``; ``notice`` is what to tell the user for every outcome but approved and
rejected (the reason is in it).

When ``messages`` is given it is rendered to readable text in a private temporary file
(removed afterwards) that prompt hooks read as ``execution_summary``.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from judge.decision import Decision, StopOutcome
from judge.hooks.engine import Engine
from judge.hooks.gate import Gate, count_key
from judge.hooks.outcomes import notice
from judge.integrations.dispatcher import SessionFacts, log_problems, run_sync
from judge.state import StopMemory, Store

MessageStyle = Literal["anthropic", "openai"]

#: Text put before the gate's reason in the message sent back to the model.
FEEDBACK_PREFIX = "Your answer is not finished yet. Reviewer feedback:"
#: Characters kept of one tool input/result in the rendered transcript.
MAX_PART_CHARS = 4000


@dataclass(frozen=True)
class StopVerdict:
    """What the loop should do with its final answer."""

    stop: bool
    reason: str | None
    forced: bool
    rejection_count: int
    decision: Decision

    @property
    def action(self) -> Literal["stop", "continue"]:
        return "stop" if self.stop else "continue"

    @property
    def outcome(self) -> StopOutcome | None:
        """How the stop ended: approved, rejected, forced, impossible, stalled, deferred,
        failed_open or failed_closed."""
        return self.decision.outcome

    @property
    def notice(self) -> str | None:
        """What to tell the user (every outcome but approved and rejected), e.g.
        ``Stop impossible: the judge says this cannot be finished without you: ...``."""
        return notice(self.decision)

    @property
    def feedback(self) -> str | None:
        """The text the model is sent back with (``None`` when the loop should stop)."""
        if self.stop:
            return None
        return f"{FEEDBACK_PREFIX}\n{self.reason or 'Please continue.'}"

    @property
    def anthropic_message(self) -> dict[str, Any] | None:
        """The user message to append to an Anthropic Messages API conversation."""
        text = self.feedback
        return None if text is None else {"role": "user", "content": [{"type": "text", "text": text}]}

    @property
    def openai_message(self) -> dict[str, Any] | None:
        """The user message to append to an OpenAI Chat Completions conversation."""
        text = self.feedback
        return None if text is None else {"role": "user", "content": text}

    def message(self, style: MessageStyle) -> dict[str, Any] | None:
        return self.anthropic_message if style == "anthropic" else self.openai_message


# ---------------------------------------------------------------------------
# Message lists -> readable transcript text


def _clip(text: str, limit: int = MAX_PART_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… [+{len(text) - limit} chars]"


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [
            _text(b.get("text", b.get("content", ""))) if isinstance(b, dict) else _text(b) for b in value
        ]
        return "\n".join(p for p in parts if p)
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)


def _labelled(label: str, text: str) -> Iterator[str]:
    lines = text.split("\n") if text else [""]
    yield f"{label}: {lines[0]}"
    for line in lines[1:]:
        yield f"    {line}"


def _plain(value: Any) -> Any:
    """``value`` with the SDKs' objects as plain data: the official tool loops keep them in
    the message list (``messages.append(choice.message)``, ``{"content": response.content}``)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        with contextlib.suppress(Exception):
            value = dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def render_messages(messages: Sequence[Mapping[str, Any]]) -> Iterator[str]:
    """Readable lines for an Anthropic-style or OpenAI-style message list (dicts, or the
    SDKs' message objects)."""
    for raw in messages:
        message = _plain(raw)
        if not isinstance(message, Mapping):
            yield f"[a message judge cannot read: {type(raw).__name__}]"
            continue
        role = str(message.get("role") or "unknown").upper()
        content: Any = message.get("content")
        if role == "TOOL":  # OpenAI tool result
            yield from _labelled(f"TOOL RESULT [{message.get('tool_call_id', '')}]", _clip(_text(content)))
            continue
        if isinstance(content, list):
            for block in content:
                yield from _block_lines(role, block)
        elif content is not None:
            yield from _labelled(role, _text(content))
        for call in message.get("tool_calls") or []:  # OpenAI assistant tool calls
            if isinstance(call, Mapping):
                fn = call.get("function") or {}
                name = fn.get("name") if isinstance(fn, Mapping) else None
                call_args = fn.get("arguments") if isinstance(fn, Mapping) else None
                yield f"TOOL CALL {name} [{call.get('id', '')}]: {_clip(_text(call_args))}"


def _block_lines(role: str, block: Any) -> Iterator[str]:
    """One content block of an Anthropic-style message."""
    if isinstance(block, str):
        yield from _labelled(role, block)
        return
    if not isinstance(block, Mapping):
        yield f"{role}: [a content block judge cannot read: {type(block).__name__}]"
        return
    kind = block.get("type")
    if kind == "text":
        yield from _labelled(role, str(block.get("text") or ""))
    elif kind == "tool_use":
        args = _clip(json.dumps(block.get("input"), ensure_ascii=False, default=str))
        yield f"TOOL CALL {block.get('name')} [{block.get('id', '')}]: {args}"
    elif kind == "tool_result":
        status = "TOOL ERROR" if block.get("is_error") else "TOOL RESULT"
        yield from _labelled(f"{status} [{block.get('tool_use_id', '')}]", _clip(_text(block.get("content"))))
    elif kind == "thinking":
        thought = " ".join(str(block.get("thinking") or "").split())
        yield f"{role} (thinking): {_clip(thought, 240)}"
    elif kind:
        yield f"{role}: [{kind}]"


@contextlib.contextmanager
def transcript_file(messages: Sequence[Mapping[str, Any]] | None) -> Iterator[Path | None]:
    """The rendered ``messages`` in a private temp file, removed on exit."""
    if messages is None:
        yield None
        return
    fd, name = tempfile.mkstemp(prefix="judge-transcript-", suffix=".txt")
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as out:  # lone surrogates
            for line in render_messages(messages):
                out.write(line + "\n")
        yield path
    finally:
        with contextlib.suppress(OSError):
            path.unlink()


# ---------------------------------------------------------------------------


class StopGate:
    """Decides whether an agent loop may return its final answer.

    ``gate_or_engine`` evaluates the Stop hooks. ``trusted`` supplies the session id, agent
    name and other trusted facts; ``store`` keeps rejection counts durably (default: in
    memory, per session id).
    """

    def __init__(
        self,
        gate_or_engine: Gate | Engine,
        trusted: SessionFacts | None = None,
        *,
        store: Store | None = None,
        event: Literal["Stop", "SubagentStop"] = "Stop",
    ) -> None:
        if isinstance(gate_or_engine, Gate):
            self.gate = (
                gate_or_engine if store is None else Gate(gate_or_engine.engine, store, gate_or_engine.audit)
            )
        else:
            self.gate = Gate(gate_or_engine, store=store)
        self.trusted = trusted or SessionFacts()
        self.event = event
        self._counts: dict[str, int] = {}
        self._last: dict[str, StopMemory] = {}

    def rejection_count(self, session_id: str | None = None) -> int:
        """Rejections so far in the current loop of ``session_id``."""
        sid = self._sid(session_id)
        if self.gate.store is not None:
            stored = self.gate.store.rejection_count(count_key(self.event, sid))
            return max(self._counts.get(sid, 0), stored)
        return self._counts.get(sid, 0)

    def _sid(self, session_id: str | None) -> str:
        return session_id or self.trusted.session_id or "default"

    async def check(
        self,
        final_answer: str,
        messages: Sequence[Mapping[str, Any]] | None = None,
        *,
        session_id: str | None = None,
        current_turn: int | None = None,
        max_turns: int | None = None,
        background_tasks: Sequence[Any] | None = None,
    ) -> StopVerdict:
        """Judge ``final_answer``; ``messages`` (optional) is the conversation so far.
        ``background_tasks``: work the agent started that still runs (not empty: prompt hooks
        with ``backgroundTasks: defer`` are not run, and the verdict is ``deferred``)."""
        if messages is not None and (
            isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence)
        ):
            raise TypeError(
                "messages must be a list of message dicts (Anthropic or OpenAI style), "
                f"got {type(messages).__name__}"
            )
        sid = self._sid(session_id)
        count = self._counts.get(sid, 0)
        context: dict[str, Any] = {
            "hook_event_name": self.event,
            "final_output": final_answer,
            "stop_rejection_count": count,
            "stop_hook_active": count > 0,
        }
        if current_turn is not None:
            context["current_turn"] = current_turn
        if max_turns is not None:
            context["max_turns"] = max_turns
        if background_tasks is not None:
            context["background_tasks"] = list(background_tasks)
        context = self.trusted.merge_into(context)
        context["session_id"] = sid
        with transcript_file(messages) as transcript:
            decision = await self.gate.decide(
                self.event, context, transcript=transcript, session_id=sid, last_rejection=self._last.get(sid)
            )
        log_problems(self.event, decision)
        if decision.decision == "block":
            self._counts[sid] = decision.rejection_count
            if decision.stop_memory is not None:
                self._last[sid] = decision.stop_memory
        else:  # the loop ended: the next check starts a new one
            self._counts.pop(sid, None)
            self._last.pop(sid, None)
        return StopVerdict(
            stop=decision.decision == "allow",
            reason=decision.reason,
            forced=decision.forced_stop,
            rejection_count=decision.rejection_count,
            decision=decision,
        )

    def check_sync(
        self,
        final_answer: str,
        messages: Sequence[Mapping[str, Any]] | None = None,
        *,
        session_id: str | None = None,
        current_turn: int | None = None,
        max_turns: int | None = None,
        background_tasks: Sequence[Any] | None = None,
    ) -> StopVerdict:
        """:meth:`check` for synchronous loops."""
        return run_sync(
            self.check(
                final_answer,
                messages,
                session_id=session_id,
                current_turn=current_turn,
                max_turns=max_turns,
                background_tasks=background_tasks,
            )
        )
