"""Custom agents registered over HTTP are judged with their hooks: prompt hooks too (they
were once stored with command-only defaults that made every call a 500), and, when the
state store is down, as last seen by this process, else per the failMode of the
configuration's hooks, or 503 when none applies - never a silent allow without them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from judge.config import load_config
from judge.errors import StateUnavailable
from judge.service.app import create_app
from judge.service.endpoints import ServerSettings

AGENT = {
    "name": "ops",
    "properties": {"hooks": {"PreToolUse": [{"type": "command", "matcher": "Bash", "command": "exit 2"}]}},
}
CALL = {"agent_name": "ops", "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}


def down(name: str) -> None:
    raise StateUnavailable("state database: connection refused")


def client(tmp_path: Path) -> TestClient:
    config = tmp_path / "judge.yaml"
    config.write_text("hooks: {}\n")
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    return TestClient(create_app(ServerSettings(config=load_config(str(config)), data_dir=data)))


def test_an_agent_seen_before_is_judged_as_last_seen(tmp_path: Path) -> None:
    service = client(tmp_path)
    assert service.put("/api/v2/extendedAgent/agents/ops", json=AGENT).status_code == 202
    assert service.post("/api/v2/hooks/PreToolUse", json=CALL).json()["decision"] == "block"
    service.app.state.service.store.get_agent = down  # type: ignore[attr-defined]
    answer = service.post("/api/v2/hooks/PreToolUse", json=CALL)
    assert answer.status_code == 200 and answer.json()["decision"] == "block"


def test_an_agent_never_seen_is_a_503_with_the_reason(tmp_path: Path) -> None:
    first = client(tmp_path)
    assert first.put("/api/v2/extendedAgent/agents/ops", json=AGENT).status_code == 202
    other = client(tmp_path)  # another process: it never looked the agent up
    other.app.state.service.store.get_agent = down  # type: ignore[attr-defined]
    answer = other.post("/api/v2/hooks/PreToolUse", json=CALL)
    assert answer.status_code == 503
    assert (
        answer.json()["error"]
        == "custom agent 'ops' could not be looked up: state database: connection refused"
    )


def test_an_agent_with_a_prompt_hook_is_judged_after_it_is_stored(tmp_path: Path) -> None:
    service = client(tmp_path)
    agent = {
        "name": "reviewer",
        "properties": {
            "hooks": {"Stop": [{"type": "prompt", "prompt": "Done? $ARGUMENTS", "model": "fake:allow"}]}
        },
    }
    assert service.put("/api/v2/extendedAgent/agents/reviewer", json=agent).status_code == 202
    stored = service.get("/api/v2/extendedAgent/agents/reviewer").json()
    assert "cwd" not in stored["properties"]["hooks"]["Stop"][0]
    answer = service.post("/api/v2/hooks/Stop", json={"final_output": "done", "agent_name": "reviewer"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["hooks"][0]["level"] == "custom" and answer.json()["decision"] == "allow"


def test_an_agent_stored_with_the_old_command_defaults_on_a_prompt_hook_still_works(tmp_path: Path) -> None:
    service = client(tmp_path)
    hook = {"type": "prompt", "prompt": "Done? $ARGUMENTS", "model": "fake:allow", "cwd": "temp", "env": []}
    store = service.app.state.service.store  # type: ignore[attr-defined]
    store.put_agent("legacy", {"name": "legacy", "properties": {"hooks": {"Stop": [hook]}}})
    answer = service.post("/api/v2/hooks/Stop", json={"final_output": "done", "agent_name": "legacy"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["hooks"][0]["level"] == "custom"


def test_a_misspelt_hooks_key_is_refused_not_an_agent_without_hooks(tmp_path: Path) -> None:
    service = client(tmp_path)
    for key, problem in [
        ("hookz", "properties.hookz: unknown key (did you mean hooks?)"),
        ("Hooks", "properties.Hooks: unknown key (did you mean hooks?)"),
        (
            "customAgents",
            "properties.customAgents: custom agents cannot be nested; define them at the top level",
        ),
    ]:
        agent = {"name": "typo", "properties": {key: {"Stop": [{"type": "command", "command": "exit 2"}]}}}
        answer = service.put("/api/v2/extendedAgent/agents/typo", json=agent)
        assert answer.status_code == 400 and answer.json()["problems"] == [problem]
    platform = {"name": "ok", "properties": {"model": "gpt-x", "tools": ["search"], "hooks": {}}}
    assert service.put("/api/v2/extendedAgent/agents/ok", json=platform).status_code == 202


def test_readyz_says_unavailable_when_the_store_stops_answering(tmp_path: Path, monkeypatch: Any) -> None:
    # a frozen database host: the connection neither fails nor answers
    import threading
    import time

    from judge.service import endpoints as server_service

    monkeypatch.setattr(server_service, "READY_SECONDS", 0.3)
    release = threading.Event()
    with client(tmp_path) as service:  # one event loop for the requests, as in `judge serve`
        assert service.get("/readyz").status_code == 200
        service.app.state.service.store.ping = lambda: release.wait(10)  # type: ignore[attr-defined]
        started = time.monotonic()
        answer = service.get("/readyz")
        took = time.monotonic() - started
        again = service.get("/readyz")  # the first check is still stuck: it waits on the same one
        threads = [t.name for t in threading.enumerate()].count("judge-readyz")
        release.set()
        assert again.status_code == 503 and "did not answer" in again.json()["error"]
        assert threads == 1
    assert answer.status_code == 503 and "did not answer within 0.3 s" in answer.json()["error"]
    assert took < 3


def test_readiness_checks_that_overlap_share_one_ping(tmp_path: Path) -> None:
    import threading
    import time

    calls: list[float] = []

    def slow_ping() -> None:
        calls.append(time.monotonic())
        time.sleep(0.2)

    with client(tmp_path) as service:
        service.app.state.service.store.ping = slow_ping  # type: ignore[attr-defined]
        answers: list[int] = []
        probes = [
            threading.Thread(target=lambda: answers.append(service.get("/readyz").status_code))
            for _ in range(3)
        ]
        for probe in probes:
            probe.start()
        for probe in probes:
            probe.join(10)
    assert answers == [200, 200, 200]  # a healthy replica does not flap out of rotation
    assert 1 <= len(calls) <= 3


def test_a_command_hook_is_echoed_without_the_prompt_only_defaults(tmp_path: Path) -> None:
    service = client(tmp_path)
    answer = service.put("/api/v2/extendedAgent/agents/ops", json=AGENT)
    assert answer.status_code == 202
    hook = answer.json()["properties"]["hooks"]["PreToolUse"][0]
    assert not {"model", "maxRejections", "evidence"} & set(hook)
    assert hook["command"] == "exit 2" and hook["timeout"] == 30 and hook["cwd"] == "temp"
    assert service.get("/api/v2/extendedAgent/agents/ops").json()["properties"]["hooks"] == {
        "PreToolUse": [hook]
    }
    # a prompt hook keeps them: they are its options
    prompt = {
        "name": "r",
        "properties": {"hooks": {"Stop": [{"prompt": "Check the final answer. $ARGUMENTS"}]}},
    }
    stored = service.put("/api/v2/extendedAgent/agents/r", json=prompt).json()["properties"]["hooks"]["Stop"][
        0
    ]
    assert (stored["model"], stored["maxRejections"], stored["evidence"]) == ("ReasoningFast", 3, "off")
