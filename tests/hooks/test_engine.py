"""Conformance table for the hook engine (the README's rules).

Each row is a config + a context -> the expected decision, reason, forcedStop,
rejectionCount, additionalContext and updatedInput. Command hooks are real bash
commands run in the sandbox; prompt hooks are answered by :class:`ScriptedJudge`,
whose behaviour is written in the hook's prompt text (``ok``, ``reject: <reason>``,
``reject``, ``impossible: <reason>``, ``error: <message>``, ``crash``, ``sleep``).

Behaviours that need more than one row (ordering, concurrency, short-circuit,
input rewriting, the gate's session count) follow the table as separate tests.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from judge.config import Hook, config_from_data
from judge.decision import Decision, Usage
from judge.errors import ContextError, HookError
from judge.hooks.engine import Engine, NoModelJudge
from judge.hooks.gate import Gate
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.logs.audit import SESSION_SUMMARIES, AuditLog
from judge.state import Store


class ScriptedJudge:
    """A PromptJudge whose verdict is spelled out in the hook's prompt text."""

    def __init__(self) -> None:
        self.seen: list[PromptRequest] = []

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        self.seen.append(request)
        text = (request.hook.prompt or "").strip()
        verb, _, arg = text.partition(":")
        usage = Usage(inputTokens=10, outputTokens=2)
        if verb == "ok":
            return PromptVerdict(ok=True, model="scripted", usage=usage)
        if verb == "reject":
            return PromptVerdict(ok=False, reason=arg.strip() or None, model="scripted", usage=usage)
        if verb == "blank":
            return PromptVerdict(ok=False, reason="   ", model="scripted", usage=usage)
        if verb == "impossible":
            return PromptVerdict(
                ok=False, reason=arg.strip() or None, impossible=True, model="scripted", usage=usage
            )
        if verb == "error":
            raise HookError(arg.strip())
        if verb == "crash":
            raise RuntimeError("boom")
        if verb == "sleep":
            await asyncio.sleep(float(arg or 10))
            return PromptVerdict(ok=True)
        raise AssertionError(f"unscripted prompt {text!r}")


# -- config and context builders --------------------------------------------------------


def says(obj: dict[str, Any]) -> str:
    """A bash command that prints ``obj`` as JSON and exits 0."""
    return "echo " + shlex.quote(json.dumps(obj))


def cmd(command: str, **options: Any) -> dict[str, Any]:
    return {"type": "command", "command": command, **options}


def prompt(behaviour: str, **options: Any) -> dict[str, Any]:
    return {"type": "prompt", "prompt": behaviour, **options}


def stop_ctx(count: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "Stop",
        "agent_name": "main",
        "current_turn": 3,
        "max_turns": 50,
        "final_output": "Done.",
        "stop_hook_active": count > 0,
        "stop_rejection_count": count,
        **extra,
    }


def post_ctx(tool: str = "Bash", **extra: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUse",
        "agent_name": "main",
        "tool_name": tool,
        "tool_input": {"command": "ls"},
        "tool_result": "a.txt",
        "tool_succeeded": True,
        **extra,
    }


def pre_ctx(tool: str = "Bash", tool_input: Any = None, **extra: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "agent_name": "main",
        "tool_name": tool,
        "tool_input": tool_input if tool_input is not None else {"command": "rm -rf /"},
        **extra,
    }


BLOCK_HIT = cmd(says({"decision": "block", "reason": "hit"}), matcher="PLACEHOLDER")


def matcher_row(matcher: str, tool: str, hit: bool) -> Row:
    hook = {**BLOCK_HIT, "matcher": matcher}
    return Row(
        f"matcher {matcher!r} vs {tool!r}",
        "PostToolUse",
        {"hooks": {"PostToolUse": [hook]}},
        post_ctx(tool),
        decision="block" if hit else "allow",
        reason="hit" if hit else None,
        n_hooks=1 if hit else 0,
    )


@dataclass
class Row:
    id: str
    event: str
    config: dict[str, Any]
    context: dict[str, Any]
    decision: str
    reason: str | None = None
    forced: bool = False
    count: int = 0
    additional_context: str | None = None
    updated_input: dict[str, Any] | None = None
    n_hooks: int | None = None
    hook_decisions: list[str] | None = None
    error_contains: list[str] = field(default_factory=list)
    #: Stop: the outcome (hooks/outcomes.py's table)
    outcome: str | None = None


REVIEWER_CONFIG: dict[str, Any] = {
    "hooks": {
        "Stop": [cmd("echo 'agent says no' >&2; exit 2")],
        "PostToolUse": [cmd(says({"hookSpecificOutput": {"additionalContext": "from agent"}}), matcher="*")],
    },
    "customAgents": {
        "reviewer": {
            "hooks": {
                "Stop": [cmd("echo 'reviewer says no' >&2; exit 2")],
                "PostToolUse": [
                    cmd(says({"hookSpecificOutput": {"additionalContext": "from reviewer"}}), matcher="Bash")
                ],
            }
        },
        "writer": {"hooks": {"Stop": [cmd("echo 'writer says no' >&2; exit 2")]}},
    },
}

ROWS: list[Row] = [
    # -- matchers: anchored ^(p)$, case-sensitive, * all, empty none ----------------------
    matcher_row("Bash", "Bash", True),
    matcher_row("Bash", "BashX", False),
    matcher_row("Bash", "XBash", False),
    matcher_row("Bash", "bash", False),
    matcher_row("Bash|Exec", "Exec", True),
    matcher_row("Bash|Exec", "Bash", True),
    matcher_row("Bash|Exec", "BashFoo", False),
    matcher_row("Bash|Exec", "FooExec", False),
    matcher_row("Execute.*", "ExecutePythonCode", True),
    matcher_row("Execute.*", "ReExecute", False),
    matcher_row("*", "AnyToolAtAll", True),
    matcher_row("", "Bash", False),
    matcher_row("(?i)bash", "BASH", True),
    # -- two levels: agent-level first, custom agent chosen by agent_name --------------------
    Row(
        "custom agent hooks run after agent-level ones",
        "Stop",
        REVIEWER_CONFIG,
        stop_ctx(agent_name="reviewer"),
        "block",
        reason="agent says no\nreviewer says no",
        hook_decisions=["block", "block"],
        outcome="rejected",
    ),
    Row(
        "another custom agent's hooks do not run",
        "Stop",
        REVIEWER_CONFIG,
        stop_ctx(agent_name="writer"),
        "block",
        reason="agent says no\nwriter says no",
        n_hooks=2,
        outcome="rejected",
    ),
    Row(
        "unknown agent_name: agent level only",
        "Stop",
        REVIEWER_CONFIG,
        stop_ctx(agent_name="nobody"),
        "block",
        reason="agent says no",
        n_hooks=1,
        outcome="rejected",
    ),
    Row(
        "custom agent's additionalContext comes last and wins",
        "PostToolUse",
        REVIEWER_CONFIG,
        post_ctx("Bash", agent_name="reviewer"),
        "allow",
        additional_context="from reviewer",
        n_hooks=2,
    ),
    Row(
        "custom agent's matcher still applies",
        "PostToolUse",
        REVIEWER_CONFIG,
        post_ctx("Read", agent_name="reviewer"),
        "allow",
        additional_context="from agent",
        n_hooks=1,
    ),
    # -- Stop: reasonless rejection is an approval -------------------------------------
    Row("stop: no hooks", "Stop", {"hooks": {}}, stop_ctx(), "allow", n_hooks=0, outcome="approved"),
    Row(
        'stop: command {"ok": false} without reason approves',
        "Stop",
        {"hooks": {"Stop": [cmd(says({"ok": False}))]}},
        stop_ctx(),
        "allow",
        hook_decisions=["allow"],
        outcome="approved",
    ),
    Row(
        'stop: command {"decision": "block"} without reason approves',
        "Stop",
        {"hooks": {"Stop": [cmd(says({"decision": "block"}))]}},
        stop_ctx(),
        "allow",
        hook_decisions=["allow"],
        outcome="approved",
    ),
    Row(
        "stop: blank reason approves",
        "Stop",
        {"hooks": {"Stop": [cmd(says({"decision": "block", "reason": "  \n "}))]}},
        stop_ctx(),
        "allow",
        outcome="approved",
    ),
    Row(
        "stop: null reason approves",
        "Stop",
        {"hooks": {"Stop": [cmd(says({"ok": False, "reason": None}))]}},
        stop_ctx(),
        "allow",
        outcome="approved",
    ),
    Row(
        "stop: prompt rejection without reason approves and is not counted",
        "Stop",
        {"hooks": {"Stop": [prompt("reject")]}},
        stop_ctx(1),
        "allow",
        count=1,
        outcome="approved",
    ),
    Row(
        "stop: prompt rejection with blank reason approves",
        "Stop",
        {"hooks": {"Stop": [prompt("blank")]}},
        stop_ctx(),
        "allow",
        outcome="approved",
    ),
    Row(
        "stop: empty stdout with exit 0 allows",
        "Stop",
        {"hooks": {"Stop": [cmd("true")]}},
        stop_ctx(),
        "allow",
        outcome="approved",
    ),
    Row(
        "stop: fenced JSON with whitespace is parsed",
        "Stop",
        {"hooks": {"Stop": [cmd('printf \'\\n ```json\\n{"ok": false, "reason": "fenced"}\\n```\\n\'')]}},
        stop_ctx(),
        "block",
        reason="fenced",
        outcome="rejected",
    ),
    # -- Stop: exit 2 always blocks -------------------------------------------------------
    Row(
        "stop: exit 2 blocks with stderr as the reason",
        "Stop",
        {"hooks": {"Stop": [cmd("echo 'Add the test results.' >&2; exit 2")]}},
        stop_ctx(),
        "block",
        reason="Add the test results.",
        outcome="rejected",
    ),
    Row(
        "stop: exit 2 with empty stderr gets the default reason",
        "Stop",
        {"hooks": {"Stop": [cmd("exit 2")]}},
        stop_ctx(),
        "block",
        reason="Blocked by hook (exit code 2)",
        outcome="rejected",
    ),
    Row(
        "stop: exit 2 ignores an approving stdout",
        "Stop",
        {"hooks": {"Stop": [cmd(says({"ok": True}) + "; exit 2")]}},
        stop_ctx(),
        "block",
        reason="Blocked by hook (exit code 2)",
        outcome="rejected",
    ),
    Row(
        "stop: command rejections are not counted and have no implicit limit",
        "Stop",
        {"hooks": {"Stop": [cmd(says({"ok": False, "reason": "still wrong"}))]}},
        stop_ctx(24),
        "block",
        reason="still wrong",
        count=24,
        outcome="rejected",
    ),
    Row(
        "stop: exit 2 blocks even with a huge count",
        "Stop",
        {"hooks": {"Stop": [cmd("echo nope >&2; exit 2", maxRejections=1)]}},
        stop_ctx(100),
        "block",
        reason="nope",
        count=100,
        outcome="rejected",
    ),
    # -- Stop: maxRejections (prompt hooks only, max over them) -------------------------
    Row(
        "stop: default max 3, first rejection sends back (count 1)",
        "Stop",
        {"hooks": {"Stop": [prompt("reject: Add tests.")]}},
        stop_ctx(0),
        "block",
        reason="Add tests.",
        count=1,
        outcome="rejected",
    ),
    Row(
        "stop: default max 3, second rejection sends back (count 2)",
        "Stop",
        {"hooks": {"Stop": [prompt("reject: Add tests.")]}},
        stop_ctx(1),
        "block",
        reason="Add tests.",
        count=2,
        outcome="rejected",
    ),
    Row(
        "stop: default max 3, third rejection is forced through with its reason",
        "Stop",
        {"hooks": {"Stop": [prompt("reject: Add tests.")]}},
        stop_ctx(2),
        "allow",
        reason="Add tests.",
        forced=True,
        count=3,
        hook_decisions=["block"],
        outcome="forced",
    ),
    Row(
        "stop: maxRejections 1 forces the first rejection",
        "Stop",
        {"hooks": {"Stop": [prompt("reject: no", maxRejections=1)]}},
        stop_ctx(0),
        "allow",
        reason="no",
        forced=True,
        count=1,
        outcome="forced",
    ),
    Row(
        "stop: the maximum over prompt hooks is used (2 and 5 -> 5)",
        "Stop",
        {"hooks": {"Stop": [prompt("reject: r1", maxRejections=2), prompt("ok", maxRejections=5)]}},
        stop_ctx(2),
        "block",
        reason="r1",
        count=3,
        outcome="rejected",
    ),
    Row(
        "stop: the maximum over prompt hooks forces at c+1 >= 5",
        "Stop",
        {"hooks": {"Stop": [prompt("reject: r1", maxRejections=2), prompt("ok", maxRejections=5)]}},
        stop_ctx(4),
        "allow",
        reason="r1",
        forced=True,
        count=5,
        outcome="forced",
    ),
    Row(
        "stop: a command hook's maxRejections is ignored",
        "Stop",
        {"hooks": {"Stop": [cmd("true", maxRejections=25), prompt("reject: r", maxRejections=2)]}},
        stop_ctx(1),
        "allow",
        reason="r",
        forced=True,
        count=2,
        outcome="forced",
    ),
    Row(
        "stop: a round where only a command hook rejects does not count",
        "Stop",
        {"hooks": {"Stop": [prompt("ok"), cmd("echo cmd >&2; exit 2")]}},
        stop_ctx(2),
        "block",
        reason="cmd",
        count=2,
        outcome="rejected",
    ),
    Row(
        "stop: forced round still reports every reason; a command block keeps blocking",
        "Stop",
        {"hooks": {"Stop": [prompt("reject: p"), cmd("echo c >&2; exit 2")]}},
        stop_ctx(2),
        "block",
        reason="p\nc",
        count=3,
        outcome="rejected",
    ),
    Row(
        "stop: a count above the limit still forces",
        "Stop",
        {"hooks": {"Stop": [prompt("reject: r")]}},
        stop_ctx(9),
        "allow",
        reason="r",
        forced=True,
        count=10,
        outcome="forced",
    ),
    Row(
        "stop: joined reasons in declared order, newline-separated",
        "Stop",
        {
            "hooks": {
                "Stop": [
                    cmd("sleep 0.3; echo first >&2; exit 2"),
                    prompt("reject: second"),
                    cmd("true"),
                    cmd(says({"decision": "block", "reason": "third"})),
                    cmd(says({"ok": False})),
                ]
            }
        },
        stop_ctx(0),
        "block",
        reason="first\nsecond\nthird",
        count=1,
        hook_decisions=["block", "block", "allow", "block", "allow"],
        outcome="rejected",
    ),
    Row(
        "subagent stop follows the stop rules",
        "SubagentStop",
        {"hooks": {"SubagentStop": [prompt("reject: more")]}},
        {**stop_ctx(2), "hook_event_name": "SubagentStop"},
        "allow",
        reason="more",
        forced=True,
        count=3,
        outcome="forced",
    ),
    # -- Stop: failMode for both hook types ---------------------------------------------------
    Row(
        "stop: command error, default failMode allow",
        "Stop",
        {"hooks": {"Stop": [cmd("echo oops >&2; exit 1")]}},
        stop_ctx(),
        "allow",
        error_contains=["command exited with code 1: oops"],
        outcome="failed_open",
    ),
    Row(
        "stop: command error, failMode block (not counted)",
        "Stop",
        {"hooks": {"Stop": [cmd("echo oops >&2; exit 1", failMode="block")]}},
        stop_ctx(1),
        "block",
        reason="Hook error: command exited with code 1: oops",
        count=1,
        outcome="failed_closed",
    ),
    Row(
        "stop: command exit 137, failMode block",
        "Stop",
        {"hooks": {"Stop": [cmd("exit 137", failMode="block")]}},
        stop_ctx(),
        "block",
        reason="Hook error: command exited with code 137",
        outcome="failed_closed",
    ),
    Row(
        "stop: command killed by SIGKILL, failMode block",
        "Stop",
        {"hooks": {"Stop": [cmd("kill -9 $$", failMode="block")]}},
        stop_ctx(),
        "block",
        reason="Hook error: command was killed by signal 9",
        outcome="failed_closed",
    ),
    Row(
        "stop: invalid JSON output is a hook error (allow)",
        "Stop",
        {"hooks": {"Stop": [cmd("echo 'looks fine to me'")]}},
        stop_ctx(),
        "allow",
        error_contains=["not valid JSON"],
        outcome="failed_open",
    ),
    Row(
        "stop: invalid JSON output is a hook error (block), never a pass",
        "Stop",
        {"hooks": {"Stop": [cmd("echo '{\"ok\": tru'", failMode="block")]}},
        stop_ctx(),
        "block",
        reason="Hook error: hook output is not valid JSON (Expecting value): '{\"ok\": tru'",
        outcome="failed_closed",
    ),
    Row(
        "stop: JSON without ok/decision is a hook error",
        "Stop",
        {"hooks": {"Stop": [cmd(says({"verdict": "fine"}), failMode="block")]}},
        stop_ctx(),
        "block",
        reason="Hook error: hook answer has neither 'ok' nor 'decision'",
        outcome="failed_closed",
    ),
    Row(
        "stop: prompt error, default failMode allow, not counted",
        "Stop",
        {"hooks": {"Stop": [prompt("error: provider down")]}},
        stop_ctx(1),
        "allow",
        count=1,
        error_contains=["provider down"],
        outcome="failed_open",
    ),
    Row(
        "stop: prompt error with failMode block counts as a rejection",
        "Stop",
        {"hooks": {"Stop": [prompt("error: provider down", failMode="block")]}},
        stop_ctx(0),
        "block",
        reason="Hook error: provider down",
        count=1,
        outcome="failed_closed",
    ),
    Row(
        "stop: prompt error with failMode block can force the stop",
        "Stop",
        {"hooks": {"Stop": [prompt("error: provider down", failMode="block")]}},
        stop_ctx(2),
        "allow",
        reason="Hook error: provider down",
        forced=True,
        count=3,
        outcome="forced",
    ),
    Row(
        "stop: an unexpected exception in the judge is a hook error",
        "Stop",
        {"hooks": {"Stop": [prompt("crash", failMode="block")]}},
        stop_ctx(),
        "block",
        reason="Hook error: RuntimeError: boom",
        count=1,
        outcome="failed_closed",
    ),
    Row(
        "stop: a prompt hook past its timeout is a hook error",
        "Stop",
        {"hooks": {"Stop": [prompt("sleep: 5", timeout=1, failMode="block")]}},
        stop_ctx(),
        "block",
        reason="Hook error: timed out after 1s",
        count=1,
        outcome="failed_closed",
    ),
    # -- PostToolUse ----------------------------------------------------------------------
    Row(
        "post: no matching hook allows",
        "PostToolUse",
        {"hooks": {"PostToolUse": [cmd("exit 2", matcher="Read")]}},
        post_ctx("Bash"),
        "allow",
        n_hooks=0,
    ),
    Row(
        "post: reasonless block gets the default reason",
        "PostToolUse",
        {"hooks": {"PostToolUse": [cmd(says({"decision": "block"}), matcher="*")]}},
        post_ctx(),
        "block",
        reason="Tool result blocked by hook",
    ),
    Row(
        'post: {"ok": false} without reason blocks (only Stop treats it as approval)',
        "PostToolUse",
        {"hooks": {"PostToolUse": [cmd(says({"ok": False}), matcher="*")]}},
        post_ctx(),
        "block",
        reason="Tool result blocked by hook",
    ),
    Row(
        "post: block with a reason",
        "PostToolUse",
        {
            "hooks": {
                "PostToolUse": [cmd(says({"decision": "block", "reason": "secret in output"}), matcher="*")]
            }
        },
        post_ctx(),
        "block",
        reason="secret in output",
    ),
    Row(
        "post: exit 2 blocks with stderr",
        "PostToolUse",
        {"hooks": {"PostToolUse": [cmd("echo leaked >&2; exit 2", matcher="*")]}},
        post_ctx(),
        "block",
        reason="leaked",
    ),
    Row(
        "post: last additionalContext wins; a hook without one does not reset it",
        "PostToolUse",
        {
            "hooks": {
                "PostToolUse": [
                    cmd(says({"hookSpecificOutput": {"additionalContext": "one"}}), matcher="*"),
                    cmd(
                        says({"decision": "allow", "hookSpecificOutput": {"additionalContext": "two"}}),
                        matcher="*",
                    ),
                    cmd(says({"decision": "allow"}), matcher="*"),
                ]
            }
        },
        post_ctx(),
        "allow",
        additional_context="two",
        n_hooks=3,
    ),
    Row(
        "post: every hook runs after a block; reasons joined",
        "PostToolUse",
        {
            "hooks": {
                "PostToolUse": [
                    cmd(says({"decision": "block", "reason": "a"}), matcher="*"),
                    cmd(says({"decision": "block"}), matcher="*"),
                ]
            }
        },
        post_ctx(),
        "block",
        reason="a\nTool result blocked by hook",
        hook_decisions=["block", "block"],
    ),
    Row(
        "post: hook error defaults to failMode allow",
        "PostToolUse",
        {"hooks": {"PostToolUse": [cmd("exit 3", matcher="*")]}},
        post_ctx(),
        "allow",
        error_contains=["command exited with code 3"],
    ),
    Row(
        "post: hook error with failMode block",
        "PostToolUse",
        {"hooks": {"PostToolUse": [cmd("exit 3", matcher="*", failMode="block")]}},
        post_ctx(),
        "block",
        reason="Hook error: command exited with code 3",
    ),
    Row(
        "post: prompt hook rejection blocks the result",
        "PostToolUse",
        {"hooks": {"PostToolUse": [prompt("reject: PII in result", matcher="Bash")]}},
        post_ctx(),
        "block",
        reason="PII in result",
    ),
    # -- PreToolUse -------------------------------------------------------------------------
    Row(
        "pre: first denial wins; the reason is the first denier's",
        "PreToolUse",
        {
            "hooks": {
                "PreToolUse": [
                    cmd(says({"decision": "allow"}), matcher="*"),
                    cmd(says({"decision": "deny", "reason": "BLOCKED: no rm"}), matcher="Bash"),
                    cmd(says({"decision": "block", "reason": "second"}), matcher="*"),
                ]
            }
        },
        pre_ctx(),
        "block",
        reason="BLOCKED: no rm",
        hook_decisions=["allow", "block"],
    ),
    Row(
        "pre: every hook must pass",
        "PreToolUse",
        {"hooks": {"PreToolUse": [cmd("true", matcher="*"), cmd(says({"ok": True}), matcher="*")]}},
        pre_ctx(),
        "allow",
        hook_decisions=["allow", "allow"],
    ),
    Row(
        "pre: reasonless denial gets the default reason",
        "PreToolUse",
        {"hooks": {"PreToolUse": [cmd(says({"ok": False}), matcher="*")]}},
        pre_ctx(),
        "block",
        reason="Tool call blocked by hook",
    ),
    Row(
        "pre: Claude Code permissionDecision deny",
        "PreToolUse",
        {
            "hooks": {
                "PreToolUse": [
                    cmd(
                        says(
                            {
                                "hookSpecificOutput": {
                                    "permissionDecision": "deny",
                                    "permissionDecisionReason": "not on main",
                                }
                            }
                        ),
                        matcher="*",
                    )
                ]
            }
        },
        pre_ctx(),
        "block",
        reason="not on main",
    ),
    Row(
        "pre: a rewrite is returned as updatedInput",
        "PreToolUse",
        {
            "hooks": {
                "PreToolUse": [
                    cmd(
                        says(
                            {
                                "decision": "allow",
                                "hookSpecificOutput": {"updatedInput": {"command": "ls -la"}},
                            }
                        ),
                        matcher="Bash",
                    )
                ]
            }
        },
        pre_ctx(),
        "allow",
        updated_input={"command": "ls -la"},
    ),
    Row(
        "pre: hook error fails closed by default",
        "PreToolUse",
        {"hooks": {"PreToolUse": [cmd("echo broken >&2; exit 1", matcher="*")]}},
        pre_ctx(),
        "block",
        reason="Hook error: command exited with code 1: broken",
    ),
    Row(
        "pre: invalid output fails closed by default",
        "PreToolUse",
        {"hooks": {"PreToolUse": [cmd("echo yes", matcher="*")]}},
        pre_ctx(),
        "block",
        reason="Hook error: hook output is not valid JSON (Expecting value): 'yes'",
    ),
    Row(
        "pre: explicit failMode allow overrides the closed default",
        "PreToolUse",
        {"hooks": {"PreToolUse": [cmd("exit 1", matcher="*", failMode="allow")]}},
        pre_ctx(),
        "allow",
        error_contains=["command exited with code 1"],
    ),
    Row(
        "pre: a prompt error fails closed by default",
        "PreToolUse",
        {"hooks": {"PreToolUse": [prompt("error: no key", matcher="*")]}},
        pre_ctx(),
        "block",
        reason="Hook error: no key",
    ),
]


def _check(row: Row, decision: Decision) -> None:
    out = decision.to_json()
    assert out.get("outcome") == row.outcome  # every Stop has one; tool events none
    assert (row.outcome is not None) == (row.event in ("Stop", "SubagentStop"))
    assert out["decision"] == row.decision
    assert out["reason"] == row.reason
    assert out["forcedStop"] is row.forced
    assert out["rejectionCount"] == row.count
    if row.additional_context is None:
        assert "hookSpecificOutput" not in out
    else:
        assert out["hookSpecificOutput"] == {
            "hookEventName": row.event,
            "additionalContext": row.additional_context,
        }
    if row.updated_input is None:
        assert "updatedInput" not in out
    else:
        assert out["updatedInput"] == row.updated_input
    if row.n_hooks is not None:
        assert len(out["hooks"]) == row.n_hooks
    if row.hook_decisions is not None:
        assert [h["decision"] for h in out["hooks"]] == row.hook_decisions
    errors = " | ".join(h["error"] or "" for h in out["hooks"])
    for needle in row.error_contains:
        assert needle in errors
    if not row.error_contains and "Hook error" not in (row.reason or ""):
        assert all(h["error"] is None for h in out["hooks"])


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
async def test_conformance(row: Row) -> None:
    engine = Engine(config_from_data(row.config), judge=ScriptedJudge())
    decision = await engine.evaluate(row.event, row.context)
    _check(row, decision)


# -- rules that need more than one observation ------------------------------------------------


def test_null_and_empty_matchers_match_nothing() -> None:
    assert Hook(type="command", command="true").matches("Bash") is False
    assert Hook(type="command", command="true", matcher="").matches("Bash") is False
    assert Hook(type="command", command="true", matcher="*").matches("") is True
    assert Hook(type="command", command="true", matcher="*").matches(None) is False


async def test_stop_hooks_run_concurrently_results_in_declared_order() -> None:
    config = config_from_data(
        {
            "hooks": {
                "Stop": [
                    cmd("sleep 1; echo slow >&2; exit 2"),
                    cmd("sleep 1; echo also-slow >&2; exit 2"),
                    cmd("echo fast >&2; exit 2"),
                ]
            }
        }
    )
    start = time.perf_counter()
    decision = await Engine(config, judge=ScriptedJudge()).evaluate("Stop", stop_ctx())
    elapsed = time.perf_counter() - start
    assert elapsed < 1.8, f"two 1 s hooks took {elapsed:.2f}s: not concurrent"
    assert decision.reason == "slow\nalso-slow\nfast"
    assert [h.index for h in decision.hooks] == [0, 1, 2]


async def test_post_tool_use_hooks_run_sequentially(hook_writable: Path) -> None:
    log = hook_writable / "order.log"
    config = config_from_data(
        {
            "hooks": {
                "PostToolUse": [
                    cmd(f"sleep 0.3; echo first >> {shlex.quote(str(log))}", matcher="*"),
                    cmd(f"echo second >> {shlex.quote(str(log))}", matcher="*"),
                ]
            }
        }
    )
    decision = await Engine(config, judge=ScriptedJudge()).evaluate("PostToolUse", post_ctx())
    assert decision.decision == "allow"
    assert log.read_text().split() == ["first", "second"]


async def test_post_tool_use_block_withholds_result_text() -> None:
    config = config_from_data(
        {
            "hooks": {
                "PostToolUse": [cmd(says({"decision": "block", "reason": "contains a key"}), matcher="*")]
            }
        }
    )
    decision = await Engine(config, judge=ScriptedJudge()).evaluate("PostToolUse", post_ctx())
    assert decision.blocked_tool_result == "[Hook Blocked Tool Result] contains a key"
    reasonless = config_from_data({"hooks": {"PostToolUse": [cmd(says({"ok": False}), matcher="*")]}})
    decision = await Engine(reasonless, judge=ScriptedJudge()).evaluate("PostToolUse", post_ctx())
    assert decision.blocked_tool_result == "[Hook Blocked Tool Result] Tool result blocked by hook"
    allowed = config_from_data({"hooks": {"PostToolUse": [cmd("true", matcher="*")]}})
    decision = await Engine(allowed, judge=ScriptedJudge()).evaluate("PostToolUse", post_ctx())
    assert decision.blocked_tool_result is None


async def test_pre_tool_use_first_denial_short_circuits(hook_writable: Path) -> None:
    marker = hook_writable / "later-hook-ran"
    config = config_from_data(
        {
            "hooks": {"PreToolUse": [cmd("echo 'BLOCKED: policy' >&2; exit 2", matcher="*")]},
            "customAgents": {
                "main": {"hooks": {"PreToolUse": [cmd(f"touch {shlex.quote(str(marker))}", matcher="*")]}}
            },
        }
    )
    decision = await Engine(config, judge=ScriptedJudge()).evaluate("PreToolUse", pre_ctx())
    assert decision.decision == "block"
    assert decision.reason == "BLOCKED: policy"
    assert len(decision.hooks) == 1
    assert not marker.exists()
    # Control: without the denial, the later hook does run (so the marker test can fail).
    allowing = config_from_data(
        {
            "hooks": {
                "PreToolUse": [
                    cmd("true", matcher="*"),
                    cmd(f"touch {shlex.quote(str(marker))}", matcher="*"),
                ]
            }
        }
    )
    decision = await Engine(allowing, judge=ScriptedJudge()).evaluate("PreToolUse", pre_ctx())
    assert decision.decision == "allow"
    assert marker.exists()


async def test_pre_tool_use_rewrite_is_seen_by_later_hooks() -> None:
    rewrite = says(
        {"decision": "allow", "hookSpecificOutput": {"updatedInput": {"command": "ls -la", "safe": True}}}
    )
    # The second hook reports the tool_input it received as additionalContext.
    echo_input = (
        "#!/usr/bin/env python3\n"
        "import json, sys\n"
        "ctx = json.load(sys.stdin)\n"
        "print(json.dumps({'hookSpecificOutput': {'additionalContext': json.dumps(ctx['tool_input'],"
        " sort_keys=True)}}))\n"
    )
    config = config_from_data(
        {
            "hooks": {
                "PreToolUse": [
                    cmd(rewrite, matcher="Bash"),
                    {"type": "command", "script": echo_input, "matcher": "*"},
                ]
            }
        }
    )
    decision = await Engine(config, judge=ScriptedJudge()).evaluate("PreToolUse", pre_ctx())
    out = decision.to_json()
    assert out["decision"] == "allow"
    assert out["updatedInput"] == {"command": "ls -la", "safe": True}
    assert json.loads(out["hookSpecificOutput"]["additionalContext"]) == {"command": "ls -la", "safe": True}


async def test_pre_tool_use_prompt_hook_sees_rewritten_input() -> None:
    judge = ScriptedJudge()
    rewrite = says({"hookSpecificOutput": {"updatedInput": {"command": "echo hi"}}})
    config = config_from_data(
        {"hooks": {"PreToolUse": [cmd(rewrite, matcher="*"), prompt("ok", matcher="*")]}}
    )
    decision = await Engine(config, judge=judge).evaluate("PreToolUse", pre_ctx())
    assert decision.updated_input == {"command": "echo hi"}
    assert judge.seen[0].context["tool_input"] == {"command": "echo hi"}


async def test_stop_hook_active_reflects_the_count() -> None:
    # The hook reports the stop_hook_active it received (the caller's value is overridden).
    report = "grep -o '\"stop_hook_active\": [a-z]*' >&2; exit 2"
    config = config_from_data({"hooks": {"Stop": [cmd(report)]}})
    engine = Engine(config, judge=ScriptedJudge())
    active = await engine.evaluate("Stop", {**stop_ctx(2), "stop_hook_active": False})
    assert active.reason == '"stop_hook_active": true'
    idle = await engine.evaluate("Stop", {**stop_ctx(0), "stop_hook_active": True})
    assert idle.reason == '"stop_hook_active": false'


async def test_prompt_hook_receives_context_transcript_and_models(tmp_path: Path) -> None:
    transcript = tmp_path / "t.txt"
    transcript.write_text("user: hi\n")
    judge = ScriptedJudge()
    config = config_from_data({"hooks": {"Stop": [prompt("ok")]}, "models": {"Fast": "fake:x"}})
    decision = await Engine(config, judge=judge).evaluate("Stop", stop_ctx(), transcript=transcript)
    assert decision.decision == "allow"
    request = judge.seen[0]
    assert request.transcript_path == transcript
    assert request.context["execution_summary"] == str(transcript)
    assert request.context["final_output"] == "Done."
    assert request.models == {"Fast": "fake:x"}
    assert decision.hooks[0].model == "scripted"
    assert decision.hooks[0].usage == Usage(inputTokens=10, outputTokens=2)


async def test_without_a_model_prompt_hooks_error_into_fail_mode() -> None:
    config = config_from_data({"hooks": {"Stop": [prompt("ok"), prompt("ok", failMode="block")]}})
    decision = await Engine(config, judge=NoModelJudge()).evaluate("Stop", stop_ctx())
    assert decision.decision == "block"
    assert decision.reason == "Hook error: no model configured for prompt hooks"
    assert [h.decision for h in decision.hooks] == ["allow", "block"]
    assert decision.hooks[0].error == "no model configured for prompt hooks"


async def test_unknown_event_and_malformed_context_raise_context_error() -> None:
    engine = Engine(config_from_data({"hooks": {}}), judge=ScriptedJudge())
    with pytest.raises(ContextError, match="unknown event 'Finish'"):
        await engine.evaluate("Finish", stop_ctx())
    with pytest.raises(ContextError, match="tool_name: Field required"):
        await engine.evaluate("PostToolUse", {"hook_event_name": "PostToolUse"})
    with pytest.raises(ContextError, match="hook_event_name is 'Stop' but the event is 'PreToolUse'"):
        await engine.evaluate("PreToolUse", stop_ctx())
    with pytest.raises(ContextError, match="context must be a JSON object, got list"):
        await engine.evaluate("Stop", [1, 2])  # type: ignore[arg-type]


async def test_unknown_context_fields_reach_hooks() -> None:
    judge = ScriptedJudge()
    config = config_from_data({"hooks": {"Stop": [prompt("ok")]}})
    await Engine(config, judge=judge).evaluate("Stop", stop_ctx(tenant="acme", trace=None))
    assert judge.seen[0].context["tenant"] == "acme"
    assert "trace" in judge.seen[0].context


# -- the gate: a session's count kept across calls --------------------------------------------


async def test_gate_keeps_the_count_per_session_until_forced(tmp_path: Path) -> None:
    judge = ScriptedJudge()
    # (the same answer each time: repeats keeps the loop from ending as stalled)
    config = config_from_data({"hooks": {"Stop": [prompt("reject: Add the summary.", repeats=25)]}})
    store = Store(tmp_path / "state.db")
    gate = Gate(Engine(config, judge=judge), store=store, audit=AuditLog(tmp_path / "data"))
    bare = {"hook_event_name": "Stop", "final_output": "Done."}  # the caller keeps no count

    results = [await gate.decide("Stop", bare, session_id="s1") for _ in range(4)]
    assert [(d.decision, d.rejection_count, d.forced_stop) for d in results] == [
        ("block", 1, False),
        ("block", 2, False),
        ("allow", 3, True),  # the third rejection ends the loop
        ("block", 1, False),  # the stop went through: a new loop starts
    ]
    seen = [(r.context["stop_rejection_count"], r.context["stop_hook_active"]) for r in judge.seen]
    assert seen == [(0, False), (1, True), (2, True), (0, False)]
    assert store.rejection_count("s1") == 1
    assert store.rejection_count("other") == 0
    summaries = [
        json.loads(line) for line in (tmp_path / "data" / SESSION_SUMMARIES).read_text().splitlines()
    ]
    assert [(s["session_id"], s["decision"], s["forcedStop"]) for s in summaries] == [
        ("s1", "block", False),
        ("s1", "block", False),
        ("s1", "allow", True),
        ("s1", "block", False),
    ]


async def test_gate_sessions_are_independent_and_context_session_id_is_used(tmp_path: Path) -> None:
    config = config_from_data({"hooks": {"Stop": [prompt("reject: more")]}})
    gate = Gate(Engine(config, judge=ScriptedJudge()), store=Store(tmp_path / "s.db"))
    a1 = await gate.decide("Stop", stop_ctx(session_id="a"))
    b1 = await gate.decide("Stop", stop_ctx(session_id="b"))
    a2 = await gate.decide("Stop", stop_ctx(session_id="a"))
    assert (a1.rejection_count, b1.rejection_count, a2.rejection_count) == (1, 1, 2)


async def test_gate_uses_the_larger_of_the_given_and_stored_counts(tmp_path: Path) -> None:
    config = config_from_data({"hooks": {"Stop": [prompt("reject: more", repeats=25)]}})
    store = Store(tmp_path / "s.db")
    gate = Gate(Engine(config, judge=ScriptedJudge()), store=store)
    first = await gate.decide("Stop", stop_ctx(0), session_id="s")
    assert (first.decision, first.rejection_count) == ("block", 1)
    # A caller claiming a higher count cannot extend the loop; a lower one cannot reset it.
    forced = await gate.decide("Stop", stop_ctx(2), session_id="s")
    assert (forced.decision, forced.forced_stop, forced.rejection_count) == ("allow", True, 3)
    store.set_rejection_count("s", 2)
    lower = await gate.decide("Stop", stop_ctx(0), session_id="s")
    assert (lower.forced_stop, lower.rejection_count) == (True, 3)


async def test_gate_approval_resets_and_command_blocks_keep_the_count(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    store.set_rejection_count("s", 1)
    blocking = config_from_data({"hooks": {"Stop": [cmd("echo no >&2; exit 2")]}})
    decision = await Gate(Engine(blocking, judge=ScriptedJudge()), store=store).decide(
        "Stop", stop_ctx(), session_id="s"
    )
    assert (decision.decision, decision.rejection_count) == ("block", 1)
    assert store.rejection_count("s") == 1
    approving = config_from_data({"hooks": {"Stop": [cmd("true")]}})
    decision = await Gate(Engine(approving, judge=ScriptedJudge()), store=store).decide(
        "Stop", stop_ctx(), session_id="s"
    )
    assert (decision.decision, decision.rejection_count) == ("allow", 0)  # the count after the reset
    assert store.rejection_count("s") == 0


async def test_gate_without_a_store_uses_the_callers_count() -> None:
    config = config_from_data({"hooks": {"Stop": [prompt("reject: more")]}})
    gate = Gate(Engine(config, judge=ScriptedJudge()))
    assert (await gate.decide("Stop", stop_ctx(1), session_id="s")).rejection_count == 2
    assert (await gate.decide("Stop", stop_ctx(1), session_id="s")).rejection_count == 2
    with pytest.raises(ContextError, match="context must be a JSON object"):
        await gate.decide("Stop", "not a dict")  # type: ignore[arg-type]


async def test_gate_concurrent_rounds_of_one_session_run_one_at_a_time(tmp_path: Path) -> None:
    arrived: list[int] = []
    inside = most = 0

    class SlowRejecter:
        async def evaluate(self, request: PromptRequest) -> PromptVerdict:
            nonlocal inside, most
            inside += 1
            most = max(most, inside)
            arrived.append(int(request.context["stop_rejection_count"]))
            for _ in range(20):  # let the other rounds run if they could
                await asyncio.sleep(0)
            inside -= 1
            return PromptVerdict(ok=False, reason="more")

    config = config_from_data({"hooks": {"Stop": [prompt("reject: more", maxRejections=25, repeats=25)]}})
    store = Store(tmp_path / "s.db")
    gate = Gate(Engine(config, judge=SlowRejecter()), store=store)
    decisions = await asyncio.gather(*(gate.decide("Stop", stop_ctx(), session_id="s") for _ in range(5)))
    assert all(d.decision == "block" for d in decisions)
    assert most == 1  # one round of the session at a time (the session lock)...
    assert arrived == [0, 1, 2, 3, 4]  # ...each starting from the count the last one stored
    assert sorted(d.rejection_count for d in decisions) == [1, 2, 3, 4, 5]
    assert store.rejection_count("s") == 5


async def test_a_failed_prompt_hook_still_reports_the_model_it_tried() -> None:
    class MissingKey:
        async def evaluate(self, request: PromptRequest) -> PromptVerdict:
            raise HookError("OPENAI_API_KEY is not set", model="openai:gpt-5.4-mini")

    config = config_from_data({"hooks": {"Stop": [{"prompt": "judge $ARGUMENTS"}]}})
    decision = await Engine(config, judge=MissingKey()).evaluate("Stop", stop_ctx())
    [hook] = decision.hooks
    assert hook.error == "OPENAI_API_KEY is not set"
    assert hook.model == "openai:gpt-5.4-mini"
    assert decision.decision == "allow" and hook.usage is None


async def test_a_rewrite_that_changes_nothing_is_no_rewrite() -> None:
    same = {"command": "ls -la", "description": "list"}
    reordered = {"description": "list", "command": "ls -la"}
    there, back = {"command": "ls"}, same
    cases = [
        ([cmd(says({"hookSpecificOutput": {"updatedInput": reordered}}), matcher="*")], None),
        (
            [
                cmd(says({"hookSpecificOutput": {"updatedInput": there}}), matcher="*"),
                cmd(says({"hookSpecificOutput": {"updatedInput": back}}), matcher="*"),
            ],
            None,  # rewritten and rewritten back: the call is the one the agent made
        ),
        (
            [cmd(says({"hookSpecificOutput": {"updatedInput": {**same, "timeout": 5}}}), matcher="*")],
            "changed",
        ),
        (
            [
                cmd(
                    says({"hookSpecificOutput": {"updatedInput": {"command": "ls -la", "description": 1}}}),
                    matcher="*",
                )
            ],
            "changed",
        ),
    ]
    for hooks, expected in cases:
        engine = Engine(config_from_data({"hooks": {"PreToolUse": hooks}}), judge=ScriptedJudge())
        out = (await engine.evaluate("PreToolUse", pre_ctx(tool_input=same))).to_json()
        assert out["decision"] == "allow"
        assert ("updatedInput" in out) == (expected == "changed"), hooks
