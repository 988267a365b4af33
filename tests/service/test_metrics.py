"""`GET /metrics`: the gate's decisions in Prometheus text format, one process or several."""

from __future__ import annotations

import http.client
import re
from pathlib import Path

import pytest

from tests.service.test_service import Service

CONFIG = """hooks:
  Stop:
    - type: prompt
      model: "fake:block:not done yet"
      prompt: "Is it done? $ARGUMENTS"
      maxRejections: 2
  PreToolUse:
    - type: command
      matcher: Bash
      command: 'exit 1'
      failMode: block
customAgents:
  reviewer:
    hooks:
      Stop:
        - type: command
          command: 'exit 0'
"""


def scrape(service: Service, token: str | None = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", service.port, timeout=30)
    try:
        conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {token}"} if token else {})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def value(text: str, name: str, **labels: str) -> float:
    """The sample ``name{labels...}`` (labels in any order; all given must match)."""
    total = 0.0
    for line in text.splitlines():
        match = re.match(rf"{name}\{{(.*)\}} (\S+)$", line)
        if not match:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1)))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(match.group(2))
    return total


def drive(service: Service) -> None:
    stop = {"session_id": "s1", "final_output": "not yet"}
    assert service.request("POST", "/api/v2/hooks/Stop", stop)[1]["decision"] == "block"
    again = {**stop, "final_output": "almost"}  # (another answer: forced at maxRejections, not stalled)
    assert service.request("POST", "/api/v2/hooks/Stop", again)[1]["forcedStop"] is True
    done = {"session_id": "s2", "final_output": "DONE", "agent_name": "reviewer"}
    assert service.request("POST", "/api/v2/hooks/Stop", done)[1]["decision"] == "block"
    tool = {"tool_name": "Bash", "tool_input": {"command": "ls"}}
    assert service.request("POST", "/api/v2/hooks/PreToolUse", tool)[1]["decision"] == "block"
    assert service.request("POST", "/api/v2/hooks/Stop", {"final_output": 5})[0] == 400


def check(text: str) -> None:
    assert value(text, "judge_decisions_total", event="Stop", agent="", outcome="block") == 1
    assert value(text, "judge_decisions_total", event="Stop", agent="", outcome="forced_stop") == 1
    assert value(text, "judge_decisions_total", event="Stop", agent="reviewer", outcome="block") == 1
    assert value(text, "judge_forced_stops_total", event="Stop") == 1
    assert value(text, "judge_stop_outcomes_total", event="Stop", agent="", outcome="rejected") == 1
    assert value(text, "judge_stop_outcomes_total", event="Stop", agent="", outcome="forced") == 1
    assert value(text, "judge_stop_outcomes_total", event="Stop", agent="reviewer", outcome="rejected") == 1
    assert value(text, "judge_stop_outcomes_total", outcome="approved") == 0
    assert value(text, "judge_stop_outcomes_total", event="PreToolUse") == 0  # Stops only
    assert value(text, "judge_hook_results_total", event="Stop", hook="custom[0]", outcome="allow") == 1
    assert value(text, "judge_hook_results_total", event="Stop", hook="agent[0]", outcome="block") == 3
    assert value(text, "judge_hook_errors_total", event="PreToolUse", hook="agent[0]", type="command") == 1
    assert value(text, "judge_decisions_total", event="PreToolUse", outcome="block") == 1
    assert value(text, "judge_decision_seconds_count", event="Stop") == 3
    assert value(text, "judge_requests_rejected_total", status="400") == 1


def test_metrics_count_decisions_hooks_errors_and_refusals(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(CONFIG)
    args = ["--config", str(tmp_path / "agent.yaml"), "--data-dir", str(tmp_path / "data")]
    service = Service(tmp_path, args).start()
    try:
        drive(service)
        status, text = scrape(service)
        assert status == 200
        check(text)
        assert "# TYPE judge_decision_seconds histogram" in text
    finally:
        assert service.stop() == 0


def test_metrics_need_the_token_like_every_endpoint(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(CONFIG)
    args = ["--config", str(tmp_path / "agent.yaml"), "--data-dir", str(tmp_path / "data")]
    service = Service(tmp_path, args, env={"JUDGE_API_TOKEN": "s3cret"}).start()
    try:
        assert scrape(service)[0] == 401
        assert scrape(service, "wrong")[0] == 401
        assert scrape(service, "s3cret")[0] == 200
    finally:
        assert service.stop() == 0


@pytest.mark.slow
def test_every_worker_reports_the_whole_service(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(CONFIG)
    args = ["--config", str(tmp_path / "agent.yaml"), "--data-dir", str(tmp_path / "data"), "--workers", "2"]
    service = Service(tmp_path, args).start()
    try:
        drive(service)
        # Each scrape is a new connection, so the kernel hands them to either worker.
        for _ in range(6):
            status, text = scrape(service)
            assert status == 200
            check(text)
    finally:
        assert service.stop() == 0


def test_client_chosen_agent_names_cannot_grow_the_metrics_without_bound() -> None:
    from prometheus_client import generate_latest

    from judge.decision import Decision
    from judge.logs.decisions import record_of
    from judge.service.metrics import MAX_AGENT_LABELS, GateMetrics

    metrics = GateMetrics()
    decision = Decision(event="Stop", decision="allow")
    for i in range(MAX_AGENT_LABELS + 50):
        metrics.observe("Stop", f"agent-{i}", decision, 0.01)
    metrics.observe("Stop", "x" * 2_000_000, decision, 0.01)
    metrics.observe("Stop", "bad name\n", decision, 0.01)
    metrics.observe("Stop", None, decision, 0.01)
    text = generate_latest(metrics.registry).decode()
    agents = set(re.findall(r'judge_decisions_total\{agent="([^"]*)"', text))
    assert len(agents) == MAX_AGENT_LABELS + 2  # the first names, "other" and "" (no agent)
    assert {"agent-0", "other", ""} <= agents and f"agent-{MAX_AGENT_LABELS}" not in agents
    assert len(text) < 200_000
    assert len(record_of("Stop", "x" * 2_000_000, None, decision, 0.01)["agent"]) <= 129
