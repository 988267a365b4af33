"""``POST /api/v2/claude-code`` (Claude Code's ``type: "http"`` hooks) through a real socket:
Claude Code's own hook input in, the answer ``judge claude-code`` would print out, with the
service's state (Stop counts per session), transcripts only inside ``--transcripts-dir``,
the deadline of ``?timeout=`` and the token."""

from __future__ import annotations

import argparse
import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge.integrations.claude_code.adapter import respond
from judge.integrations.claude_code.failure import hook_text
from tests.service.test_service import Service

TOKEN = "claude-code-token"
CONFIG = """
hooks:
  Stop:
    - type: prompt
      model: "fake:block:Run the tests."
      maxRejections: 2
      repeats: 2  # the agent repeats one answer on purpose
      prompt: "Done? $ARGUMENTS"
  SubagentStop:
    - type: command
      script: |
        #!/usr/bin/env python3
        import json, sys
        ctx = json.load(sys.stdin)
        text = open(ctx["execution_summary"]).read() if ctx.get("execution_summary") else "(none)"
        print(json.dumps({"decision": "block", "reason": "saw: " + text.strip().splitlines()[-1]}))
  PreToolUse:
    - type: command
      matcher: Bash
      command: "if grep -q 'rm -rf'; then echo 'destructive command' >&2; exit 2; fi"
    - type: command
      matcher: Slow
      command: "sleep 30"
"""
PRE = {
    "hook_event_name": "PreToolUse",
    "session_id": "h1",
    "tool_name": "Bash",
    "tool_input": {"command": "rm -rf /"},
}


def stop(session: str, active: bool = False) -> dict[str, Any]:
    return {
        "hook_event_name": "Stop",
        "session_id": session,
        "stop_hook_active": active,
        "last_assistant_message": ".",
    }


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Service, Path]]:
    root = tmp_path_factory.mktemp("cchttp")
    (root / "transcripts").mkdir()
    (root / "agent.yaml").write_text(CONFIG)
    args = ["--config", str(root / "agent.yaml"), "--data-dir", str(root / "data")]
    args += ["--transcripts-dir", str(root / "transcripts")]
    started = Service(root, args, env={"JUDGE_API_TOKEN": TOKEN}).start()
    yield started, root
    assert started.stop() == 0


def post(service: Service, body: Any, query: str = "", raw: bytes | None = None) -> tuple[int, Any]:
    return service.request("POST", f"/api/v2/claude-code{query}", body, raw=raw, token=TOKEN)


def in_process(root: Path, payload: Any, tmp_path: Path) -> Any:
    """What ``judge claude-code`` prints for the same input and configuration."""
    args = argparse.Namespace(config=str(root / "agent.yaml"), state=str(tmp_path / "state.sqlite"))
    text = payload if isinstance(payload, str) else json.dumps(payload)
    answer = respond(args, hook_text(text.encode()))
    return json.loads(answer.stdout) if answer.stdout else {}  # (nothing printed: {})


@pytest.mark.parametrize(
    "payload",
    [
        PRE,
        {**PRE, "tool_input": {"command": "ls"}},
        {**PRE, "tool_name": "Read"},
        stop("same-1"),
        '{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": 7}',
        {"hook_event_name": "SessionStart", "session_id": "h1", "source": "startup"},
        {"hook_event_name": "WorktreeCreate", "session_id": "h1"},
    ],
    ids=["deny", "allow", "no hook", "stop", "unusable input", "session start", "not handled"],
)
def test_the_answer_is_what_judge_claude_code_prints(
    service: tuple[Service, Path], payload: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served, root = service
    monkeypatch.delenv("JUDGE_CONFIG", raising=False)
    raw = payload.encode() if isinstance(payload, str) else None
    status, answer = post(served, None if raw else payload, raw=raw)
    assert status == 200
    assert answer == in_process(root, payload, tmp_path)


def test_stop_counts_are_kept_per_session_in_the_service_state(service: tuple[Service, Path]) -> None:
    served, _ = service
    first = post(served, stop("count-1"))[1]
    assert first["decision"] == "block"
    forced = post(served, stop("count-1", active=True))[1]  # maxRejections: 2
    assert "decision" not in forced and "Stop forced: allowed after 2 rejection(s)" in forced["systemMessage"]
    assert post(served, stop("count-2"))[1]["decision"] == "block"  # another session: its own count


def test_transcripts_are_read_only_inside_the_transcripts_dir(service: tuple[Service, Path]) -> None:
    served, root = service
    line = {
        "type": "assistant",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "INSIDE"}]},
    }
    inside = root / "transcripts" / "s.jsonl"
    inside.write_text(json.dumps(line) + "\n")
    outside = root / "outside.jsonl"
    outside.write_text(json.dumps(line).replace("INSIDE", "OUTSIDE") + "\n")
    sub = {"hook_event_name": "SubagentStop", "session_id": "t1", "stop_hook_active": False}
    sub["last_assistant_message"] = "done"
    seen = post(served, {**sub, "transcript_path": str(inside)})[1]
    assert seen["decision"] == "block" and "INSIDE" in seen["reason"]
    unseen = post(served, {**sub, "session_id": "t2", "transcript_path": str(outside)})[1]
    assert "OUTSIDE" not in json.dumps(unseen) and "saw: (none)" in unseen["reason"]


def test_the_timeout_answers_per_failmode(service: tuple[Service, Path]) -> None:
    served, _ = service
    status, answer = post(served, {**PRE, "tool_name": "Slow"}, "?timeout=1")
    assert status == 200
    out = answer["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "did not finish within its timeout of 1 s" in out["permissionDecisionReason"]


def test_rewrite_mode_and_options_are_checked(service: tuple[Service, Path]) -> None:
    served, _ = service
    assert post(served, PRE, "?rewrite=sometimes")[0] == 400
    assert post(served, PRE, "?timeout=0")[0] == 400
    assert post(served, PRE, "?timeout=soon")[0] == 400
    assert post(served, PRE, "?rewrite=ask&timeout=30")[0] == 200


def test_the_token_is_required_and_an_oversized_call_is_refused_or_denied(
    service: tuple[Service, Path],
) -> None:
    served, _ = service
    status, _ = served.request("POST", "/api/v2/claude-code", PRE)
    assert status == 401
    padding = "x" * (11 * 1024 * 1024)
    big = json.dumps({**PRE, "tool_input": {"command": "ls", "pad": padding}}).encode()
    assert post(served, None, raw=big)[0] == 413  # announced too large: refused before reading
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=60)
    try:  # sent in chunks, found too large while reading: its hooks' failMode answers
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        chunks = (big[i : i + 65536] for i in range(0, len(big), 65536))
        conn.request("POST", "/api/v2/claude-code", body=chunks, headers=headers, encode_chunked=True)
        response = conn.getresponse()
        answer = json.loads(response.read())
    finally:
        conn.close()
    assert response.status == 200
    out = answer["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny" and "larger than" in out["permissionDecisionReason"]
