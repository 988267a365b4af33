"""What docs/service.md promises about `judge serve`, each checked through a real socket:
the rejection count after an allowed stop, `WWW-Authenticate` on 401, the `session_id`
length limit, and a registered agent replacing a config agent of the same name."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator

import pytest

from tests.service.test_service import Service

TOKEN = "promises-token"
CONFIG = """
hooks:
  Stop:
    - type: prompt
      model: fake:heuristic
      prompt: "Is the answer complete? $ARGUMENTS"
customAgents:
  reviewer:
    hooks:
      Stop:
        - type: command
          command: "echo 'the config reviewer says no' >&2; exit 2"
"""


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    root = tmp_path_factory.mktemp("promises")
    (root / "agent.yaml").write_text(CONFIG)
    args = ["--config", str(root / "agent.yaml"), "--data-dir", str(root / "data")]
    started = Service(root, args, env={"JUDGE_API_TOKEN": TOKEN}).start()
    yield started
    assert started.stop() == 0


def stop(service: Service, body: dict[str, object]) -> dict[str, object]:
    status, decision = service.request("POST", "/api/v2/hooks/Stop", body, token=TOKEN)
    assert status == 200, decision
    assert isinstance(decision, dict)
    return decision


def test_an_allowed_stop_reports_the_reset_count(service: Service) -> None:
    first = stop(service, {"final_output": "", "session_id": "reset-1"})
    assert (first["decision"], first["rejectionCount"]) == ("block", 1)
    second = stop(service, {"final_output": "All 12 tests pass.", "session_id": "reset-1"})
    assert (second["decision"], second["forcedStop"], second["rejectionCount"]) == ("allow", False, 0)
    again = stop(service, {"final_output": "", "session_id": "reset-1"})
    assert again["rejectionCount"] == 1  # a new loop: the stored count was reset as reported


def test_401_names_the_bearer_scheme(service: Service) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", service.port, timeout=30)
    try:
        conn.request("GET", "/api/v2/extendedAgent/agents")
        response = conn.getresponse()
        body = json.loads(response.read())
    finally:
        conn.close()
    assert response.status == 401
    assert response.getheader("WWW-Authenticate") == "Bearer"
    assert "token" in body["error"]


def test_session_id_length_limit(service: Service) -> None:
    longest = "s" * 256
    assert stop(service, {"final_output": "Done.", "session_id": longest})["decision"] == "allow"
    status, body = service.request(
        "POST", "/api/v2/hooks/Stop", {"final_output": "Done.", "session_id": longest + "s"}, token=TOKEN
    )
    assert status == 400
    assert body == {"error": "session_id: must be a non-empty string of at most 256 chars, without NUL"}
    # PostgreSQL's text cannot hold NUL: the round would fail as if the database were down
    status, body = service.request(
        "POST", "/api/v2/hooks/Stop", {"final_output": "Done.", "session_id": "s-2\u0000"}, token=TOKEN
    )
    assert status == 400 and "without NUL" in body["error"]


def test_a_registered_agent_replaces_the_config_agent_of_the_same_name(service: Service) -> None:
    body = {"final_output": "All 12 tests pass.", "agent_name": "reviewer"}
    assert stop(service, body)["reason"] == "the config reviewer says no"
    registered = {
        "name": "reviewer",
        "properties": {
            "hooks": {
                "Stop": [{"type": "command", "command": "echo 'the registered reviewer says no' >&2; exit 2"}]
            }
        },
    }
    status, _ = service.request("PUT", "/api/v2/extendedAgent/agents/reviewer", registered, token=TOKEN)
    assert status == 202
    decision = stop(service, body)
    assert decision["reason"] == "the registered reviewer says no"  # not both: replaced
    assert [h["level"] for h in decision["hooks"]] == ["agent", "custom"]
    assert service.request("DELETE", "/api/v2/extendedAgent/agents/reviewer", token=TOKEN)[0] == 204
    assert stop(service, body)["reason"] == "the config reviewer says no"


def test_no_request_was_a_server_error(service: Service) -> None:
    assert not [r for r in service.log_records() if r.get("status", 0) >= 500]
    assert "Traceback" not in service.text()
