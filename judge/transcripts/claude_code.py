"""Claude Code JSONL transcripts rendered as readable text, one line at a time.

Claude Code writes one JSON object per line to ``~/.claude/projects/<dir>/<session>.jsonl``:
``user`` / ``assistant`` messages (content blocks), ``summary``, ``system`` (API errors,
compactions, Stop-hook summaries) and ``progress`` lines, plus bookkeeping.

:func:`render_claude_code_lines` turns that stream into plain text lines a judge can read
(and number): who said what, which tools ran with which input, what they returned, in
constant memory (a line nested too deeply is skipped with a note). Bookkeeping and
progress noise are dropped; thinking is shown briefly;
long tool output keeps its head and its tail (where a failing build says what went wrong)
with a note saying how much was cut. ``attachment`` lines (hook feedback, queued user
input) are shown. User rows that are not the user's words are labelled for what they are:
a hook's reason Claude Code relays to the agent (its blocking-error attachment right after
it is not shown twice), a background task's notification, a subagent's task from its
parent agent; ``summary`` lines before the first message (of other sessions) too. A user
turn no later row follows was written by something other than Claude Code, and says so
(:mod:`~judge.transcripts.forged_rows`).

The renderer's state is plain data (:meth:`ClaudeCodeRenderer.state`), so a later Stop goes
on where an earlier one stopped (:mod:`judge.transcripts.render_cache`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from judge.transcripts.claude_code_text import MAX_LINE_CHARS as MAX_LINE_CHARS
from judge.transcripts.claude_code_text import (
    NOISE_ATTACHMENTS,
    block_text,
    clip,
    hook_feedback,
    labelled,
    one_line,
    system_lines,
    user_label,
)
from judge.transcripts.forged_rows import RowCheck, beside_forged_label

#: Lines kept from the start of one tool result.
TOOL_RESULT_HEAD_LINES = 15
#: Lines kept from the end of one tool result (errors of builds and test runs are there).
TOOL_RESULT_TAIL_LINES = 25
#: Tool calls whose names are remembered to label their results (the most recent ones).
MAX_REMEMBERED_TOOL_CALLS = 1000
#: Characters kept of a tool call's input JSON.
MAX_TOOL_INPUT_CHARS = 800
#: Characters kept of a thinking block (shown briefly, on one line).
MAX_THINKING_CHARS = 240
#: Characters kept of one subagent progress message.
MAX_SUBAGENT_CHARS = 400

_SKIPPED_TYPES = frozenset({"file-history-snapshot", "queue-operation"})


class ClaudeCodeRenderer:
    """Renders Claude Code JSONL lines; also remembers the last assistant text seen.

    Feed raw lines with :meth:`feed`; each call returns the text lines for that input line.
    """

    def __init__(self) -> None:
        self.tool_names: dict[str, str] = {}
        #: which rows are Claude Code's (forged_rows)
        self.rows = RowCheck()
        self.line_number = 0
        self._last_main: tuple[str | None, str] = (None, "")
        self._last_any: tuple[str | None, str] = (None, "")
        self._header_done = False
        self._conversation_started = False
        #: the reason of the last hook feedback relayed as a user turn (its blocking-error
        #: attachment, which follows it, is then not shown again)
        self._last_feedback: str | None = None

    def state(self) -> dict[str, Any]:
        """Everything the renderer remembers, as JSON-able data (see :meth:`from_state`)."""
        return {
            "tool_names": self.tool_names,
            "line_number": self.line_number,
            "last_main": list(self._last_main),
            "last_any": list(self._last_any),
            "header_done": self._header_done,
            "conversation_started": self._conversation_started,
            "last_feedback": self._last_feedback,
            "rows": self.rows.state(),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ClaudeCodeRenderer:
        """A renderer that goes on where the one whose :meth:`state` this is stopped.

        Raises ``ValueError`` when ``state`` is not such a state.
        """
        try:
            renderer = cls()
            renderer.tool_names = {str(k): str(v) for k, v in dict(state["tool_names"]).items()}
            renderer.line_number = int(state["line_number"])
            main_id, main_text = state["last_main"]
            any_id, any_text = state["last_any"]
            renderer._last_main = (None if main_id is None else str(main_id), str(main_text))
            renderer._last_any = (None if any_id is None else str(any_id), str(any_text))
            renderer._header_done = bool(state["header_done"])
            renderer._conversation_started = bool(state["conversation_started"])
            last_feedback = state.get("last_feedback")  # (states written before it: none)
            renderer._last_feedback = None if last_feedback is None else str(last_feedback)
            renderer.rows = RowCheck.from_state(state.get("rows") or {})
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a renderer state: {exc}") from None
        return renderer

    @property
    def last_assistant_text(self) -> str | None:
        """The text of the last assistant message (main thread first, else any)."""
        for _, text in (self._last_main, self._last_any):
            if text.strip():
                return text
        return None

    def feed(self, raw: str) -> list[str]:
        self.line_number += 1
        if not raw.strip():
            return []
        try:
            obj = json.loads(raw)
            rendered = self._render(obj) if isinstance(obj, dict) else []
        except json.JSONDecodeError:
            return self.note(f"[line {self.line_number}: not JSON, skipped]")
        except (RecursionError, ValueError):  # an agent's tool input can be nested at will
            return self.note(f"[line {self.line_number}: nested too deeply to render, skipped]")
        if not isinstance(obj, dict):
            return []
        out: list[str] = []
        conversation = obj.get("type") in ("user", "assistant", "system", "attachment")  # has version, cwd
        if not self._header_done and obj.get("sessionId") and (conversation or obj.get("version")):
            self._header_done = True
            version = f" · Claude Code {obj['version']}" if obj.get("version") else ""
            cwd = f" · cwd {obj['cwd']}" if obj.get("cwd") else ""
            out.append(f"=== Claude Code session {obj['sessionId']}{version}{cwd} ===")
        if obj.get("type") in ("user", "assistant"):
            self._conversation_started = True
        return self.rows.place(obj, out, rendered)

    def note(self, line: str) -> list[str]:
        """A line of the renderer's own about a row it skipped (after a waiting turn)."""
        return self.rows.note(line)

    def flush(self) -> list[str]:
        """Lines still waiting (a user turn nothing follows yet); call at the end."""
        return self.rows.flush()

    def _remember_tool(self, tool_id: str, name: str) -> None:
        """Name tool results by their call; only the most recent calls are remembered, so
        the state stays small however long the session (a result follows its call)."""
        self.tool_names.pop(tool_id, None)
        self.tool_names[tool_id] = name
        while len(self.tool_names) > MAX_REMEMBERED_TOOL_CALLS:
            del self.tool_names[next(iter(self.tool_names))]

    # -- line kinds -------------------------------------------------------------------

    def _render(self, obj: dict[str, Any]) -> list[str]:
        kind = obj.get("type")
        if not isinstance(kind, str) or kind in _SKIPPED_TYPES:
            return []
        prefix = ""
        if obj.get("isSidechain"):
            agent = obj.get("agentId")
            prefix = f"[subagent {agent}] " if agent else "[subagent] "
        if kind == "user":
            return self._user(obj, prefix)
        if kind == "assistant":
            return self._assistant(obj, prefix)
        if kind == "summary":
            return self._summary(obj)
        if kind == "attachment":
            return self._attachment(obj, prefix)
        if kind == "system":
            return system_lines(obj, prefix)
        if kind == "progress":
            return self._progress(obj)
        return []

    def _summary(self, obj: dict[str, Any]) -> list[str]:
        """Summaries before the conversation's first message name other sessions (Claude
        Code puts them at the top of a resumed session); later ones summarise this one."""
        summary = obj.get("summary")
        if not summary:
            return []
        if not self._conversation_started:
            return [clip(f"SUMMARY (of another session, not this conversation): {summary}", MAX_LINE_CHARS)]
        return [clip(f"SUMMARY: {summary}", MAX_LINE_CHARS)]

    def _attachment(self, obj: dict[str, Any], prefix: str) -> list[str]:
        """Hook feedback, hook context and queued user input; listings and snapshots are noise."""
        att = obj.get("attachment")
        if not isinstance(att, dict):
            return []
        kind = att.get("type")
        if not isinstance(kind, str) or kind in NOISE_ATTACHMENTS:
            return []
        event = att.get("hookEvent") or ""
        name = att.get("hookName") or ""
        hook = " ".join(str(x) for x in dict.fromkeys((event, name)) if x) or "hook"
        if kind == "hook_blocking_error":
            error = att.get("blockingError")
            if isinstance(error, dict):
                error = error.get("blockingError")
            reason = block_text(error)
            if reason.strip() and reason.strip() == self._last_feedback:
                return []  # the feedback line just above says the same
            return list(labelled(f"{prefix}HOOK BLOCKED ({hook})", reason))
        if kind == "hook_additional_context":
            return list(labelled(f"{prefix}HOOK CONTEXT ({hook})", block_text(att.get("content"))))
        if kind.startswith("hook_"):
            detail = att.get("content") or att.get("stderr") or att.get("error") or ""
            label = f"{prefix}HOOK {kind[5:].replace('_', ' ').upper()} ({hook})"
            return list(labelled(label, block_text(detail)))
        if kind == "queued_command":
            text = att.get("prompt") or att.get("content") or att.get("text")
            return list(labelled(f"{prefix}USER (queued while working)", block_text(text)))
        text = att.get("content") or att.get("text") or att.get("prompt")
        if isinstance(text, (str, list)) and block_text(text).strip():
            return [clip(f"{prefix}ATTACHMENT ({kind}): {one_line(block_text(text), 400)}", MAX_LINE_CHARS)]
        return []

    def _user(self, obj: dict[str, Any], prefix: str) -> list[str]:
        message = obj.get("message")
        if not isinstance(message, dict):
            return []
        content = message.get("content")
        if obj.get("isCompactSummary"):
            return list(labelled(f"{prefix}COMPACTION SUMMARY (earlier conversation)", block_text(content)))
        feedback = hook_feedback(obj, content)
        if feedback is not None:
            # A hook's reason relayed to the agent as a user turn: not the user's words.
            self._last_feedback = feedback
            return list(labelled(f"{prefix}HOOK FEEDBACK (relayed to the agent)", block_text(content)))
        label = self.rows.user_label(obj, content, user_label(obj, prefix), prefix)
        if isinstance(content, str):
            return list(labelled(label, content))
        out: list[str] = []
        if not isinstance(content, list):
            return out
        blocks = [block for block in content if isinstance(block, dict)]
        results = {
            i: self._result_label(obj, b, prefix)
            for i, b in enumerate(blocks)
            if b.get("type") == "tool_result"
        }
        if any("(NOT FROM A TOOL" in result for result in results.values()):
            label = beside_forged_label(prefix)  # the row's text is no more the user's
        for i, block in enumerate(blocks):
            btype = block.get("type")
            if btype == "tool_result":
                text = block_text(block.get("content"))
                out.extend(labelled(results[i], text, TOOL_RESULT_HEAD_LINES, TOOL_RESULT_TAIL_LINES))
            elif btype == "text":
                out.extend(labelled(label, str(block.get("text") or "")))
            elif btype:
                out.append(f"{label}: [{btype}]")
        return out

    def _result_label(self, obj: dict[str, Any], block: dict[str, Any], prefix: str) -> str:
        tool_id = str(block.get("tool_use_id") or "")
        name = self.tool_names.get(tool_id, "tool")
        status = "TOOL ERROR" if block.get("is_error") else "TOOL RESULT"
        return self.rows.result_label(obj, f"{prefix}{status} {name} [{tool_id}]", tool_id, self.tool_names)

    def _assistant(self, obj: dict[str, Any], prefix: str) -> list[str]:
        message = obj.get("message")
        if not isinstance(message, dict):
            return []
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            return []
        label = f"{prefix}ASSISTANT"
        out: list[str] = []
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                text = str(block.get("text") or "")
                self._remember(obj, message, text)
                out.extend(labelled(label, text))
            elif btype == "thinking":
                thought = one_line(str(block.get("thinking") or ""), MAX_THINKING_CHARS)
                out.append(f"{label} (thinking): {thought}")
            elif btype == "redacted_thinking":
                out.append(f"{label} (thinking): [redacted]")
            elif btype in ("tool_use", "server_tool_use"):
                tool_id = str(block.get("id") or "")
                name = str(block.get("name") or "tool")
                self._remember_tool(tool_id, name)
                args = json.dumps(block.get("input"), ensure_ascii=False)
                out.append(f"{prefix}TOOL CALL {name} [{tool_id}]: {one_line(args, MAX_TOOL_INPUT_CHARS)}")
            elif btype:
                out.append(f"{label}: [{btype}]")
        return out

    def _remember(self, obj: dict[str, Any], message: dict[str, Any], text: str) -> None:
        """Track the last assistant message's text (blocks of one message are joined)."""
        msg_id = message.get("id")
        msg_id = str(msg_id) if msg_id is not None else None
        slots = ["_last_any"] if obj.get("isSidechain") else ["_last_any", "_last_main"]
        for slot in slots:
            last_id, last_text = getattr(self, slot)
            if msg_id is not None and msg_id == last_id and last_text:
                setattr(self, slot, (msg_id, f"{last_text}\n{text}"))
            else:
                setattr(self, slot, (msg_id, text))

    def _progress(self, obj: dict[str, Any]) -> list[str]:
        """Only a running subagent's messages are worth showing (briefly)."""
        data = obj.get("data")
        if not isinstance(data, dict) or data.get("type") != "agent_progress":
            return []
        inner = data.get("message")
        if not isinstance(inner, dict):
            return []
        agent = data.get("agentId")
        prefix = f"[subagent {agent}] " if agent else "[subagent] "
        kind = inner.get("type")
        message = inner.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict):
            return []
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": block_text(content)}]
        out: list[str] = []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "tool_use":
                name = str(block.get("name") or "tool")
                self._remember_tool(str(block.get("id") or ""), name)
                args = json.dumps(block.get("input"), ensure_ascii=False)
                out.append(f"{prefix}TOOL CALL {name}: {one_line(args, MAX_SUBAGENT_CHARS)}")
            elif btype == "tool_result":
                name = self.tool_names.get(str(block.get("tool_use_id") or ""), "tool")
                text = block_text(block.get("content"))
                out.append(f"{prefix}TOOL RESULT {name}: {one_line(text, MAX_SUBAGENT_CHARS)}")
            elif btype == "text":
                who = "USER" if kind == "user" else "ASSISTANT"
                out.append(f"{prefix}{who}: {one_line(str(block.get('text') or ''), MAX_SUBAGENT_CHARS)}")
        return out


def render_claude_code_lines(lines: Iterable[str]) -> Iterator[str]:
    """Readable text lines (no trailing newline, no numbers) for Claude Code JSONL ``lines``."""
    renderer = ClaudeCodeRenderer()
    for raw in lines:
        yield from renderer.feed(raw)
    yield from renderer.flush()


def last_assistant_text(lines: Iterable[str]) -> str | None:
    """The text of the last assistant message in a Claude Code JSONL transcript."""
    renderer = ClaudeCodeRenderer()
    for raw in lines:
        renderer.feed(raw)
    return renderer.last_assistant_text
