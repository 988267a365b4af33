"""The service enforces a calibrated hook only while its record is `ok`: through `judge serve`
over HTTP (one custom agent per status), its start-up lines, /metrics, the live view's
summary and the decision log; and custom agents registered over HTTP, whose calibration
is read when they are registered and may not name files outside the configuration's folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from judge.config import load_config
from judge.service.app import create_app
from judge.service.endpoints import ServerSettings
from tests.hooks.test_calibration import MODEL, PROMPT, record, write_records
from tests.service.test_metrics import scrape
from tests.service.test_service import Service

STATUSES = ("ok", "missing", "stale", "below")


def hook(file: str = "runs/cal.json", prompt: str = PROMPT) -> dict[str, Any]:
    return {
        "type": "prompt",
        "model": MODEL,
        "prompt": prompt,
        "maxRejections": 5,
        "repeats": 5,  # the tests' agent repeats one answer on purpose
        "calibration": {"file": file},
    }


def arrange(folder: Path) -> Path:
    """One custom agent per status; the records in runs/cal.json."""
    (folder / "runs").mkdir(exist_ok=True)
    write_records(
        folder / "runs" / "cal.json",
        record(agent="ok"),
        record(agent="stale", prompt="an older prompt $ARGUMENTS"),
        record(agent="below", prompt="Below? $ARGUMENTS", kappa=0.1),
    )
    agents = {
        "ok": {"hooks": {"Stop": [hook()]}},
        "missing": {"hooks": {"Stop": [hook(file="runs/none.json")]}},
        "stale": {"hooks": {"Stop": [hook(prompt="Stale? $ARGUMENTS")]}},
        "below": {"hooks": {"Stop": [hook(prompt="Below? $ARGUMENTS")]}},
    }
    config = folder / "judge.yaml"
    config.write_text(json.dumps({"customAgents": agents}))
    return config


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("calibrated")
    config = arrange(root)
    service = Service(root, ["--config", str(config), "--data-dir", str(root / "data")]).start()
    yield service, root
    service.stop()


def stop(agent: str) -> dict[str, Any]:
    return {"final_output": "All done.", "agent_name": agent, "session_id": f"s-{agent}"}


@pytest.mark.parametrize("status", STATUSES)
def test_over_http_only_an_ok_calibration_blocks(served: Any, status: str) -> None:
    service, _ = served
    code, decision = service.request("POST", "/api/v2/hooks/Stop", stop(status))
    assert code == 200
    [hook_result] = decision["hooks"]
    assert hook_result["calibration"]["status"] == status
    assert hook_result["decision"] == "block"  # what the judge said is always kept
    if status == "ok":
        assert (decision["decision"], decision["reason"]) == ("block", "Run the tests.")
    else:
        assert decision["decision"] == "allow" and hook_result["mode"] == "shadow"


def test_start_up_metrics_the_live_view_and_the_logs_say_which_hooks_enforce(served: Any) -> None:
    service, root = served
    for status in STATUSES:
        service.request("POST", "/api/v2/hooks/Stop", stop(status))
    text = service.text()
    assert (
        "judge serve: customAgents.ok.hooks.Stop[0]: calibration ok: enforces: measured on 40 cases" in text
    )
    for status in ("missing", "stale", "below"):
        assert (
            f"judge serve: customAgents.{status}.hooks.Stop[0]: calibration {status}: runs as shadow" in text
        )
    _, metrics = scrape(service)
    for status in STATUSES:
        labels = rf'agent="{status}",event="Stop",hook="custom\[0\]",status="{status}"'
        assert float(metric_value(metrics, "judge_hook_calibration_total{" + labels + "}")) >= 1.0
    code, summary = service.request("GET", "/api/v2/ui/summary")
    assert code == 200
    assert {h["calibration"] for h in summary["hooks"]} <= set(STATUSES)
    logged = [json.loads(line) for line in (root / "data" / "decisions.jsonl").read_text().splitlines()]
    assert {h["calibration"] for r in logged for h in r["hooks"]} == set(STATUSES)
    shadow = [json.loads(line) for line in (root / "data" / "shadow_log.jsonl").read_text().splitlines()]
    assert {r["calibration"][0]["status"] for r in shadow} == {"missing", "stale", "below"}


def metric_value(exposition: str, pattern: str) -> str:
    import re

    found = re.search(pattern + r" (\S+)", exposition)
    assert found, f"{pattern} not in /metrics"
    return found.group(1)


def client(folder: Path) -> TestClient:
    (folder / "judge.yaml").write_text("hooks: {}\n")
    data = folder / "data"
    data.mkdir(exist_ok=True)
    settings = ServerSettings(config=load_config(str(folder / "judge.yaml")), data_dir=data)
    return TestClient(create_app(settings))


def test_an_agent_registered_over_http_is_judged_by_its_calibration_as_read_at_registration(
    tmp_path: Path,
) -> None:
    service = client(tmp_path)
    (tmp_path / "runs").mkdir()
    write_records(tmp_path / "runs" / "cal.json", record(agent="reviewer"))
    body = {"name": "reviewer", "properties": {"hooks": {"Stop": [hook()]}}}
    assert service.put("/api/v2/extendedAgent/agents/reviewer", json=body).status_code == 202
    decision = service.post("/api/v2/hooks/Stop", json=stop("reviewer")).json()
    assert decision["decision"] == "block" and decision["hooks"][0]["calibration"]["status"] == "ok"
    # The file is read when the agent is registered (or changed), not on every request.
    (tmp_path / "runs" / "cal.json").unlink()
    assert service.post("/api/v2/hooks/Stop", json=stop("reviewer")).json()["decision"] == "block"
    body["properties"]["hooks"]["Stop"][0]["maxRejections"] = 4
    assert service.put("/api/v2/extendedAgent/agents/reviewer", json=body).status_code == 202
    decision = service.post("/api/v2/hooks/Stop", json=stop("reviewer")).json()
    assert decision["decision"] == "allow" and decision["hooks"][0]["calibration"]["status"] == "missing"


@pytest.mark.parametrize("file", ["/etc/passwd", "../outside.json", "runs/../../x.json", "~/cal.json"])
def test_an_agent_registered_over_http_cannot_name_a_file_outside_the_config_folder(
    tmp_path: Path, file: str
) -> None:
    service = client(tmp_path)
    body = {"name": "reviewer", "properties": {"hooks": {"Stop": [hook(file=file)]}}}
    answer = service.put("/api/v2/extendedAgent/agents/reviewer", json=body)
    assert answer.status_code == 400
    assert answer.json()["problems"] == [
        "properties.hooks.Stop[0].calibration.file: must be a relative path inside the service's "
        "configuration folder for agents registered over HTTP"
    ]
