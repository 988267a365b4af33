"""`judge serve --state postgresql://...`: real service processes (standing for replicas on
several hosts: each has its own data dir) on one real PostgreSQL database."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from judge.testing.postgres_cluster import ClusterUnavailable, PostgresCluster
from tests.service.test_service import REPO, Service

MAX_REJECTIONS = 4
REPLICA_CONFIG = f"""
hooks:
  Stop:
    - type: prompt
      model: "fake:block:Add the test results."
      prompt: "Is the answer complete? $ARGUMENTS"
      maxRejections: {MAX_REJECTIONS}
      repeats: {MAX_REJECTIONS}  # (the same answer each time: counted, not a stalled loop)
    - type: command
      command: "cat > /dev/null; sleep 0.2"
"""
AGENT = {
    "name": "reviewer",
    "properties": {
        "instructions": "Review code.",
        "hooks": {"Stop": [{"type": "command", "command": "echo 'reviewer says no' >&2; exit 2"}]},
    },
}


def _serve_args(folder: Path, url: str) -> list[str]:
    return ["--config", str(folder / "agent.yaml"), "--data-dir", str(folder / "data"), "--state", url]


def _stop(service: Service, session: str, **extra: Any) -> dict[str, Any]:
    status, decision = service.request(
        "POST", "/api/v2/hooks/Stop", {"final_output": "done", "session_id": session, **extra}
    )
    assert status == 200, decision
    return dict(decision)


@pytest.fixture(scope="module")
def replicas(postgres: PostgresCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Service]]:
    url = postgres.create_database("serve_replicas")
    started: list[Service] = []
    try:
        for i in range(3):
            folder = tmp_path_factory.mktemp(f"replica{i}")
            (folder / "agent.yaml").write_text(REPLICA_CONFIG)
            workers = ["--workers", "2"] if i == 0 else []  # the worker processes' path too
            started.append(Service(folder, [*_serve_args(folder, url), *workers]).start())
        yield started
    finally:
        for service in started:
            assert service.stop() == 0
            assert "Traceback" not in service.text()


@pytest.mark.slow
def test_replicas_keep_exact_counts_under_concurrent_stops(replicas: list[Service]) -> None:
    """maxRejections concurrent Stops per session, spread over three service processes:
    counts 1..N exactly once each, and exactly one forced stop per session."""
    sessions = ["s-a", "s-b", "s-c"]
    jobs = [(session, i) for session in sessions for i in range(MAX_REJECTIONS)]
    with ThreadPoolExecutor(len(jobs)) as pool:
        answers = list(pool.map(lambda job: (job[0], _stop(replicas[job[1] % 3], job[0])), jobs))
    for session in sessions:
        decisions = [d for s, d in answers if s == session]
        assert sorted(d["rejectionCount"] for d in decisions) == list(range(1, MAX_REJECTIONS + 1))
        forced = [d for d in decisions if d["forcedStop"]]
        assert len(forced) == 1 and forced[0]["rejectionCount"] == MAX_REJECTIONS
        assert forced[0]["decision"] == "allow"
        assert all(d["decision"] == "block" for d in decisions if not d["forcedStop"])
        # The forced stop ended the loop on every replica: the next Stop starts at 1.
        assert _stop(replicas[2], session)["rejectionCount"] == 1
    for service in replicas:
        assert "judge serve: state postgresql://judge@/serve_replicas" in service.text()


def test_custom_agents_are_shared_between_replicas(replicas: list[Service]) -> None:
    first, second, third = replicas
    assert first.request("PUT", "/api/v2/extendedAgent/agents/reviewer", AGENT)[0] == 202
    status, stored = second.request("GET", "/api/v2/extendedAgent/agents/reviewer")
    assert status == 200 and stored["properties"]["instructions"] == "Review code."
    assert third.request("GET", "/api/v2/extendedAgent/agents")[1]["agents"][0]["name"] == "reviewer"
    # Registered on one replica, its hooks run on another.
    decision = _stop(third, "agent-session", agent_name="reviewer")
    assert decision["decision"] == "block" and "reviewer says no" in decision["reason"]
    # Deleted on one replica, gone everywhere (no stale copy is used).
    assert second.request("DELETE", "/api/v2/extendedAgent/agents/reviewer")[0] == 204
    assert first.request("GET", "/api/v2/extendedAgent/agents/reviewer")[0] == 404
    decision = _stop(first, "agent-session-2", agent_name="reviewer")
    assert "reviewer says no" not in (decision["reason"] or "")
    for service in replicas:
        assert service.request("GET", "/readyz") == (200, {"status": "ready"})


def test_logs_of_every_replica_are_in_the_database(replicas: list[Service]) -> None:
    """--logs defaults to the database with a PostgreSQL state: no replica writes log
    files, any replica's live view shows the whole fleet, `judge logs` exports them."""
    first, second, third = replicas
    _stop(first, "logs-a")
    _stop(third, "logs-b")
    tool_call = {"session_id": "logs-c", "tool_name": "Bash", "tool_result": "ok"}
    status, _ = second.request("POST", "/api/v2/hooks/PostToolUse", tool_call)
    assert status == 200
    # Each replica writes its live-view records every 0.2 s (the one asked, before reading).
    deadline = time.monotonic() + 10
    while True:
        status, summary = second.request("GET", "/api/v2/ui/summary")
        assert status == 200
        sessions = {r["session"] for r in summary["recent"]}
        if {"logs-a", "logs-b", "logs-c"} <= sessions or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert {"logs-a", "logs-b", "logs-c"} <= sessions
    for service in replicas:
        assert "logs in the state database" in service.text()
        files = {p.name for p in (service.workdir / "data").iterdir()}
        assert not files & {"decisions.jsonl", "session_summaries.jsonl", "audit_log.jsonl"}, files
    url = first.args[first.args.index("--state") + 1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    done = subprocess.run(
        [sys.executable, "-m", "judge", "logs", "sessions", "--state", url, "--session", "logs-b"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    [summary_b] = [json.loads(line) for line in done.stdout.splitlines()]
    assert (summary_b["session_id"], summary_b["decision"]) == ("logs-b", "block")
    assert summary_b["rejectionCount"] == 1


def test_logs_can_stay_in_files_with_a_database_state(pg_url: str, tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(REPLICA_CONFIG)
    service = Service(tmp_path, [*_serve_args(tmp_path, pg_url), "--logs", "files"]).start()
    try:
        assert _stop(service, "files-a")["decision"] == "block"
        assert (tmp_path / "data" / "session_summaries.jsonl").is_file()
        assert (tmp_path / "data" / "decisions.jsonl").is_file()
    finally:
        assert service.stop() == 0


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://judge@/no_such_db?host={socket}", 'database "no_such_db" does not exist'),
        ("postgresql://judge:pw-123@127.0.0.1:1/judge", "judge:***@127.0.0.1:1"),
        ("postgresql://judge@/db?sslmode=bogus", "cannot use the state database"),
        ("sqlite://state.db", "unsupported state URL scheme 'sqlite'"),
    ],
)
def test_serve_refuses_to_start_on_an_unusable_state(
    postgres: PostgresCluster, tmp_path: Path, url: str, expected: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    state = url.format(socket=postgres.folder)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "judge",
            "serve",
            "--port",
            "0",
            "--data-dir",
            str(tmp_path),
            "--state",
            state,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert expected in proc.stderr and "listening" not in proc.stderr
    assert "Traceback" not in proc.stderr and "pw-123" not in proc.stderr


def test_judge_run_keeps_counts_in_postgres(pg_url: str, tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(REPLICA_CONFIG.replace("sleep 0.2", "true"))
    counts = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-m", "judge", "run", "--config", str(tmp_path / "agent.yaml"),
             "--event", "Stop", "--session", "cli-1", "--state", pg_url],
            input=json.dumps({"final_output": "done"}), cwd=REPO, capture_output=True, text=True,
            timeout=60, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        counts.append(json.loads(proc.stdout)["rejectionCount"])
    assert counts == [1, 2]


# ---------------------------------------------------------------------------
# The database goes down in the middle of a request


DOWN_CONFIG = """
hooks:
  Stop:
    - type: prompt
      model: "fake:block:Not yet."
      prompt: "Done? $ARGUMENTS"
    - type: command
      command: "cat > /dev/null; if [ -e {dir}/hold ]; then echo > {dir}/started; read x < {dir}/go; fi"
  PreToolUse:
    - type: command
      matcher: Bash
      command: "cat > /dev/null"
"""


@pytest.mark.slow
def test_database_down_mid_request_answers_per_fail_mode(tmp_path: Path, hook_writable: Path) -> None:
    try:
        cluster = PostgresCluster().start()
    except ClusterUnavailable as exc:
        pytest.skip(f"no PostgreSQL server for this test: {exc}")
    try:
        url = cluster.create_database("down")
        (tmp_path / "agent.yaml").write_text(DOWN_CONFIG.format(dir=hook_writable))
        (hook_writable / "hold").touch()
        os.mkfifo(hook_writable / "go")
        os.chmod(hook_writable / "go", 0o666)
        service = Service(tmp_path, _serve_args(tmp_path, url)).start()
        try:
            _down_mid_request(service, cluster, hook_writable)
        finally:
            assert service.stop() == 0
        assert "Traceback" not in service.text()
    finally:
        cluster.stop()


def _text(service: Service, path: str) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", service.port, timeout=30)
    try:
        conn.request("GET", path)
        return conn.getresponse().read().decode()
    finally:
        conn.close()


def _down_mid_request(service: Service, cluster: PostgresCluster, folder: Path) -> None:
    assert service.request("PUT", "/api/v2/extendedAgent/agents/reviewer", AGENT)[0] == 202
    answer: list[dict[str, Any]] = []
    request = threading.Thread(target=lambda: answer.append(_stop(service, "s1")))
    request.start()
    deadline = time.monotonic() + 30
    while not (folder / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (folder / "started").exists(), "the Stop round never reached its hooks"
    cluster.stop(keep=True)  # mid-round: the round's connection dies with the server
    with (folder / "go").open("w") as go:
        go.write("go\n")
    request.join(timeout=60)
    # Stop hooks fail open by default (failMode: allow): the agent may stop; each hook
    # reports the state error.
    decision = answer[0]
    assert decision["decision"] == "allow" and decision["rejectionCount"] == 0
    assert all("state database" in h["error"] for h in decision["hooks"])

    # While it is down: liveness yes, readiness no; a PreToolUse that needs the store
    # (its custom agent is looked up there) fails closed, per its failMode default.
    assert service.request("GET", "/healthz")[0] == 200
    status, ready = service.request("GET", "/readyz")
    assert status == 503 and "state database" in ready["error"]
    status, pre = service.request(
        "POST", "/api/v2/hooks/PreToolUse", {"tool_name": "Bash", "tool_input": {}, "agent_name": "reviewer"}
    )
    assert (
        status == 200
        and pre["decision"] == "block"
        and pre["reason"].startswith("Hook error: state database")
    )
    status, error = service.request("GET", "/api/v2/extendedAgent/agents/reviewer")
    assert status == 503 and "state database" in error["error"]
    metrics = _text(service, "/metrics")
    assert "judge_state_errors_total 2.0" in metrics
    # Both answers were given; their live-view records could not be kept (and say so,
    # once the buffered writer has tried).
    deadline = time.monotonic() + 30
    while 'judge_log_write_errors_total{log="decisions"} 2.0' not in metrics and time.monotonic() < deadline:
        time.sleep(0.1)
        metrics = _text(service, "/metrics")
    assert 'judge_log_write_errors_total{log="decisions"} 2.0' in metrics
    assert "record(s) were not logged: state database" in service.text()

    # Back up: the pool reconnects; the failed round saved nothing.
    cluster.restart()
    (folder / "hold").unlink()
    deadline = time.monotonic() + 60
    while service.request("GET", "/readyz")[0] != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
    final = _stop(service, "s1")
    assert final["rejectionCount"] == 1, json.dumps(final)
