"""What a server does not support, remembered across processes (features_memo): the file
itself, a provider starting from it, and `judge claude-code` run twice against a server
that ignores tool_choice "required" (through the real openai SDK, local test server)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, get_args

import pytest

from judge.config import Hook
from judge.hooks.judging import PromptRequest
from judge.llm import LLMJudge
from judge.llm.providers.features import Feature, Features
from judge.llm.providers.features_memo import (
    FILE_NAME,
    MAX_SERVERS,
    FeatureMemo,
    attach,
    remembering,
    server_key,
)
from judge.llm.providers.pool import close_clients
from judge.llm.written_calls import RESULTS_HEADER
from judge.testing import LLMRequest, LLMServer, say, verdict

KEY = "openai http://127.0.0.1:8089/v1 qwen"


def test_remembered_features_come_back_from_the_file(tmp_path: Path) -> None:
    memo = FeatureMemo(tmp_path / "state" / FILE_NAME)
    assert memo.recall(KEY) == []  # no file yet
    memo.remember(KEY, ["required_tool_choice", "tools"])
    memo.remember("anthropic default claude", ["temperature"])
    again = FeatureMemo(tmp_path / "state" / FILE_NAME)
    assert again.recall(KEY) == ["required_tool_choice", "tools"]
    assert again.recall("anthropic default claude") == ["temperature"]
    assert again.recall("openai default gpt") == []
    assert stat.S_IMODE(memo.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(memo.path.parent.stat().st_mode) == 0o700
    assert [p.name for p in memo.path.parent.iterdir()] == [FILE_NAME]  # no temp file left


def test_what_was_learned_is_forgotten_after_a_while(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    FeatureMemo(path).remember(KEY, ["tools"])
    data = json.loads(path.read_text())
    data["servers"][KEY]["learned"] = time.time() - 3600
    path.write_text(json.dumps(data))
    assert FeatureMemo(path).recall(KEY) == ["tools"]
    assert FeatureMemo(path, seconds=1800).recall(KEY) == []
    data["servers"][KEY]["learned"] = time.time() + 3600  # from the future: not trusted
    path.write_text(json.dumps(data))
    assert FeatureMemo(path).recall(KEY) == []


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[]",
        '{"version": 2, "servers": {}}',
        '{"version": 1, "servers": []}',
        json.dumps({"version": 1, "servers": {KEY: {"off": "tools", "learned": time.time()}}}),
        json.dumps({"version": 1, "servers": {KEY: {"off": ["tools"], "learned": "now"}}}),
        json.dumps({"version": 1, "servers": {KEY: {"off": [["tools"], {"a": 1}], "learned": time.time()}}}),
        "x" * (300 * 1024),
    ],
)
def test_a_damaged_file_is_an_empty_one_and_is_replaced(tmp_path: Path, content: str) -> None:
    path = tmp_path / FILE_NAME
    path.write_text(content)
    memo = FeatureMemo(path)
    assert memo.recall(KEY) == []
    memo.remember(KEY, ["tools"])
    assert memo.recall(KEY) == ["tools"]


def test_only_known_feature_names_are_applied(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    entry = {"off": ["tools", "on_drop", "__class__", "bogus"], "learned": time.time()}
    path.write_text(json.dumps({"version": 1, "servers": {KEY: entry}}))
    features = Features()
    with remembering(path):
        attach(features, KEY)
    assert features.off() == ["tools"] and features.on_drop is not None


def test_every_switch_of_features_is_a_feature_name() -> None:
    assert set(Features().off()) == set()
    switches = {name for name, value in vars(Features()).items() if isinstance(value, bool)}
    assert switches == set(get_args(Feature))


def test_an_unwritable_place_costs_only_the_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    memo = FeatureMemo(blocker / "sub" / FILE_NAME)  # a directory cannot be made under a file
    memo.remember(KEY, ["tools"])
    assert memo.recall(KEY) == []


def test_the_oldest_servers_make_room(tmp_path: Path) -> None:
    memo = FeatureMemo(tmp_path / FILE_NAME)
    for i in range(MAX_SERVERS + 3):
        memo.remember(f"openai default m{i}", ["temperature"])
    servers = json.loads(memo.path.read_text())["servers"]
    assert len(servers) == MAX_SERVERS
    assert "openai default m0" not in servers and f"openai default m{MAX_SERVERS + 2}" in servers


def test_server_keys_name_the_server_without_credentials() -> None:
    key = server_key("openai", "http://user:secret@127.0.0.1:8089/v1/?token=x", "qwen", True)
    assert key == "openai http://127.0.0.1:8089/v1 qwen"
    assert server_key("anthropic", None, "claude", False) == "anthropic default claude unstructured"


def test_dropping_records_and_dropping_again_does_not(tmp_path: Path) -> None:
    calls: list[list[str]] = []
    features = Features(on_drop=lambda f: calls.append(f.off()))
    features.drop("tools")
    features.drop("tools")
    features.drop("required_tool_choice")
    assert calls == [["tools"], ["tools", "required_tool_choice"]]


# ---------------------------------------------------------------------------
# A provider, and `judge claude-code`, against a server like llama.cpp


def call_schema_name(body: dict[str, Any]) -> str | None:
    fmt = body.get("response_format")
    return fmt["json_schema"]["name"] if fmt else None


def ignores_required(request: LLMRequest) -> Any:
    """Like llama.cpp: tool_choice "required" is ignored, a JSON schema is enforced."""
    if call_schema_name(request.body) == "tool_call":
        return say(json.dumps({"name": "GrepSearch", "arguments": {"query": "FAILED", "isRegexp": False}}))
    if RESULTS_HEADER in request.text:
        return verdict(False, "The deploy failed.")
    return say("The answer looks complete to me.")  # what the ignored "required" gets


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "transcript.txt"
    path.write_text("user: deploy and report\nassistant: deploy FAILED\n")
    return path


async def judged(server: LLMServer, transcript: Path) -> tuple[bool, list[str | None]]:
    """One judgement on a new SDK client, as in a new process; whether it allowed, and
    which structured output each request asked for."""
    await close_clients()
    server.requests.clear()
    hook = Hook(type="prompt", prompt="Did the deploy succeed? $ARGUMENTS", timeout=20)
    context = {"hook_event_name": "Stop", "final_output": "Deployed.", "execution_summary": str(transcript)}
    result = await LLMJudge(env=server.env("openai")).evaluate(
        PromptRequest(hook=hook, context=context, transcript_path=transcript)
    )
    return result.ok, [call_schema_name(r.body) for r in server.requests]


async def test_a_new_client_starts_from_what_an_earlier_one_learned(llm_server, tmp_path, transcript):
    llm_server.handler = ignores_required
    learning = [None, "tool_call", "verdict_or_tool_call"]  # the ignored "required" costs a request
    assert await judged(llm_server, transcript) == (False, learning)
    assert await judged(llm_server, transcript) == (False, learning)  # nothing remembered
    path = tmp_path / "state" / FILE_NAME
    with remembering(path):
        assert await judged(llm_server, transcript) == (False, learning)
    key = server_key("openai", llm_server.openai_base_url, "judge-test", True)
    assert json.loads(path.read_text())["servers"][key]["off"] == ["required_tool_choice"]
    with remembering(path):
        assert await judged(llm_server, transcript) == (False, ["tool_call", "verdict_or_tool_call"])
    with remembering(tmp_path / "elsewhere" / FILE_NAME):
        assert await judged(llm_server, transcript) == (False, learning)


def test_judge_claude_code_learns_a_server_once(llm_server: LLMServer, tmp_path: Path) -> None:
    llm_server.handler = ignores_required
    session = tmp_path / "session.jsonl"
    lines = [
        {"type": "user", "sessionId": "s", "message": {"role": "user", "content": "Deploy and report"}},
        {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": "deploy FAILED"}},
        {"type": "assistant", "message": {"id": "m2", "role": "assistant", "content": "Deployed."}},
    ]
    session.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    config = tmp_path / "judge.yaml"
    config.write_text("hooks:\n  Stop:\n    - prompt: 'Did the deploy succeed? $ARGUMENTS'\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "JUDGE_"))}
    env.update(llm_server.env("openai"), JUDGE_STATE=str(tmp_path / "data" / "state.sqlite"))
    payload = {"session_id": "s", "hook_event_name": "Stop", "stop_hook_active": False}
    payload["transcript_path"] = str(session)

    def stop() -> list[str | None]:
        llm_server.requests.clear()
        args = [sys.executable, "-m", "judge", "claude-code", "--config", str(config)]
        stdin = json.dumps(payload)
        proc = subprocess.run(args, input=stdin, capture_output=True, text=True, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == {"decision": "block", "reason": "The deploy failed."}, proc.stderr
        return [call_schema_name(r.body) for r in llm_server.requests]

    assert stop() == [None, "tool_call", "verdict_or_tool_call"]
    assert (tmp_path / "data" / FILE_NAME).exists()
    assert stop() == ["tool_call", "verdict_or_tool_call"]  # the second process knows the server


def test_judge_run_remembers_in_its_data_dir(llm_server: LLMServer, tmp_path: Path) -> None:
    llm_server.handler = ignores_required
    transcript = tmp_path / "transcript.txt"
    transcript.write_text("user: deploy and report\nassistant: deploy FAILED\n")
    config = tmp_path / "judge.yaml"
    config.write_text("hooks:\n  Stop:\n    - prompt: 'Did the deploy succeed? $ARGUMENTS'\n")
    context = {"hook_event_name": "Stop", "final_output": "Deployed.", "execution_summary": str(transcript)}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "JUDGE_"))}
    env.update(llm_server.env("openai"))

    def run(*extra: str) -> list[str | None]:
        llm_server.requests.clear()
        args = [sys.executable, "-m", "judge", "run", "--config", str(config), "--event", "Stop", *extra]
        proc = subprocess.run(
            args, input=json.dumps(context), capture_output=True, text=True, env=env, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["decision"] == "block", proc.stdout
        return [call_schema_name(r.body) for r in llm_server.requests]

    learning = [None, "tool_call", "verdict_or_tool_call"]
    assert run() == learning and run() == learning  # nowhere to keep it
    data = tmp_path / "data"
    assert run("--data-dir", str(data)) == learning
    assert run("--data-dir", str(data)) == learning[1:]
    assert (data / FILE_NAME).exists()
    state = tmp_path / "state" / "state.sqlite"
    state.parent.mkdir()
    assert run("--state", str(state)) == learning
    assert run("--state", str(state)) == learning[1:]


def test_judge_eval_remembers_beside_its_cache(llm_server: LLMServer, tmp_path: Path) -> None:
    llm_server.handler = ignores_required
    (tmp_path / "judge.yaml").write_text(
        "hooks:\n  Stop:\n    - prompt: 'Did the deploy succeed? $ARGUMENTS'\n"
    )
    case = {
        "id": "deploy",
        "context": {"final_output": "Deployed."},
        "transcript": "user: deploy and report\nassistant: deploy FAILED\n",
        "label": "block",
    }
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
    (tmp_path / "suite.yaml").write_text("name: memo\nconfig: judge.yaml\nevent: Stop\ncases: cases.jsonl\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "JUDGE_"))}
    env.update(llm_server.env("openai"))

    def run(out: str, *extra: str) -> list[str | None]:
        llm_server.requests.clear()
        args = [sys.executable, "-m", "judge", "eval", str(tmp_path / "suite.yaml"), "--quiet"]
        args += ["--out", str(tmp_path / "runs" / out), "--workers", "1", *extra]
        proc = subprocess.run(
            args, capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL
        )
        assert proc.returncode == 0, proc.stderr
        assert json.loads((tmp_path / "runs" / out / "results.jsonl").read_text())["decision"] == "block"
        return [call_schema_name(r.body) for r in llm_server.requests]

    learning = [None, "tool_call", "verdict_or_tool_call"]
    assert run("a", "--no-cache") == learning and run("b", "--no-cache") == learning  # nowhere to keep it
    assert run("c") == learning
    assert (tmp_path / "runs" / FILE_NAME).exists()  # beside the judgement cache
    assert run("d", "--cache", str(tmp_path / "other.sqlite")) == learning  # another place: learnt anew
    assert run("e", "--no-cache") == learning
    assert run("f", "--cache", str(tmp_path / "other.sqlite")) == []  # a cache hit asks nothing
    assert run("g", "--cache", str(tmp_path / "runs" / "fresh.sqlite")) == learning[1:]
