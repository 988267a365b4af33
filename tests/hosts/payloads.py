"""Hook inputs and session logs of the other hosts, as they send and write them.

Codex CLI 0.171, Gemini CLI 0.61 and Copilot CLI 1.0.102: captured from the real CLIs
(their fields and values as sent; paths and ids replaced). Cursor: written from Cursor's
hooks documentation (its agent cannot run here). Each function takes the folder the
paths should point into.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SESSION = "01a241bb-1637-7380-a99a-cb38763831a7"


def codex(event: str, root: Path, **more: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "session_id": SESSION,
        "turn_id": "01a241bb-1664-7243-97f8-83a67207673b",
        "transcript_path": str(root / "rollout.jsonl"),
        "cwd": str(root),
        "hook_event_name": event,
        "model": "gpt-5.5",
        "permission_mode": "bypassPermissions",
    }
    if event == "Stop":
        base.update(stop_hook_active=False, last_assistant_message="Wrote a.txt.")
    elif event in ("PreToolUse", "PostToolUse"):
        base.update(
            tool_name="Bash", tool_input={"command": "echo hello > a.txt && cat a.txt"}, tool_use_id="call_5"
        )
        if event == "PostToolUse":
            base["tool_response"] = "hello\n"
    return {**base, **more}


def gemini(event: str, root: Path, **more: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "session_id": "ce943689-1201-4369-b62b-2591c1274df9",
        "transcript_path": str(root / "session-2026-12-04T15-48-ce943689.jsonl"),
        "cwd": str(root),
        "hook_event_name": event,
        "timestamp": "2026-12-04T15:48:47.112Z",
    }
    if event == "AfterAgent":
        base.update(prompt="create a.txt", prompt_response="Wrote a.txt.", stop_hook_active=False)
    elif event in ("BeforeTool", "AfterTool"):
        base.update(
            tool_name="run_shell_command", tool_input={"command": "cat a.txt", "description": "show file"}
        )
        if event == "AfterTool":
            output = "<untrusted_context>\nOutput: hello\nProcess Group PGID: 30918\n</untrusted_context>"
            base["tool_response"] = {"llmContent": output, "returnDisplay": "hello"}
    return {**base, **more}


def copilot(event: str, root: Path, **more: Any) -> dict[str, Any]:
    """The VS Code compatible (PascalCase) form; :func:`copilot_native` the camelCase one."""
    base: dict[str, Any] = {
        "hook_event_name": event,
        "session_id": "88b17065-a6d8-4efc-958a-f77dfbd75aed",
        "timestamp": "2026-12-04T15:51:09.873Z",
        "cwd": str(root),
    }
    if event == "Stop":
        base.update(
            transcript_path=str(root / "events.jsonl"), stop_reason="end_turn", stop_hook_active=False
        )
    elif event in ("PreToolUse", "PostToolUse"):
        base.update(
            tool_name="Bash", tool_input={"command": "cat a.txt", "description": "show file", "mode": "sync"}
        )
        if event == "PostToolUse":
            result = "hello\n<shellId: 0 completed with exit code 0>"
            base["tool_result"] = {"result_type": "success", "text_result_for_llm": result}
    return {**base, **more}


def copilot_native(event: str, root: Path, **more: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "sessionId": "88b17065-a6d8-4efc-958a-f77dfbd75aed",
        "timestamp": 1796399469873,
        "cwd": str(root),
    }
    if event == "agentStop":
        base.update(transcriptPath=str(root / "events.jsonl"), stopReason="end_turn", stop_hook_active=False)
    elif event in ("preToolUse", "postToolUse"):
        base.update(
            toolName="bash", toolArgs={"command": "cat a.txt", "description": "show file", "mode": "sync"}
        )
        if event == "postToolUse":
            result = "hello\n<shellId: 0 completed with exit code 0>"
            base["toolResult"] = {"resultType": "success", "textResultForLlm": result}
    return {**base, **more}


def cursor(event: str, root: Path, **more: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "conversation_id": "cdefee2d-2727-4b73-bf77-d9d830f31d2a",
        "generation_id": "26b45fb6-bdea-439c-b2dc-5e97ee00ecea",
        "model": "claude-4.5-sonnet",
        "hook_event_name": event,
        "cursor_version": "3.9.16",
        "workspace_roots": [str(root)],
        "user_email": "user@example.com",
        "transcript_path": str(root / "agent-transcripts" / "cdefee2d.jsonl"),
    }
    if event == "stop":
        base.update(status="completed", loop_count=0)
    elif event in ("preToolUse", "postToolUse"):
        base.update(tool_name="Shell", tool_input={"command": "npm test", "cwd": str(root), "timeout": 30000})
        base.update(tool_use_id="toolu_01", cwd=str(root))
        if event == "postToolUse":
            base.update(tool_output=json.dumps({"output": "1 passed", "exitCode": 0}), duration=1200)
    return {**base, **more}


# ---------------------------------------------------------------------------
# Session logs


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def codex_rollout(path: Path, answer: str = "Wrote a.txt.") -> Path:
    def item(payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": "2026-12-04T15:45:09.698Z", "type": "response_item", "payload": payload}

    text = [{"type": "input_text", "text": "<permissions instructions>...</permissions instructions>"}]
    return write_jsonl(
        path,
        [
            {"timestamp": "2026-12-04T15:45:09.698Z", "type": "session_meta", "payload": {"id": SESSION}},
            item({"type": "message", "role": "developer", "content": text}),
            item(
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "create a.txt"}],
                }
            ),
            item(
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": '{"cmd": "echo LINKER-ERROR-7 > a.txt"}',
                    "call_id": "call_5",
                }
            ),
            {"timestamp": "2026-12-04T15:45:10Z", "type": "event_msg", "payload": {"type": "token_count"}},
            item(
                {
                    "type": "function_call_output",
                    "call_id": "call_5",
                    "output": "Process exited with code 0\n",
                }
            ),
            item(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": answer, "annotations": []}],
                }
            ),
        ],
    )


def gemini_chat(path: Path, answers: tuple[str, ...] = ("Wrote a.txt.",)) -> Path:
    rows: list[Any] = [
        {"sessionId": "ce943689", "projectHash": "603a", "startTime": "2026-12-04T15:46:37Z", "kind": "main"},
        {"$set": {"messages": [{"id": "m0", "type": "user", "content": [{"text": "create a.txt"}]}]}},
        {"id": "m1", "type": "gemini", "content": "", "thoughts": []},
        {
            "id": "m1",
            "type": "gemini",
            "content": "",
            "toolCalls": [
                {
                    "id": "t1",
                    "name": "run_shell_command",
                    "args": {"command": "echo LINKER-ERROR-7"},
                    "result": [{"functionResponse": {"id": "t1", "response": {"output": "LINKER-ERROR-7"}}}],
                    "status": "success",
                }
            ],
        },
        {
            "id": "m2",
            "type": "user",
            "content": [{"functionResponse": {"id": "t1", "response": {"output": "x"}}}],
        },
        {"$set": {"lastUpdated": "2026-12-04T15:48:24.128Z"}},
    ]
    for n, answer in enumerate(answers):
        rows.append({"id": f"a{n}", "type": "gemini", "content": answer, "thoughts": []})
        if n + 1 < len(answers):
            rows.append({"id": f"u{n}", "type": "user", "content": [{"text": "Check it again."}]})
    return write_jsonl(path, rows)


def copilot_events(path: Path, answer: str = "Wrote a.txt.") -> Path:
    def event(kind: str, data: dict[str, Any]) -> dict[str, Any]:
        return {"type": kind, "data": data, "id": kind, "timestamp": "2026-12-04T15:53:09.246Z"}

    request = {"toolCallId": "call_50", "name": "bash", "arguments": {"command": "echo LINKER-ERROR-7"}}
    return write_jsonl(
        path,
        [
            event("session.start", {"sessionId": "88b17065", "copilotVersion": "1.0.102"}),
            event("hook.start", {"hookType": "sessionStart", "input": {"source": "new"}}),
            event("user.message", {"content": "create a.txt", "transformedContent": "<current_datetime>..."}),
            event("system.message", {"role": "system", "content": "You are the GitHub Copilot CLI..."}),
            event("assistant.message", {"content": "", "toolRequests": [request]}),
            event(
                "tool.execution_complete",
                {"toolCallId": "call_50", "success": True, "result": {"content": "LINKER-ERROR-7"}},
            ),
            event("assistant.message", {"content": answer, "toolRequests": []}),
            event("assistant.turn_end", {"turnId": "0"}),
        ],
    )
