"""The Claude Code adapter: rejection counting, output shapes, failure handling, rendering."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from judge.cli import main as cli_main
from judge.config import config_from_data
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.integrations.claude_code.adapter import ClaudeCodeInput, build_context, handle, parse_input
from judge.state import Store
from judge.transcripts.claude_code import last_assistant_text, render_claude_code_lines


def run_adapter(
    tmp_path: Path, payload: Any, config: Path | None, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("JUDGE_CONFIG", None)
    env["JUDGE_STATE"] = str(tmp_path / "state.sqlite")
    env.update(extra_env or {})
    args = [sys.executable, "-m", "judge", "claude-code"]
    if config is not None:
        args += ["--config", str(config)]
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(args, input=text, capture_output=True, text=True, env=env, timeout=60)


def write_config(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "judge.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def stop_payload(session: str, active: bool) -> dict[str, Any]:
    return {
        "session_id": session,
        "hook_event_name": "Stop",
        "stop_hook_active": active,
        "last_assistant_message": "I changed the parser.",
    }


# ---------------------------------------------------------------------------
# Stop rejection counting across processes (the fake provider always rejects)

ALWAYS_REJECT = {
    "hooks": {
        "Stop": [
            {
                "type": "prompt",
                "prompt": "Did the agent run the tests? $ARGUMENTS",
                "model": "fake:block:Run the test suite and report the result.",
                "maxRejections": 3,
                "repeats": 3,  # (the same answer each time: counted, not a stalled loop)
            }
        ]
    }
}


def test_rejections_counted_per_session_until_forced_stop(tmp_path: Path) -> None:
    config = write_config(tmp_path, ALWAYS_REJECT)
    store = Store(tmp_path / "state.sqlite")
    block = {"decision": "block", "reason": "Run the test suite and report the result."}

    first = run_adapter(tmp_path, stop_payload("s-1", False), config)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == block
    assert store.rejection_count("s-1") == 1

    # Another session keeps its own count.
    other = run_adapter(tmp_path, stop_payload("s-2", False), config)
    assert json.loads(other.stdout) == block
    assert store.rejection_count("s-2") == 1

    second = run_adapter(tmp_path, stop_payload("s-1", True), config)
    assert json.loads(second.stdout) == block
    assert store.rejection_count("s-1") == 2

    third = run_adapter(tmp_path, stop_payload("s-1", True), config)
    assert third.returncode == 0, third.stderr
    forced = json.loads(third.stdout)
    assert "decision" not in forced  # the stop goes through
    assert forced["systemMessage"] == (
        "judge: Stop forced: allowed after 3 rejection(s) (maxRejections reached). "
        "Unresolved: Run the test suite and report the result."
    )
    assert store.rejection_count("s-1") == 0  # the loop is over
    assert store.rejection_count("s-2") == 1


def test_stop_hook_active_false_resets_the_count(tmp_path: Path) -> None:
    config = write_config(tmp_path, ALWAYS_REJECT)
    store = Store(tmp_path / "state.sqlite")
    run_adapter(tmp_path, stop_payload("s-r", False), config)
    # The configuration may also come from JUDGE_CONFIG.
    run_adapter(tmp_path, stop_payload("s-r", True), None, {"JUDGE_CONFIG": str(config)})
    assert store.rejection_count("s-r") == 2
    # A fresh stop (the user spoke again): a new loop, not the third rejection.
    fresh = run_adapter(tmp_path, stop_payload("s-r", False), config)
    assert json.loads(fresh.stdout)["decision"] == "block"
    assert store.rejection_count("s-r") == 1


# ---------------------------------------------------------------------------
# PreToolUse output shape

DENY_RM = {
    "hooks": {
        "PreToolUse": [
            {
                "type": "command",
                "matcher": "Bash",
                "script": "#!/usr/bin/env python3\nimport json, sys\nctx = json.load(sys.stdin)\n"
                "if 'rm -rf' in ctx['tool_input'].get('command', ''):\n"
                "    sys.stderr.write('rm -rf is not allowed; delete files one by one')\n"
                "    sys.exit(2)\n",
            }
        ]
    }
}


def test_pre_tool_use_deny_shape(tmp_path: Path) -> None:
    config = write_config(tmp_path, DENY_RM)
    payload = {
        "session_id": "p-1",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf build/"},
        "tool_use_id": "toolu_01",
    }
    proc = run_adapter(tmp_path, payload, config)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "rm -rf is not allowed; delete files one by one",
        }
    }


async def test_pre_tool_use_allow_and_unmatched_tool_print_nothing(tmp_path: Path) -> None:
    config = config_from_data(DENY_RM)
    base = {"hook_event_name": "PreToolUse", "session_id": "p-1", "tool_name": "Bash"}
    allowed = ClaudeCodeInput.model_validate({**base, "tool_input": {"command": "ls"}})
    assert await handle(allowed, config, None) is None
    denied = ClaudeCodeInput.model_validate({**base, "tool_input": {"command": "rm -rf /"}})
    assert (await handle(denied, config, None) or {})["hookSpecificOutput"]["permissionDecision"] == "deny"
    other = ClaudeCodeInput.model_validate(
        {**base, "tool_name": "Read", "tool_input": {"command": "rm -rf /"}}
    )
    assert await handle(other, config, None) is None


# ---------------------------------------------------------------------------
# The adapter never wedges the agent on its own problems


@pytest.mark.parametrize(
    ("stdin", "config_kind", "message"),
    [
        ("this is not json", "valid", "not JSON"),
        ('["a list"]', "valid", "must be a JSON object"),
        ('{"session_id": "x"}', "valid", "hook_event_name"),
        (json.dumps(stop_payload("e-1", False)), "none", "no configuration"),
    ],
)
def test_adapter_problems_do_not_block(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    stdin: str,
    config_kind: str,
    message: str,
) -> None:
    config: Path | None = None
    if config_kind == "valid":
        config = write_config(tmp_path, ALWAYS_REJECT)
    elif config_kind == "invalid":
        bad = json.loads(json.dumps(ALWAYS_REJECT))
        bad["hooks"]["Stop"][0]["maxRejections"] = 99
        config = write_config(tmp_path, bad)
    monkeypatch.delenv("JUDGE_CONFIG", raising=False)
    monkeypatch.setenv("JUDGE_STATE", str(tmp_path / "state.sqlite"))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8"))))
    code = cli_main(["claude-code", *(["--config", str(config)] if config else [])])
    out, err = capsys.readouterr()
    assert code == 0
    assert out == ""
    assert message in err


def _run_with_invalid_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, payload: dict[str, object]
) -> int:
    bad = json.loads(json.dumps(ALWAYS_REJECT))
    bad["hooks"]["Stop"][0]["maxRejections"] = 99
    config = write_config(tmp_path, bad)
    monkeypatch.delenv("JUDGE_CONFIG", raising=False)
    monkeypatch.setenv("JUDGE_STATE", str(tmp_path / "state.sqlite"))
    stdin = json.dumps(payload)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8"))))
    return cli_main(["claude-code", "--config", str(config)])


def test_invalid_config_lets_a_stop_through_and_tells_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _run_with_invalid_config(tmp_path, monkeypatch, stop_payload("e-1", False))
    out, err = capsys.readouterr()
    assert code == 0
    answer = json.loads(out)
    assert "decision" not in answer
    assert "hooks.Stop[0].maxRejections" in answer["systemMessage"]
    assert "hooks.Stop[0].maxRejections" in err and "not blocking" in err


def test_invalid_config_denies_a_tool_call_fail_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = {
        "session_id": "e-2",
        "transcript_path": str(tmp_path / "none.jsonl"),
        "cwd": str(tmp_path),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
    }
    code = _run_with_invalid_config(tmp_path, monkeypatch, payload)
    out, err = capsys.readouterr()
    assert code == 0
    specific = json.loads(out)["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "hooks.Stop[0].maxRejections" in specific["permissionDecisionReason"]
    assert "fail closed" in err


# ---------------------------------------------------------------------------
# In-process: mapping and output shapes


class ScriptedJudge:
    def __init__(self, ok: bool, reason: str | None = None) -> None:
        self.ok = ok
        self.reason = reason
        self.requests: list[PromptRequest] = []

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        self.requests.append(request)
        return PromptVerdict(ok=self.ok, reason=self.reason, model="scripted")


def command(answer: dict[str, Any]) -> str:
    return f"cat > /dev/null; echo '{json.dumps(answer)}'"


async def test_post_tool_use_block_and_additional_context(tmp_path: Path) -> None:
    answer = {
        "decision": "block",
        "reason": "The output contains a secret.",
        "hookSpecificOutput": {"additionalContext": "Rotate the key."},
    }
    config = config_from_data(
        {"hooks": {"PostToolUse": [{"type": "command", "matcher": "Bash", "command": command(answer)}]}}
    )
    hook_input = ClaudeCodeInput(
        hook_event_name="PostToolUse",
        session_id="t-1",
        tool_name="Bash",
        tool_input={"command": "cat .env"},
        tool_response={"stdout": "KEY=abc", "stderr": ""},
    )
    out = await handle(hook_input, config, tmp_path / "state.sqlite", data_dir=tmp_path / "data")
    assert out == {
        "decision": "block",
        "reason": "The output contains a secret.",
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "updatedToolOutput": {
                "stdout": "[Hook Blocked Tool Result] The output contains a secret.",
                "stderr": "",
                "interrupted": False,
            },
            "additionalContext": "Rotate the key.",
        },
    }
    audit = [json.loads(line) for line in (tmp_path / "data" / "audit_log.jsonl").read_text().splitlines()]
    assert audit[-1]["tool_result"] == {"stdout": "KEY=abc", "stderr": ""}
    assert audit[-1]["decision"] == "block"


async def test_pre_tool_use_rewrite_is_passed_as_updated_input(tmp_path: Path) -> None:
    answer = {"decision": "allow", "hookSpecificOutput": {"updatedInput": {"command": "ls -la"}}}
    config = config_from_data(
        {"hooks": {"PreToolUse": [{"type": "command", "matcher": "*", "command": command(answer)}]}}
    )
    hook_input = ClaudeCodeInput(hook_event_name="PreToolUse", tool_name="Bash", tool_input={"command": "ls"})
    out = await handle(hook_input, config, None)
    # Default (passthrough): no permission decision, Claude Code's permission flow decides.
    assert out == {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "ls -la"}}
    }


async def test_prompt_hook_reads_rendered_transcript_and_plain_allow_prints_nothing(tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    lines = [
        {"type": "user", "sessionId": "s", "message": {"role": "user", "content": "Fix the flaky test"}},
        {
            "type": "assistant",
            "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "Fixed it."}]},
        },
    ]
    transcript.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    judge = ScriptedJudge(ok=True)
    config = config_from_data({"hooks": {"Stop": [{"prompt": "Complete? $ARGUMENTS"}]}})
    hook_input = ClaudeCodeInput(hook_event_name="Stop", session_id="s", transcript_path=str(transcript))
    seen: dict[str, str] = {}

    class Reading(ScriptedJudge):
        async def evaluate(self, request: PromptRequest) -> PromptVerdict:
            assert request.transcript_path is not None
            seen["text"] = request.transcript_path.read_text(encoding="utf-8")
            seen["final"] = request.context["final_output"]
            return await super().evaluate(request)

    judge = Reading(ok=True)
    out = await handle(hook_input, config, tmp_path / "state.sqlite", judge=judge)
    assert out is None
    assert "USER: Fix the flaky test" in seen["text"]
    assert seen["final"] == "Fixed it."


def test_build_context_maps_tool_response_to_tool_result() -> None:
    hook_input = parse_input(
        json.dumps(
            {
                "hook_event_name": "PostToolUse",
                "session_id": "s",
                "tool_name": "Write",
                "tool_input": {"file_path": "a.txt"},
                "tool_response": {"success": True},
                "agent_type": "reviewer",
                "tool_use_id": "toolu_9",
            }
        )
    )
    ctx = build_context(hook_input, None, None)
    assert ctx["tool_result"] == {"success": True}
    assert ctx["tool_succeeded"] is True
    assert ctx["agent_name"] == "reviewer"  # selects the custom agent's hooks
    assert ctx["tool_use_id"] == "toolu_9"
    assert "execution_summary" not in ctx


def test_build_context_passes_on_background_work_and_tool_details() -> None:
    stop = parse_input(
        json.dumps(
            {
                "hook_event_name": "Stop",
                "session_id": "s",
                "last_assistant_message": "Everything finished.",
                "background_tasks": [
                    {"id": "b1", "type": "shell", "status": "running", "command": "sleep 600; " + "x" * 5000}
                ],
                "session_crons": [],
            }
        )
    )
    ctx = build_context(stop, None, None)
    assert ctx["background_tasks"][0]["status"] == "running"
    assert len(ctx["background_tasks"][0]["command"]) <= 303  # clipped
    assert "session_crons" not in ctx  # empty: nothing to say
    call = parse_input(
        json.dumps(
            {
                "hook_event_name": "PostToolUse",
                "session_id": "s",
                "tool_name": "mcp__files__read",
                "tool_input": {},
                "tool_response": "ok",
                "agent_id": "a-7",
                "mcp_server": {"name": "files", "source": "plugin:files@market"},
                "duration_ms": 42,
                "background_tasks": {"not": "a list"},
            }
        )
    )
    ctx = build_context(call, None, None)
    assert ctx["agent_id"] == "a-7" and ctx["duration_ms"] == 42
    assert ctx["mcp_server"] == {"name": "files", "source": "plugin:files@market"}
    assert "background_tasks" not in ctx


def test_new_input_fields_of_an_unexpected_shape_do_not_make_the_input_unusable() -> None:
    odd = {"background_tasks": "three", "session_crons": 5, "mcp_server": [1], "duration_ms": "fast"}
    hook_input = parse_input(json.dumps({"hook_event_name": "Stop", "session_id": "s", **odd}))
    ctx = build_context(hook_input, None, "Done.")
    assert not set(odd) & set(ctx)


# ---------------------------------------------------------------------------
# Rendering details on crafted lines


def jl(*rows: Any) -> list[str]:
    return [json.dumps(r) if not isinstance(r, str) else r for r in rows]


def test_render_kinds() -> None:
    long_result = "\n".join(f"row {i}" for i in range(100))
    rows = jl(
        {"type": "summary", "summary": "Refactor the parser", "leafUuid": "x"},
        {"type": "file-history-snapshot", "snapshot": {}},
        "not json at all",
        {
            "type": "user",
            "isCompactSummary": True,
            "message": {"role": "user", "content": "Earlier: we did X"},
        },
        {
            "type": "system",
            "subtype": "compact_boundary",
            "compactMetadata": {"trigger": "auto", "preTokens": 9},
        },
        {
            "type": "system",
            "subtype": "api_error",
            "error": {"cause": {"code": "ECONNRESET"}},
            "retryAttempt": 2,
            "maxRetries": 10,
        },
        {"type": "progress", "data": {"type": "hook_progress", "hookEvent": "Stop"}},
        {
            "type": "assistant",
            "message": {
                "id": "a1",
                "content": [
                    {"type": "thinking", "thinking": "long " * 200},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}},
                ],
            },
        },
        {
            "type": "user",
            "message": {
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": long_result}
                ]
            },
        },
        {
            "type": "assistant",
            "isSidechain": True,
            "agentId": "ab1",
            "message": {"id": "s1", "content": [{"type": "text", "text": "subagent done"}]},
        },
        {"type": "assistant", "message": {"id": "a2", "content": [{"type": "text", "text": "Part one."}]}},
        {"type": "assistant", "message": {"id": "a2", "content": [{"type": "text", "text": "Part two."}]}},
    )
    text = "\n".join(render_claude_code_lines(rows))
    assert "SUMMARY (of another session, not this conversation): Refactor the parser" in text
    assert "[line 3: not JSON, skipped]" in text
    assert "COMPACTION SUMMARY (earlier conversation): Earlier: we did X" in text
    assert "conversation compacted (auto, 9 tokens before)" in text
    assert "API error ECONNRESET (retry 2/10)" in text
    assert "hook_progress" not in text and "snapshot" not in text
    thinking = next(line for line in text.splitlines() if "(thinking)" in line)
    assert len(thinking) < 400  # shown briefly
    assert 'TOOL CALL Bash [t1]: {"command": "pytest"}' in text
    assert "TOOL ERROR Bash [t1]: row 0" in text
    assert "row 14\n" in text and "row 15\n" not in text and "row 74\n" not in text
    assert "[... 60 lines omitted ...]\n    row 75" in text and text.count("row 99") == 1
    assert "[subagent ab1] ASSISTANT: subagent done" in text
    # The last main-thread message, its text blocks joined; the sidechain is not the answer.
    assert last_assistant_text(rows) == "Part one.\nPart two."
