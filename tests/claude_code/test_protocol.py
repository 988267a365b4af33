"""``judge claude-code`` against Claude Code's live hook protocol.

Inputs are shaped as Claude Code sends them (field names from its hooks reference);
outputs are asserted exactly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from judge.config import config_from_data
from judge.integrations.claude_code.adapter import ClaudeCodeInput, handle
from judge.integrations.claude_code.output import withheld_tool_output
from judge.integrations.claude_code.protocol import (
    CLAUDE_CODE_BLOCK_CAP,
    HANDLED_EVENTS,
    block_cap_warnings,
    claude_code_block_cap,
)
from tests.hooks.test_gate import Rejecter


def run_adapter(
    tmp_path: Path, payload: dict[str, Any], config: dict[str, Any] | None, *flags: str, **env_extra: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("JUDGE_CONFIG", None)
    env.pop("JUDGE_CLAUDE_CODE_REWRITE", None)
    env["JUDGE_STATE"] = str(tmp_path / "state.sqlite")
    env.update(env_extra)
    args = [sys.executable, "-m", "judge", "claude-code", *flags]
    if config is not None:
        path = tmp_path / "judge.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        args += ["--config", str(path)]
    return subprocess.run(
        args, input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=60
    )


def answer(obj: dict[str, Any]) -> str:
    """A command hook that prints ``obj``."""
    return f"cat > /dev/null; echo '{json.dumps(obj)}'"


BASH_PRE = {
    "session_id": "abc123",
    "transcript_path": "/nonexistent/abc123.jsonl",
    "cwd": "/home/user/my-project",
    "permission_mode": "default",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "rm -rf build", "description": "Clean", "timeout": 120000},
    "tool_use_id": "toolu_01ABC123",
}
REWRITE = {
    "hooks": {
        "PreToolUse": [
            {
                "type": "command",
                "matcher": "Bash",
                "command": answer({"hookSpecificOutput": {"updatedInput": {"command": "rm -rf ./build"}}}),
            }
        ]
    }
}


# -- 1. PreToolUse rewrites -------------------------------------------------------


def test_rewrite_defaults_to_passthrough_leaving_the_permission_flow_to_claude_code(tmp_path: Path) -> None:
    done = run_adapter(tmp_path, BASH_PRE, REWRITE)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "rm -rf ./build"}}
    }


@pytest.mark.parametrize("mode", ["ask", "allow"])
def test_rewrite_mode_ask_or_allow_sets_the_permission_decision(tmp_path: Path, mode: str) -> None:
    expected = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": mode,
            "permissionDecisionReason": "judge rewrote the tool input",
            "updatedInput": {"command": "rm -rf ./build"},
        }
    }
    by_flag = run_adapter(tmp_path, BASH_PRE, REWRITE, "--rewrite", mode)
    assert json.loads(by_flag.stdout) == expected
    by_env = run_adapter(tmp_path, BASH_PRE, REWRITE, JUDGE_CLAUDE_CODE_REWRITE=mode)
    assert json.loads(by_env.stdout) == expected


def test_unknown_rewrite_mode_in_the_environment_denies_fail_closed(tmp_path: Path) -> None:
    done = run_adapter(tmp_path, BASH_PRE, REWRITE, JUDGE_CLAUDE_CODE_REWRITE="yolo")
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "rewrite mode 'yolo' is not one of passthrough, ask, allow" in out["permissionDecisionReason"]


# -- 2. stop_hook_active ---------------------------------------------------------

REPORT_ACTIVE = {
    "hooks": {"Stop": [{"type": "command", "command": "grep -o '\"stop_hook_active\": [a-z]*' >&2; exit 2"}]}
}


@pytest.mark.parametrize("active", [True, False])
def test_claude_codes_stop_hook_active_reaches_the_hooks(tmp_path: Path, active: bool) -> None:
    payload = {
        "session_id": "abc123",
        "transcript_path": "/nonexistent.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": active,
        "last_assistant_message": "Done.",
    }
    done = run_adapter(tmp_path, payload, REPORT_ACTIVE)
    # Command-hook blocks are not counted, so judge's own count stays 0: only Claude Code's
    # flag can make the hook see true.
    assert json.loads(done.stdout) == {
        "decision": "block",
        "reason": f'"stop_hook_active": {"true" if active else "false"}',
    }


async def test_claude_code_fresh_subagent_stop_starts_a_new_loop(tmp_path: Path) -> None:
    hook = {"type": "prompt", "prompt": "judge", "maxRejections": 3, "repeats": 3}
    config = config_from_data({"hooks": {"SubagentStop": [hook]}})
    state = tmp_path / "state.db"

    def sub(active: bool) -> ClaudeCodeInput:
        return ClaudeCodeInput(
            hook_event_name="SubagentStop",
            session_id="s",
            agent_id="a1",
            stop_hook_active=active,
            last_assistant_message="todo",
        )

    outputs = [await handle(sub(active), config, state, judge=Rejecter()) for active in (False, True)]
    assert all(o is not None and o.get("decision") == "block" for o in outputs)
    # stop_hook_active false: a fresh stop, so this is the first rejection, not the forced third.
    fresh = await handle(sub(False), config, state, judge=Rejecter())
    assert fresh == {"decision": "block", "reason": "unfinished"}


# -- 3. PostToolUse blocks replace the tool output -------------------------------

MESSAGE = "[Hook Blocked Tool Result] secret"


@pytest.mark.parametrize(
    ("tool", "tool_input", "response", "expected"),
    [
        (
            "Bash",
            {"command": "cat .env"},
            {
                "stdout": "KEY=1",
                "stderr": "w",
                "interrupted": False,
                "isImage": False,
                "persistedOutputPath": "/x",
            },
            {"stdout": MESSAGE, "stderr": "", "interrupted": False, "isImage": False},
        ),
        (
            "Read",
            {"file_path": "/p/.env"},
            {
                "type": "text",
                "file": {"filePath": "/p/.env", "content": "KEY=1", "numLines": 1, "startLine": 1},
            },
            {
                "type": "text",
                "file": {
                    "filePath": "/p/.env",
                    "content": MESSAGE,
                    "numLines": 1,
                    "startLine": 1,
                    "totalLines": 1,
                },
            },
        ),
        (
            "Grep",
            {"pattern": "KEY"},
            {"mode": "files_with_matches", "filenames": ["/p/.env"], "numFiles": 1},
            {"mode": "content", "filenames": [], "numFiles": 0, "content": MESSAGE, "numLines": 1},
        ),
        (
            "Glob",
            {"pattern": "**/.env"},
            {"filenames": ["/p/.env"], "durationMs": 3, "numFiles": 1, "truncated": False},
            {"filenames": [MESSAGE], "durationMs": 3, "numFiles": 1, "truncated": False},
        ),
        (
            "WebFetch",
            {"url": "https://x"},
            {
                "bytes": 9,
                "code": 200,
                "codeText": "OK",
                "result": "page",
                "durationMs": 5,
                "url": "https://x",
            },
            {
                "bytes": 9,
                "code": 200,
                "codeText": "OK",
                "result": MESSAGE,
                "durationMs": 5,
                "url": "https://x",
            },
        ),
        (
            "WebSearch",
            {"query": "q"},
            {"query": "q", "results": ["a", {"tool_use_id": "t", "content": []}], "durationSeconds": 1.0},
            {"query": "q", "results": [MESSAGE], "durationSeconds": 1.0},
        ),
        (
            "Agent",
            {"prompt": "p"},
            {"status": "completed", "agentId": "a1", "content": [{"type": "text", "text": "found"}]},
            {"status": "completed", "agentId": "a1", "content": [{"type": "text", "text": MESSAGE}]},
        ),
        ("mcp__db__query", {}, [{"type": "text", "text": "rows"}], [{"type": "text", "text": MESSAGE}]),
        ("mcp__db__query", {}, "rows", MESSAGE),
        ("Write", {"file_path": "/p/a"}, {"type": "create", "filePath": "/p/a", "content": "x"}, None),
    ],
)
def test_withheld_output_keeps_each_tools_shape(
    tool: str, tool_input: Any, response: Any, expected: Any
) -> None:
    if tool == "Write":
        # Write's result is a fixed confirmation for the model: nothing to replace; the
        # block's reason still reaches Claude through decision/reason.
        response = {"type": "create", "filePath": "/p/a", "content": "x", "structuredPatch": []}
    assert withheld_tool_output(tool, tool_input, response, MESSAGE) == expected


def test_post_tool_use_block_replaces_a_read_result_end_to_end(tmp_path: Path) -> None:
    config = {
        "hooks": {
            "PostToolUse": [{"type": "command", "matcher": "Read", "command": "echo leaked >&2; exit 2"}]
        }
    }
    payload = {
        "session_id": "abc123",
        "transcript_path": "/nonexistent.jsonl",
        "cwd": "/p",
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": "/p/.env"},
        "tool_response": {
            "type": "text",
            "file": {"filePath": "/p/.env", "content": "KEY=1\n", "numLines": 1},
        },
        "tool_use_id": "toolu_01",
        "duration_ms": 3,
    }
    done = run_adapter(tmp_path, payload, config)
    text = "[Hook Blocked Tool Result] leaked"
    assert json.loads(done.stdout) == {
        "decision": "block",
        "reason": "leaked",
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "updatedToolOutput": {
                "type": "text",
                "file": {
                    "filePath": "/p/.env",
                    "content": text,
                    "numLines": 1,
                    "startLine": 1,
                    "totalLines": 1,
                },
            },
        },
    }


# -- 5. Claude Code's consecutive-block cap --------------------------------------


def test_block_cap_default_and_environment() -> None:
    assert CLAUDE_CODE_BLOCK_CAP == 8
    assert claude_code_block_cap({}) == 8
    assert claude_code_block_cap({"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "20"}) == 20
    assert claude_code_block_cap({"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "many"}) == 8


def test_block_cap_warnings_name_hooks_above_the_cap() -> None:
    config = config_from_data(
        {
            "hooks": {"Stop": [{"prompt": "a", "maxRejections": 9}, {"prompt": "b", "maxRejections": 10}]},
            "customAgents": {"rev": {"hooks": {"SubagentStop": [{"prompt": "c", "maxRejections": 25}]}}},
        }
    )
    warnings = block_cap_warnings(config, cap=8)
    assert len(warnings) == 2
    # 9 still takes effect: Claude Code overrides only the 9th block, at which judge forces the stop.
    assert warnings[0].startswith("hooks.Stop[1].maxRejections: 10 is above Claude Code's cap of 8")
    assert warnings[1].startswith("customAgents.rev.hooks.SubagentStop[0].maxRejections: 25")
    assert block_cap_warnings(config, cap=25) == []


# -- 6. PostToolUseFailure -------------------------------------------------------


def test_post_tool_use_failure_is_judged_and_audited_as_a_failed_post_tool_use(tmp_path: Path) -> None:
    script = (
        "#!/usr/bin/env python3\n"
        "import json, sys\n"
        "ctx = json.load(sys.stdin)\n"
        "if ctx['tool_succeeded'] is False and ctx['hook_event_name'] == 'PostToolUse':\n"
        "    print('failed: ' + ctx['tool_result'].splitlines()[0], file=sys.stderr)\n"
        "    sys.exit(2)\n"
    )
    config = {"hooks": {"PostToolUse": [{"type": "command", "matcher": "Bash", "script": script}]}}
    payload = {
        "session_id": "abc123",
        "transcript_path": "/nonexistent.jsonl",
        "cwd": "/p",
        "permission_mode": "default",
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": "npm test", "description": "Run test suite"},
        "tool_use_id": "toolu_01ABC123",
        "error": "Exit code 1\nError: Cannot find module 'express'",
        "is_interrupt": False,
        "duration_ms": 4187,
    }
    done = run_adapter(tmp_path, payload, config, "--data-dir", str(tmp_path / "data"))
    assert json.loads(done.stdout) == {"decision": "block", "reason": "failed: Exit code 1"}
    audit = [json.loads(x) for x in (tmp_path / "data" / "audit_log.jsonl").read_text().splitlines()]
    assert audit[-1]["is_error"] is True
    assert audit[-1]["tool_result"] == payload["error"]
    assert audit[-1]["tool_name"] == "Bash"
    assert audit[-1]["decision"] == "block"


# -- 7. Events judge does not handle are a no-op ---------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        {"hook_event_name": "WorktreeCreate", "session_id": "s", "cwd": "/p", "name": "feature-auth"},
        {"hook_event_name": "SessionStart", "session_id": "s", "source": "startup", "model": "claude"},
        {"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "hi"},
        {
            "hook_event_name": "Notification",
            "session_id": "s",
            "message": "m",
            "notification_type": "idle_prompt",
        },
        {"hook_event_name": "PermissionRequest", "session_id": "s", "tool_name": "Bash", "tool_input": {}},
    ],
)
@pytest.mark.parametrize("config", [REWRITE, {"hooks": "not a mapping"}])
def test_unhandled_events_print_nothing_and_exit_0(
    tmp_path: Path, payload: dict[str, Any], config: Any
) -> None:
    assert payload["hook_event_name"] not in HANDLED_EVENTS
    done = run_adapter(tmp_path, payload, config, "--timeout", "5")
    assert done.returncode == 0
    assert done.stdout == ""


# -- 9. SubagentStop of Claude Code before 2.0.42 --------------------------------


def _line(kind: str, text: str, sidechain: bool, agent: str | None = None, mid: str = "m") -> dict[str, Any]:
    row: dict[str, Any] = {
        "type": kind,
        "isSidechain": sidechain,
        "sessionId": "abc123",
        "message": {"id": mid, "role": kind, "content": [{"type": "text", "text": text}]},
    }
    if agent:
        row["agentId"] = agent
    return row


class Recording:
    def __init__(self) -> None:
        self.final: list[str] = []

    async def evaluate(self, request: Any) -> Any:
        from judge.hooks.judging import PromptVerdict

        self.final.append(request.context["final_output"])
        return PromptVerdict(ok=True, model="scripted")


async def test_old_subagent_stop_judges_the_subagents_sidechain_answer(tmp_path: Path) -> None:
    log = tmp_path / "abc123.jsonl"
    rows = [
        _line("user", "Look up the colour", False),
        _line("assistant", "Sub: green curry is the most popular.", True, mid="s1"),
        _line("assistant", "Main agent text, not the subagent's.", False, mid="m1"),
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = config_from_data({"hooks": {"SubagentStop": [{"prompt": "ok? $ARGUMENTS"}]}})
    hook_input = ClaudeCodeInput(
        hook_event_name="SubagentStop", session_id="abc123", transcript_path=str(log), stop_hook_active=False
    )
    judge = Recording()
    assert await handle(hook_input, config, tmp_path / "state.sqlite", judge=judge) is None
    assert judge.final == ["Sub: green curry is the most popular."]


@pytest.mark.parametrize("fail_mode", ["allow", "block"])
async def test_old_subagent_stop_without_subagent_output_says_so(tmp_path: Path, fail_mode: str) -> None:
    log = tmp_path / "abc123.jsonl"
    log.write_text(json.dumps(_line("assistant", "Main agent only.", False)) + "\n", encoding="utf-8")
    config = config_from_data(
        {"hooks": {"SubagentStop": [{"prompt": "ok? $ARGUMENTS", "failMode": fail_mode}]}}
    )
    hook_input = ClaudeCodeInput(
        hook_event_name="SubagentStop", session_id="abc123", transcript_path=str(log)
    )
    judge = Recording()
    out = await handle(hook_input, config, tmp_path / "state.sqlite", judge=judge)
    assert judge.final == []  # the main agent's text is never judged in its place
    assert out is not None
    problem = "cannot find the subagent's answer"
    if fail_mode == "allow":
        assert problem in out["systemMessage"]
    else:
        assert out["decision"] == "block" and problem in out["reason"]
