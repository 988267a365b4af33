"""`judge serve` through a real socket: a subprocess per service, stdlib HTTP client."""

from __future__ import annotations

import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from judge.testing import LLMServer

REPO = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-token"
MAX_BODY = 11_000_000

MAIN_CONFIG = """
hooks:
  Stop:
    - type: prompt
      model: "fake:block:Add the test results."
      prompt: "Is the answer complete? $ARGUMENTS"
      maxRejections: 3
  PostToolUse:
    - type: command
      matcher: Inspect
      script: |
        #!/usr/bin/env python3
        import json, os, stat, sys
        ctx = json.load(sys.stdin)
        path = ctx["execution_summary"]
        info = {"path": path, "mode": stat.S_IMODE(os.stat(path).st_mode), "text": open(path).read()}
        out = {"additionalContext": json.dumps(info)}
        print(json.dumps({"decision": "allow", "hookSpecificOutput": out}))
  SubagentStop:
    - type: command
      script: |
        #!/bin/bash
        echo '{"decision": "block", "reason": "odd \\ud800 reason"}'
  PreToolUse:
    - type: command
      matcher: Bash
      command: "if grep -q 'rm -rf'; then echo 'destructive command' >&2; exit 2; fi"
"""

CUSTOM_AGENT = {
    "name": "reviewer",
    "properties": {
        "instructions": "Review code.",
        "hooks": {"Stop": [{"type": "command", "command": "echo 'reviewer says no' >&2; exit 2"}]},
    },
}


class Service:
    """`python -m judge serve` on a free port, its stderr in a file."""

    def __init__(self, workdir: Path, args: list[str], env: dict[str, str] | None = None) -> None:
        self.workdir = workdir
        self.args = args
        self.env = env or {}
        self.log = workdir / f"serve-{time.monotonic_ns()}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    def start(self) -> Service:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "OPENAI_", "ANTHROPIC_"))}
        env.update(self.env)
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "judge", "serve", "--port", "0", *self.args],
                cwd=REPO,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.text())
            if found:
                self.port = int(found.group(1))
                break
            if self.proc.poll() is not None:
                raise AssertionError(f"judge serve exited early:\n{self.text()}")
            time.sleep(0.05)
        else:
            raise AssertionError(f"judge serve did not start:\n{self.text()}")
        while self.request("GET", "/healthz")[0] != 200:  # pragma: no cover - startup race
            time.sleep(0.05)
        return self

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=20)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        token: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        sent = {"Content-Type": "application/json"} if data is not None else {}
        if token:
            sent["Authorization"] = f"Bearer {token}"
        sent.update(headers or {})
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, body=data, headers=sent)
            resp = conn.getresponse()
            payload = resp.read()
        finally:
            conn.close()
        parsed = json.loads(payload) if payload else None
        return resp.status, parsed

    def api(self, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        """A request with the main service's token."""
        return self.request(method, path, body, token=TOKEN, **kw)

    def log_records(self) -> list[dict[str, Any]]:
        out = []
        for line in self.text().splitlines():
            if line.startswith("{"):
                out.append(json.loads(line))
        return out


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("serve")
    transcripts = root / "transcripts"
    transcripts.mkdir()
    (transcripts / "t1.txt").write_text("1: user: fix the bug\n2: assistant: fixed\n")
    (root / "secret.txt").write_text("outside the transcripts dir\n")
    (transcripts / "link.txt").symlink_to(root / "secret.txt")
    (root / "agent.yaml").write_text(MAIN_CONFIG)
    return {"root": root, "transcripts": transcripts, "config": root / "agent.yaml"}


@pytest.fixture(scope="module")
def main(dirs: dict[str, Path]) -> Iterator[Service]:
    root = dirs["root"]
    service = Service(
        root,
        [
            "--config",
            str(dirs["config"]),
            "--data-dir",
            str(root / "data"),
            "--transcripts-dir",
            str(dirs["transcripts"]),
            "--max-body",
            str(MAX_BODY),
        ],
        env={"JUDGE_API_TOKEN": TOKEN},
    ).start()
    yield service
    assert service.stop() == 0
    # No request anywhere in this module produced a server error.
    assert not [r for r in service.log_records() if r.get("status", 0) >= 500]
    assert "Traceback" not in service.text()


# ---------------------------------------------------------------------------
# Custom agents


def test_agent_put_get_delete_round_trip(main: Service) -> None:
    status, stored = main.api("PUT", "/api/v2/extendedAgent/agents/reviewer", CUSTOM_AGENT)
    assert status == 202
    assert stored["name"] == "reviewer"
    assert stored["properties"]["instructions"] == "Review code."
    hook = stored["properties"]["hooks"]["Stop"][0]
    assert hook["command"].startswith("echo 'reviewer says no'")

    assert main.api("GET", "/api/v2/extendedAgent/agents/reviewer") == (200, stored)
    status, listing = main.api("GET", "/api/v2/extendedAgent/agents")
    assert status == 200 and stored in listing["agents"]

    # The registered agent's hooks run after the agent-level ones, for its agent_name only.
    status, decision = main.api("POST", "/api/v2/hooks/Stop", {"final_output": "x", "agent_name": "reviewer"})
    assert status == 200
    assert [(h["level"], h["type"]) for h in decision["hooks"]] == [
        ("agent", "prompt"),
        ("custom", "command"),
    ]
    assert "reviewer says no" in decision["reason"]

    assert main.api("DELETE", "/api/v2/extendedAgent/agents/reviewer") == (204, None)
    status, body = main.api("GET", "/api/v2/extendedAgent/agents/reviewer")
    assert status == 404 and "reviewer" in body["error"]
    assert main.api("DELETE", "/api/v2/extendedAgent/agents/reviewer")[0] == 404
    status, decision = main.api("POST", "/api/v2/hooks/Stop", {"final_output": "x", "agent_name": "reviewer"})
    assert [h["level"] for h in decision["hooks"]] == ["agent"]


def test_agent_yaml_resource_document(main: Service) -> None:
    doc = (
        "api_version: azuresre.ai/v2\nkind: ExtendedAgent\nmetadata:\n  name: yamly\nspec:\n"
        "  instructions: Be brief.\n  hooks:\n    PostToolUse:\n      - type: command\n"
        "        matcher: Write\n        command: exit 0\n"
    )
    status, stored = main.api(
        "PUT",
        "/api/v2/extendedAgent/agents/yamly",
        raw=doc.encode(),
        headers={"Content-Type": "application/yaml"},
    )
    assert status == 202
    assert stored["properties"]["hooks"]["PostToolUse"][0]["matcher"] == "Write"
    assert main.api("GET", "/api/v2/extendedAgent/agents/yamly")[1] == stored


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"properties": {"hooks": {"Stop": [{"type": "prompt"}]}}}, "properties.hooks.Stop[0].prompt"),
        ({"properties": {"hooks": {"PostToolUse": [{"command": "true", "type": "command"}]}}}, "matcher"),
        ({"properties": {"hooks": {"Stop": [{"prompt": "p", "timeout": 900}]}}}, "timeout"),
        ({"properties": {"hooks": {"Nope": []}}}, "unknown event"),
        ({"name": "other", "properties": {}}, "does not match"),
        ({"properties": {}, "extra": 1}, "extra: unknown key"),
        ({"hooks": {}}, "expected"),
        ([1, 2], "must be an object"),
        (
            {
                "properties": {
                    "hooks": {"Stop": [{"type": "command", "command": "env", "env": ["OPENAI_API_KEY"]}]}
                }
            },
            "properties.hooks.Stop[0].env: not allowed for agents registered over HTTP",
        ),
        # what `judge serve --config` refuses to start with: a hook that could never run
        (
            {"properties": {"hooks": {"Stop": [{"prompt": "Done? {{ unclosed $ARGUMENTS"}]}}},
            "properties.hooks.Stop[0].prompt: line 1:",
        ),
        (
            {"properties": {"hooks": {"Stop": [{"prompt": "Done? $ARGUMENTS", "model": "ReasoningFats"}]}}},
            "properties.hooks.Stop[0].model: unknown tier 'ReasoningFats' (did you mean ReasoningFast?)",
        ),
        (
            {"kind": "ExtendedAgent", "spec": {"hooks": {"Stop": [{"prompt": "{% if %}x{% endif %}"}]}}},
            "spec.hooks.Stop[0].prompt",
        ),
    ],
)
def test_agent_invalid_is_400_with_located_problems(main: Service, body: Any, where: str) -> None:
    status, error = main.api("PUT", "/api/v2/extendedAgent/agents/bad", body)
    assert status == 400
    assert where in json.dumps(error)
    assert main.api("GET", "/api/v2/extendedAgent/agents/bad")[0] == 404


def test_agent_bad_name_yaml_aliases_and_content_type(main: Service) -> None:
    assert main.api("PUT", "/api/v2/extendedAgent/agents/..bad", CUSTOM_AGENT)[0] == 400
    for name in ("abc%0A", "abc%0D", "abc%0B", "a" * 129):  # `$` would let a final newline through
        assert main.api("PUT", f"/api/v2/extendedAgent/agents/{name}", CUSTOM_AGENT)[0] == 400
    assert "abc\n" not in main.api("GET", "/api/v2/extendedAgent/agents")[1]["agents"]
    bomb = b"a: &a [x, x]\nb: &b [*a, *a]\nproperties: {hooks: {}}\n"
    status, error = main.api(
        "PUT", "/api/v2/extendedAgent/agents/bomb", raw=bomb, headers={"Content-Type": "application/yaml"}
    )
    assert status == 400 and "aliases" in error["error"]
    status, error = main.api(
        "PUT", "/api/v2/extendedAgent/agents/x", raw=b"name=x", headers={"Content-Type": "text/plain"}
    )
    assert status == 415 and "application/json" in error["error"]


def test_duplicate_keys_are_400_not_last_wins(main: Service) -> None:
    doc = b"name: dup\nproperties:\n  hooks:\n    Stop:\n      - prompt: a\n    Stop:\n      - prompt: b\n"
    status, error = main.api(
        "PUT", "/api/v2/extendedAgent/agents/dup", raw=doc, headers={"Content-Type": "application/yaml"}
    )
    assert status == 400 and "duplicate key 'Stop' at line 6" in error["error"]
    assert main.api("GET", "/api/v2/extendedAgent/agents/dup")[0] == 404
    status, error = main.api("POST", "/api/v2/hooks/Stop", raw=b'{"final_output": "x", "final_output": "y"}')
    assert status == 400 and "duplicate key 'final_output'" in error["error"]


# ---------------------------------------------------------------------------
# Auth, limits, status codes


def test_auth_required_except_healthz(main: Service) -> None:
    assert main.request("GET", "/healthz")[0] == 200
    for token in (None, "wrong", TOKEN + "x", TOKEN[:-1]):
        status, body = main.request("GET", "/api/v2/extendedAgent/agents", token=token)
        assert status == 401 and "token" in body["error"]
        assert main.request("POST", "/api/v2/hooks/Stop", {"final_output": "x"}, token=token)[0] == 401
    basic = {"Authorization": f"Basic {TOKEN}"}
    assert main.request("GET", "/api/v2/extendedAgent/agents", headers=basic)[0] == 401
    assert main.api("GET", "/api/v2/extendedAgent/agents")[0] == 200


def test_unknown_event_and_route_are_404_json(main: Service) -> None:
    status, body = main.api("POST", "/api/v2/hooks/Nope", {"final_output": "x"})
    assert status == 404 and "unknown event" in body["error"]
    status, body = main.api("GET", "/no/such/route")
    assert status == 404 and "error" in body
    status, body = main.api("GET", "/api/v2/hooks/Stop")
    assert status == 405 and "error" in body


def test_oversized_body_refused_by_content_length_before_reading(main: Service) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", main.port, timeout=30)
    try:
        conn.putrequest("POST", "/api/v2/hooks/Stop")
        conn.putheader("Authorization", f"Bearer {TOKEN}")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(MAX_BODY + 1))
        conn.endheaders()
        conn.send(b'{"final_output": "')  # the rest never comes: the answer must not wait for it
        resp = conn.getresponse()
        assert resp.status == 413
        assert "limit" in json.loads(resp.read())["error"]
    finally:
        conn.close()


def test_oversized_chunked_body_refused_while_reading(main: Service) -> None:
    piece = b" " * 1_000_000
    chunks = [b'{"final_output": "x"', *([piece] * 11)]
    conn = http.client.HTTPConnection("127.0.0.1", main.port, timeout=30)
    try:
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        try:
            conn.request(
                "POST", "/api/v2/hooks/Stop", body=iter(chunks), headers=headers, encode_chunked=True
            )
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may stop reading once the limit is passed; the answer is still there
        resp = conn.getresponse()
        assert resp.status == 413
    finally:
        conn.close()


# ---------------------------------------------------------------------------
# Decisions


def test_stop_gate_forced_through_at_max_rejections(main: Service) -> None:
    body = {"final_output": "Done, I think.", "session_id": "loop-1"}
    seen = []
    for i in range(4):  # (a new answer each time: a loop that is not stalled)
        status, decision = main.api("POST", "/api/v2/hooks/Stop", {**body, "final_output": f"Done ({i})."})
        assert status == 200
        seen.append((decision["decision"], decision["forcedStop"], decision["rejectionCount"]))
    # maxRejections 3: sent back twice, the third rejection ends the loop; then a new loop starts.
    assert seen == [("block", False, 1), ("block", False, 2), ("allow", True, 3), ("block", False, 1)]
    _, decision = main.api("POST", "/api/v2/hooks/Stop", body)
    assert decision["reason"] == "Add the test results."
    assert decision["hooks"][0]["model"].startswith("fake:")
    # Another session has its own count.
    _, other = main.api("POST", "/api/v2/hooks/Stop", {"final_output": "x", "session_id": "loop-2"})
    assert other["rejectionCount"] == 1
    summaries = (main.workdir / "data" / "session_summaries.jsonl").read_text().splitlines()
    assert sum(1 for line in summaries if json.loads(line)["session_id"] == "loop-1") == 5


def test_pre_and_post_tool_use(main: Service) -> None:
    status, decision = main.api(
        "POST", "/api/v2/hooks/PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}
    )
    assert status == 200 and decision["decision"] == "block"
    assert decision["reason"] == "destructive command"
    _, decision = main.api(
        "POST", "/api/v2/hooks/PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"}}
    )
    assert decision["decision"] == "allow"
    audit_before = main.workdir / "data" / "audit_log.jsonl"
    lines_before = len(audit_before.read_text().splitlines()) if audit_before.exists() else 0
    _, decision = main.api(
        "POST", "/api/v2/hooks/PostToolUse", {"tool_name": "Other", "tool_input": {}, "tool_result": "ok"}
    )
    assert decision == {
        "decision": "allow",
        "reason": None,
        "forcedStop": False,
        "rejectionCount": 0,
        "hooks": [],
    }
    assert len(audit_before.read_text().splitlines()) == lines_before + 1


def test_hook_reason_with_lone_surrogate_is_answered(main: Service) -> None:
    # A hook may answer JSON with a lone surrogate escape; the service still answers (and logs).
    status, decision = main.api("POST", "/api/v2/hooks/SubagentStop", {"final_output": "x"})
    assert status == 200, decision
    assert decision["decision"] == "block" and decision["reason"].startswith("odd ")


def test_inline_transcript_private_and_removed(main: Service) -> None:
    text = "1: user: hello\n2: assistant: the transcript travels inline\n"
    status, decision = main.api(
        "POST",
        "/api/v2/hooks/PostToolUse",
        {"tool_name": "Inspect", "tool_input": {}, "tool_result": "", "transcript": text},
    )
    assert status == 200, decision
    info = json.loads(decision["hookSpecificOutput"]["additionalContext"])
    assert info["text"] == text
    assert info["mode"] == 0o600
    assert not Path(info["path"]).exists()


def test_execution_summary_confined_to_transcripts_dir(main: Service, dirs: dict[str, Path]) -> None:
    base = {"tool_name": "Inspect", "tool_input": {}, "tool_result": ""}
    for good in ("t1.txt", str(dirs["transcripts"] / "t1.txt"), "sub/../t1.txt"):
        status, decision = main.api("POST", "/api/v2/hooks/PostToolUse", {**base, "execution_summary": good})
        assert status == 200, decision
        info = json.loads(decision["hookSpecificOutput"]["additionalContext"])
        assert info["text"].startswith("1: user: fix the bug")
        # The hooks read a private snapshot of the file (same name), removed afterwards.
        assert Path(info["path"]).name == "t1.txt" and info["mode"] == 0o600
        assert not Path(info["path"]).exists()
    outside = [
        "../secret.txt",
        str(dirs["root"] / "secret.txt"),
        "link.txt",  # a symlink inside pointing outside
        "/etc/passwd",
        "missing.txt",
        "",
    ]
    for bad in outside:
        status, body = main.api("POST", "/api/v2/hooks/PostToolUse", {**base, "execution_summary": bad})
        assert status == 400, (bad, body)
        assert "execution_summary" in body["error"]
    both = {**base, "execution_summary": "t1.txt", "transcript": "inline"}
    assert main.api("POST", "/api/v2/hooks/PostToolUse", both)[0] == 400


def test_request_log_lines(main: Service) -> None:
    main.api("POST", "/api/v2/hooks/Stop", {"final_output": "x", "session_id": "logged-session"})
    deadline = time.monotonic() + 10  # the line is written after the response is sent
    records: list[dict[str, Any]] = []
    while not records and time.monotonic() < deadline:
        records = [r for r in main.log_records() if r.get("session") == "logged-session"]
    assert records, main.text()[-2000:]
    record = records[-1]
    assert record["method"] == "POST" and record["path"] == "/api/v2/hooks/Stop"
    assert record["status"] == 200 and record["durationMs"] > 0


# ---------------------------------------------------------------------------
# Fuzzing: nothing makes it answer 500 or die

FIELDS = [
    "hook_event_name", "agent_name", "current_turn", "max_turns", "execution_summary", "session_id",
    "final_output", "stop_hook_active", "stop_rejection_count", "tool_name", "tool_input",
    "tool_result", "tool_succeeded", "transcript",
]  # fmt: skip
PATHS = ["Stop", "SubagentStop", "PostToolUse", "PreToolUse", "stop", "Nope", "%00", "Stop%20x"]


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.choice(["str", "int", "float", "bool", "null", "list", "dict", "unicode"])
    if depth > 4 and kind in ("list", "dict"):
        kind = "str"
    if kind == "str":
        return "".join(rng.choice('ab{}$%"\\\n<>/.') for _ in range(rng.randint(0, 20)))
    if kind == "unicode":
        return "".join(chr(rng.randint(0x20, 0x2FFFF)) for _ in range(rng.randint(0, 10)))
    if kind == "int":
        return rng.choice([0, -1, 1, 2**63, -(2**70), rng.randint(-1000, 1000)])
    if kind == "float":
        return rng.choice([0.5, -1e308, 1e-300, 3.0])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "list":
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {_random_value(rng, 5) if rng.random() < 0.2 else rng.choice(FIELDS): _random_value(rng, depth + 1)
            for _ in range(rng.randint(0, 5))}  # fmt: skip


def _random_body(rng: random.Random) -> bytes:
    roll = rng.random()
    if roll < 0.6:
        body = {field: _random_value(rng) for field in rng.sample(FIELDS, rng.randint(0, len(FIELDS)))}
        return json.dumps(body).encode()
    if roll < 0.75:
        return json.dumps(_random_value(rng)).encode()
    if roll < 0.9:
        return bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 64)))
    text = json.dumps({"final_output": "x", "current_turn": 1})
    cut = rng.randint(0, len(text))
    return text[:cut].encode()


def test_fuzzed_bodies_never_500(main: Service) -> None:
    rng = random.Random(20240611)
    statuses: list[int] = []
    for _ in range(250):
        path = f"/api/v2/hooks/{rng.choice(PATHS)}"
        status, body = main.api("POST", path, raw=_random_body(rng))
        assert status < 500, (path, body)
        if status >= 400:
            assert isinstance(body["error"], str) and body["error"]
        statuses.append(status)
    # The fuzz reached both the validator (4xx) and the engine (200).
    assert 200 in statuses and any(400 <= s < 500 for s in statuses)


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
        b'{"final_output": ' + b"[" * 900 + b"]" * 900 + b"}",
        b'{"tool_input": ' + b"[" * 100_000,
        b'{"final_output": "\xff\xfe"}',
        b'{"final_output": "\\ud800"}',
        b'{"final_output": NaN}',
        b'{"current_turn": 1' + b"0" * 5000 + b"}",
        b'{"current_turn": true}',
        b'{"stop_rejection_count": -1}',
        b'{"stop_rejection_count": 9223372036854775808, "session_id": "s-big"}',
        b'{"execution_summary": "t1.txt\\u0000"}',
        b'{"session_id": 5}',
        b'{"transcript": ["not", "text"]}',
        b'{"hook_event_name": "PostToolUse"}',
        b"null",
        b'"just a string"',
        b"",
        b"\x00\x01\x02",
    ],
)
def test_hostile_bodies_are_4xx(main: Service, raw: bytes) -> None:
    status, body = main.api("POST", "/api/v2/hooks/Stop", raw=raw)
    assert 400 <= status < 500, body
    assert body["error"]


def test_ten_megabyte_strings(main: Service) -> None:
    big = "x" * 10_000_000
    status, body = main.api("POST", "/api/v2/hooks/Stop", {"current_turn": big})
    assert status == 400 and "current_turn" in body["error"]
    status, body = main.api(
        "POST", "/api/v2/hooks/PreToolUse", {"tool_name": "Other", "tool_input": {"x": big}}
    )
    assert status == 200 and body["decision"] == "allow"
    status, body = main.api(
        "PUT", "/api/v2/extendedAgent/agents/huge", {"properties": {"instructions": 5, "x": big}}
    )
    assert status == 400
    assert main.request("GET", "/healthz")[0] == 200


def test_wrong_types_in_agent_bodies_never_500(main: Service) -> None:
    rng = random.Random(7)
    for _ in range(80):
        props = {k: _random_value(rng) for k in rng.sample(["instructions", "hooks", "x"], rng.randint(0, 3))}
        if rng.random() < 0.5:
            props["hooks"] = {rng.choice(["Stop", "PreToolUse", "Bad"]): [_random_value(rng)]}
        status, body = main.api("PUT", "/api/v2/extendedAgent/agents/fuzz", {"properties": props})
        assert status in (202, 400), body
    assert main.request("GET", "/healthz")[0] == 200


@pytest.mark.parametrize(
    "raw",
    [
        b"!!python/object/apply:os.getcwd []",
        b"properties: !!binary aGVsbG8=",
        b"properties: {instructions: 2024-01-01}",
        b"kind: ExtendedAgent\nspec:\n  instructions: !!bool maybe\n",
        b"kind: ExtendedAgent\nspec:\n  instructions: !!timestamp yesterday\n",
        b"kind: ExtendedAgent\nspec:\n  instructions: !!int ''\n",
        b"properties: {hooks: {1: []}}",
        b"[" * 100_000,
        b"{a: " * 50_000,  # under the 256 KiB YAML body limit: reaches the parser
        b"properties:\n  - \t bad",
        b"\xff\xfe",
        b"",
    ],
)
def test_hostile_yaml_agents_are_400(main: Service, raw: bytes) -> None:
    status, body = main.api(
        "PUT", "/api/v2/extendedAgent/agents/yamlfuzz", raw=raw, headers={"Content-Type": "application/yaml"}
    )
    assert status == 400, body
    assert body["error"]


# ---------------------------------------------------------------------------
# Restart keeps agents and counts; no --transcripts-dir refuses paths


def test_restart_keeps_agents_and_counts(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(MAIN_CONFIG)
    args = ["--config", str(tmp_path / "agent.yaml"), "--data-dir", str(tmp_path / "data")]
    first = Service(tmp_path, args).start()
    try:
        assert first.request("PUT", "/api/v2/extendedAgent/agents/reviewer", CUSTOM_AGENT)[0] == 202
        _, decision = first.request("POST", "/api/v2/hooks/Stop", {"final_output": "x", "session_id": "s-r"})
        assert decision["rejectionCount"] == 1
        # Without --transcripts-dir no path is honoured.
        status, body = first.request(
            "POST",
            "/api/v2/hooks/Stop",
            {"final_output": "x", "execution_summary": str(tmp_path / "agent.yaml")},
        )
        assert status == 400 and "--transcripts-dir" in body["error"]
    finally:
        assert first.stop() == 0
    assert "judge serve: stopped" in first.text()

    second = Service(tmp_path, args).start()
    try:
        status, stored = second.request("GET", "/api/v2/extendedAgent/agents/reviewer")
        assert status == 200 and stored["properties"]["instructions"] == "Review code."
        _, decision = second.request("POST", "/api/v2/hooks/Stop", {"final_output": "x", "session_id": "s-r"})
        assert decision["rejectionCount"] == 2
        _, decision = second.request(
            "POST", "/api/v2/hooks/Stop", {"final_output": "x", "session_id": "s-r", "agent_name": "reviewer"}
        )
        assert [h["level"] for h in decision["hooks"]] == ["agent", "custom"]
    finally:
        assert second.stop() == 0


# ---------------------------------------------------------------------------
# Concurrency through the real SDK path, and graceful shutdown

SLOW_CONFIG = """
hooks:
  Stop:
    - type: prompt
      prompt: "Is the answer complete? $ARGUMENTS"
"""


@pytest.mark.slow
def test_fifty_concurrent_stops_wait_in_parallel(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(SLOW_CONFIG)
    with LLMServer(latency=0.5) as llm:
        args = ["--config", str(tmp_path / "agent.yaml"), "--data-dir", str(tmp_path / "data")]
        service = Service(tmp_path, args, env=llm.env("openai")).start()
        try:

            def stop(i: int) -> tuple[int, Any]:
                return service.request(
                    "POST", "/api/v2/hooks/Stop", {"final_output": f"a{i}", "session_id": f"c{i}"}
                )

            service.request("POST", "/api/v2/hooks/Stop", {"final_output": "warm-up"})
            llm.reset()
            start = time.monotonic()
            with ThreadPoolExecutor(50) as pool:
                results = list(pool.map(stop, range(50)))
            elapsed = time.monotonic() - start

            assert all(status == 200 for status, _ in results), results[:3]
            for _, decision in results:
                assert decision["decision"] == "allow"
                hook = decision["hooks"][0]
                assert hook["error"] is None and hook["model"] == "openai:judge-test"
                assert hook["durationMs"] >= 500
            assert len(llm.requests) == 50
            # Served one after another this would take 25 s.
            assert elapsed < 50 * 0.5 / 4, elapsed

            # Graceful shutdown: a request in flight when SIGTERM arrives still gets its answer.
            answer: list[tuple[int, Any]] = []
            inflight = threading.Thread(target=lambda: answer.append(stop(99)))
            inflight.start()
            deadline = time.monotonic() + 10
            while len(llm.requests) < 51 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert service.proc is not None
            service.proc.send_signal(signal.SIGTERM)
            inflight.join(timeout=20)
            assert answer and answer[0][0] == 200 and answer[0][1]["decision"] == "allow"
        finally:
            assert service.stop() == 0
