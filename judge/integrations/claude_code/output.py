"""What ``judge claude-code`` prints: Claude Code's JSON answer for a judge decision.

* Stop / SubagentStop: a rejection sends the agent back - on Claude Code 2.1.163 and later
  as ``hookSpecificOutput.additionalContext`` (the agent reads the reason once, without
  judge's command line; no "stop hook problem" notice), before that as ``{"decision":
  "block", "reason": ...}`` (:mod:`~judge.integrations.claude_code.versions` picks); nothing
  lets it stop; every outcome but approved and rejected is told to the user in a
  ``systemMessage`` (``judge: Stop impossible: ...``, :func:`judge.hooks.outcomes.notice`).
* PreToolUse: a denial is ``hookSpecificOutput.permissionDecision: "deny"``; a rewrite is
  ``hookSpecificOutput.updatedInput``, handed over per the rewrite mode (below).
* PreToolUse, a hook answering ``permissionDecision: "ask"``: ``permissionDecision: "ask"``
  with its reason (the user confirms the call; headless sessions deny it).
* PreSkillShellCommand (a skill's shell command, judged by the PreToolUse hooks): a denial
  the same way; a rewrite or an ask cannot be applied there, so it becomes a denial saying so.
* PostToolUse: a block replaces the tool result through ``hookSpecificOutput.updatedToolOutput``
  (Claude Code 2.1.121 and later) with ``[Hook Blocked Tool Result] <reason>`` in the shape
  the tool's own output has, and also answers ``decision: "block"`` with the reason.
* PostToolUseFailure: ``decision: "block"`` with the reason (the failed result is an error
  text already; Claude Code offers no replacement for it).

Rewrite modes (``--rewrite`` / ``$JUDGE_CLAUDE_CODE_REWRITE``):

* ``passthrough`` (default): ``updatedInput`` without a permission decision — the rewrite
  applies and Claude Code's own permission flow (rules, mode, prompt) decides about the
  rewritten call exactly as it would have about the original: no prompt is skipped, and a
  headless session runs the rewrite whenever it would have run the original.
* ``ask``: ``permissionDecision: "ask"`` — the user always confirms the rewritten call;
  headless sessions (``claude -p``) cannot ask, so they deny it.
* ``allow``: ``permissionDecision: "allow"`` — the rewritten call runs without a permission
  prompt (Claude Code's deny and ask rules still apply). Skips prompts the user would have
  seen: opt in only where the judge configuration is the policy.
"""

from __future__ import annotations

import copy
from typing import Any

from judge.config import STOP_EVENTS
from judge.decision import Decision
from judge.hooks.outcomes import notice
from judge.integrations.claude_code.protocol import BLOCKED_RESULT_PREFIX, RewriteMode
from judge.integrations.claude_code.versions import StopForm
from judge.transcripts.claude_code_text import one_line

DEFAULT_BLOCK_REASON = "Blocked by judge"
DEFAULT_RESULT_BLOCK_REASON = "Tool result blocked by hook"
REWRITE_REASON = "judge rewrote the tool input"
#: Before a Stop rejection's reason when it reaches the agent as additional context (which
#: Claude Code shows without a "hook feedback" preamble).
CONTINUE_LEAD = (
    "Not finished yet: the Stop check (judge) sends you back to work. Address this, then stop again:"
)
#: Outcomes whose failed hooks the notice names (told by :func:`with_failures_told`).
FAILED_OUTCOMES = ("failed_open", "failed_closed")
ASK_REASON = "a judge hook asks you to confirm this call"
#: Failed hooks named in one systemMessage (the rest are counted).
MAX_FAILURES_TOLD = 3
#: Tools whose result the model sees as a fixed confirmation: nothing there to withhold.
FIXED_RESULT_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "TodoWrite"})


def _text_file_result(tool_input: Any, text: str) -> dict[str, Any]:
    path = tool_input.get("file_path", "") if isinstance(tool_input, dict) else ""
    lines = text.count("\n") + 1
    return {
        "type": "text",
        "file": {"filePath": path, "content": text, "numLines": lines, "startLine": 1, "totalLines": lines},
    }


def withheld_tool_output(tool_name: str | None, tool_input: Any, response: Any, text: str) -> Any | None:
    """``response`` with its visible content replaced by ``text``, in the tool's own shape.

    Claude Code ignores a replacement that does not match a built-in tool's output schema,
    so the original response is copied and only the fields the model reads are replaced.
    ``None``: no replacement is known for this tool's output (e.g. Write and Edit, whose
    result the model sees as a fixed confirmation).
    """
    if isinstance(response, str):
        return text
    if isinstance(response, list):  # MCP content blocks
        return [{"type": "text", "text": text}]
    if not isinstance(response, dict):
        return None
    if tool_name in FIXED_RESULT_TOOLS:
        return None
    out = copy.deepcopy(response)
    if tool_name == "Read":
        return _text_file_result(tool_input, text)
    if "stdout" in out:  # Bash, PowerShell
        out.update(stdout=text, stderr="", interrupted=False)
        if "isImage" in out:
            out["isImage"] = False
        out.pop("persistedOutputPath", None)
        out.pop("persistedOutputSize", None)
        return out
    if tool_name == "Grep":
        out.update(mode="content", content=text, numLines=text.count("\n") + 1, filenames=[], numFiles=0)
        return out
    if tool_name == "Glob":
        out.update(filenames=[text], numFiles=1, truncated=False)
        return out
    if tool_name == "WebSearch" and "results" in out:
        out["results"] = [text]
        return out
    if isinstance(out.get("result"), str):  # WebFetch
        out["result"] = text
        return out
    if isinstance(out.get("content"), list):  # Agent / Task, MCP {"content": [...]}
        out["content"] = [{"type": "text", "text": text}]
        return out
    if isinstance(out.get("content"), str):
        out["content"] = text
        return out
    return None


def blocked_result_text(reason: str) -> str:
    return f"{BLOCKED_RESULT_PREFIX} {reason}"


def _stop_output(decision: Decision, event: str, form: StopForm) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    if decision.decision == "block":
        reason = decision.reason or DEFAULT_BLOCK_REASON
        if form == "additionalContext":
            specific = {"hookEventName": event, "additionalContext": f"{CONTINUE_LEAD}\n{reason}"}
            out["hookSpecificOutput"] = specific
        else:
            out.update(decision="block", reason=reason)
    told = notice(decision)
    if decision.outcome in FAILED_OUTCOMES and any(h.error and h.effective for h in decision.hooks):
        told = None  # the failed hooks are named by with_failures_told, under this same head
    elif decision.outcome in FAILED_OUTCOMES:  # no hook to name: judge itself did not finish
        told = notice(decision, [decision.reason or "a hook could not decide"])
    if told is not None:
        out["systemMessage"] = f"judge: {told}"
    return out or None


def _pre_tool_use_output(decision: Decision, rewrite: RewriteMode) -> dict[str, Any] | None:
    specific: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if decision.decision == "block":
        specific["permissionDecision"] = "deny"
        specific["permissionDecisionReason"] = decision.reason or DEFAULT_BLOCK_REASON
        return {"hookSpecificOutput": specific}
    if decision.updated_input is not None:
        if rewrite != "passthrough":
            specific["permissionDecision"] = rewrite
            specific["permissionDecisionReason"] = REWRITE_REASON
        specific["updatedInput"] = decision.updated_input
    if decision.ask is not None:  # a hook wants the user to confirm: never skipped by a rewrite mode
        specific["permissionDecision"] = "ask"
        specific["permissionDecisionReason"] = decision.ask or ASK_REASON
    if decision.additional_context is not None:
        specific["additionalContext"] = decision.additional_context
    return {"hookSpecificOutput": specific} if len(specific) > 1 else None


def _skill_command_output(decision: Decision) -> dict[str, Any] | None:
    """A skill's shell command: denied, or let run (nothing printed). Claude Code applies no
    rewrite there (any ``updatedInput`` stops the command), so a rewrite is a denial that
    says what the policy wanted instead; additional context has no place in the answer."""
    reason = decision.reason or DEFAULT_BLOCK_REASON
    if decision.decision != "block" and decision.updated_input is None and decision.ask is None:
        return None
    if decision.decision != "block" and decision.updated_input is not None:
        reason = f"the policy would run it rewritten ({one_line(str(decision.updated_input), 300)}); "
        reason += "a skill's shell command cannot be rewritten"
    elif decision.decision != "block":
        reason = f"the policy asks you to confirm it ({decision.ask or ASK_REASON}); "
        reason += "Claude Code cannot ask about a skill's shell command"
    specific = {"hookEventName": "PreSkillShellCommand", "permissionDecision": "deny"}
    return {"hookSpecificOutput": {**specific, "permissionDecisionReason": reason}}


def _post_tool_use_output(
    decision: Decision, event: str, tool_name: str | None, tool_input: Any, response: Any
) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    specific: dict[str, Any] = {"hookEventName": event}
    if decision.decision == "block":
        reason = decision.reason or DEFAULT_RESULT_BLOCK_REASON
        out = {"decision": "block", "reason": reason}
        if event == "PostToolUse":
            replaced = withheld_tool_output(tool_name, tool_input, response, blocked_result_text(reason))
            if replaced is not None:
                specific["updatedToolOutput"] = replaced
    if decision.additional_context is not None:
        specific["additionalContext"] = decision.additional_context
    if len(specific) > 1:
        out["hookSpecificOutput"] = specific
    return out or None


def claude_code_output(
    decision: Decision,
    event: str,
    rewrite: RewriteMode = "passthrough",
    tool_name: str | None = None,
    tool_input: Any = None,
    tool_response: Any = None,
    stop_form: StopForm = "block",
) -> dict[str, Any] | None:
    """Claude Code's JSON answer for ``decision`` on Claude Code event ``event``
    (``stop_form``: how a Stop rejection continues the turn on this Claude Code).

    ``None`` means print nothing (allow).
    """
    if event in STOP_EVENTS:
        return _stop_output(decision, event, stop_form)
    if event == "PreToolUse":
        return _pre_tool_use_output(decision, rewrite)
    if event == "PreSkillShellCommand":
        return _skill_command_output(decision)
    return _post_tool_use_output(decision, event, tool_name, tool_input, tool_response)


def with_failures_told(
    out: dict[str, Any] | None, decision: Decision, notes: list[str] | None = None
) -> dict[str, Any] | None:
    """``out`` with a ``systemMessage`` naming each hook that could not decide (a provider
    down or timed out, a crashing script) and what its failMode made of it, and any other
    ``notes``, so a check that did not run is never silent — on an allow Claude Code would
    otherwise show nothing."""
    failed = [hook for hook in decision.hooks if hook.error is not None and hook.effective]
    notes = list(notes or [])
    if not failed and not notes:
        return out
    lines = [
        hook.failure_line(decision.event, "could not run", one_line(str(hook.error), 300)) for hook in failed
    ]
    if len(lines) > MAX_FAILURES_TOLD:
        lines = [*lines[:MAX_FAILURES_TOLD], f"and {len(lines) - MAX_FAILURES_TOLD} more"]
    if decision.outcome in FAILED_OUTCOMES:  # the outcome names them: "Stop failed_open: ..."
        lines = [notice(decision, lines) or ""]
    notes += lines
    told = dict(out or {})
    note = "judge: " + "; ".join(notes)
    told["systemMessage"] = f"{told['systemMessage']} {note}" if told.get("systemMessage") else note
    return told


def adapter_failure_output(event: str, problem: str) -> dict[str, Any]:
    """What Claude Code gets when the adapter cannot evaluate a configured event.

    PreToolUse fails closed (the call is denied with the reason); the other events go
    through, with a ``systemMessage`` so the user sees the setup is broken.
    """
    if event in ("PreToolUse", "PreSkillShellCommand"):
        return {
            "hookSpecificOutput": {
                "hookEventName": event,
                "permissionDecision": "deny",
                "permissionDecisionReason": f"judge policy check could not run ({problem}); "
                "fix the judge setup, then retry",
            }
        }
    return {"systemMessage": f"judge: {unchecked(event, problem)}"}


def unchecked(event: str, problem: str) -> str:
    """What the user reads when an event could not be checked and goes on (a Stop's
    outcome is then failed_open)."""
    return (
        f"{event} failed_open: {problem}; not checked" if event in STOP_EVENTS else f"{problem}; not checked"
    )


def with_note(output: dict[str, Any] | None, note: str | None) -> dict[str, Any] | None:
    """``output`` with ``note`` added to its ``systemMessage`` (the user sees it)."""
    if note is None:
        return output
    out = dict(output or {})
    told = out.get("systemMessage")
    out["systemMessage"] = f"{told}; {note}" if isinstance(told, str) and told else f"judge: {note}"
    return out
