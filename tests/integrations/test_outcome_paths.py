"""The same Stop outcomes through every way into the gate: the HTTP service, ``judge run``,
``StopGate`` and ``judge claude-code`` answer the same sequence of stops with the same
outcome, record it in their logs (the decision JSON, ``session_summaries.jsonl``, the
service's ``decisions.jsonl`` and ``/metrics``), and Claude Code's user sees it in a
``systemMessage`` for every outcome but approved and rejected."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from judge.cli import main
from judge.config import load_config
from judge.integrations import SessionFacts, StopGate
from judge.integrations.claude_code.adapter import ClaudeCodeInput, handle
from judge.logs.audit import SESSION_SUMMARIES
from judge.logs.decisions import DECISIONS_LOG
from tests.service.test_metrics import scrape, value
from tests.service.test_service import Service

ANSWER = "Done, I think."
TASK = {"id": "b1", "type": "shell", "status": "running", "description": "tests", "command": "make test"}


def hook(model: str, **options: Any) -> dict[str, Any]:
    return {"type": "prompt", "model": model, "prompt": "Is it done? $ARGUMENTS", **options}


#: One custom agent per behaviour (no agent-level hooks), chosen by the context's agent_name.
CONFIG = {
    "hooks": {},
    "customAgents": {
        "approves": {"hooks": {"Stop": [hook("fake:allow")]}},
        "rejects": {"hooks": {"Stop": [hook("fake:block:Add the tests.", maxRejections=5)]}},
        "needs_user": {"hooks": {"Stop": [hook("fake:impossible:Ask the user for the key.")]}},
        "one_chance": {"hooks": {"Stop": [hook("fake:block:Add the tests.", maxRejections=1)]}},
        "broken": {"hooks": {"Stop": [hook("fake:error")]}},
        "strict": {"hooks": {"Stop": [hook("fake:error", failMode="block")]}},
    },
}
#: (agent, [(extra context, outcome), ...]): the stops of one session, in order.
SCENARIOS: list[tuple[str, list[tuple[dict[str, Any], str]]]] = [
    ("approves", [({}, "approved")]),
    ("rejects", [({}, "rejected"), ({}, "stalled")]),  # the same answer, the same reason
    ("rejects", [({"background_tasks": [TASK]}, "deferred")]),
    ("needs_user", [({}, "impossible")]),
    ("one_chance", [({}, "forced")]),
    ("broken", [({}, "failed_open")]),
    ("strict", [({}, "failed_closed")]),
]
EXPECTED = [outcome for _, stops in SCENARIOS for _, outcome in stops]


def stops() -> list[tuple[str, str, dict[str, Any], bool]]:
    """(session, agent, extra context, a continuation of that session's loop) per stop."""
    out = []
    for number, (agent, sequence) in enumerate(SCENARIOS):
        for i, (extra, _) in enumerate(sequence):
            out.append((f"{agent}-{number}", agent, extra, i > 0))
    return out


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    return path


def summaries(data: Path) -> list[str]:
    return [json.loads(line)["outcome"] for line in (data / SESSION_SUMMARIES).read_text().splitlines()]


def test_the_service(tmp_path: Path, config_file: Path) -> None:
    data = tmp_path / "data"
    service = Service(tmp_path, ["--config", str(config_file), "--data-dir", str(data)]).start()
    try:
        seen = []
        for session, agent, extra, _ in stops():
            body = {"final_output": ANSWER, "session_id": session, "agent_name": agent, **extra}
            status, decision = service.request("POST", "/api/v2/hooks/Stop", body)
            assert status == 200, decision
            seen.append(decision["outcome"])
        assert seen == EXPECTED
        assert summaries(data) == EXPECTED
        logged = [json.loads(line)["outcome"] for line in (data / DECISIONS_LOG).read_text().splitlines()]
        assert logged == EXPECTED
        _, text = scrape(service)
        for outcome in set(EXPECTED):
            assert value(text, "judge_stop_outcomes_total", outcome=outcome) == EXPECTED.count(outcome)
        logs = io.StringIO()
        with contextlib.redirect_stdout(logs):
            assert main(["logs", "decisions", "--data-dir", str(data)]) == 0
        assert [json.loads(line)["outcome"] for line in logs.getvalue().splitlines()] == EXPECTED
    finally:
        assert service.stop() == 0


def test_judge_run(tmp_path: Path, config_file: Path) -> None:
    data, state = tmp_path / "data", tmp_path / "state.sqlite"
    seen = []
    for session, agent, extra, _ in stops():
        context = tmp_path / "context.json"
        context.write_text(json.dumps({"final_output": ANSWER, "agent_name": agent, **extra}))
        out = io.StringIO()
        argv = ["run", "--config", str(config_file), "--event", "Stop", "--context", str(context)]
        argv += ["--session", session, "--state", str(state), "--data-dir", str(data)]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert main(argv) == 0
        seen.append(json.loads(out.getvalue())["outcome"])
    assert seen == EXPECTED
    assert summaries(data) == EXPECTED


async def test_stop_gate(config_file: Path) -> None:
    from judge.hooks.engine import Engine

    engine = Engine(load_config(config_file))
    gates: dict[str, StopGate] = {}
    seen = []
    for session, agent, extra, _ in stops():
        gate = gates.setdefault(session, StopGate(engine, SessionFacts(session_id=session, agent_name=agent)))
        verdict = await gate.check(ANSWER, background_tasks=extra.get("background_tasks"))
        assert verdict.stop is (verdict.outcome not in ("rejected", "failed_closed"))
        assert (verdict.notice is None) is (verdict.outcome in ("approved", "rejected"))
        seen.append(verdict.outcome)
    assert seen == EXPECTED


async def test_judge_claude_code(tmp_path: Path, config_file: Path) -> None:
    data, state = tmp_path / "data", tmp_path / "state.sqlite"
    config = load_config(config_file)
    told = []
    for session, agent, extra, continuing in stops():
        hook_input = ClaudeCodeInput(
            hook_event_name="Stop",
            session_id=session,
            agent_type=agent,
            stop_hook_active=continuing,
            last_assistant_message=ANSWER,
            **extra,
        )
        out = await handle(hook_input, config, state, data)
        message = (out or {}).get("systemMessage", "")
        sent_back = out is not None and ("decision" in out or "hookSpecificOutput" in out)
        if message.startswith("judge: Stop "):  # every outcome but approved and rejected says its name
            told.append(message.removeprefix("judge: Stop ").split(":", 1)[0])
        else:
            told.append("rejected" if sent_back else "approved")
        assert sent_back is (told[-1] in ("rejected", "failed_closed"))
    assert told == EXPECTED
    assert summaries(data) == EXPECTED
