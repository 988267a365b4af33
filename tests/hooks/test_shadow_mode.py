"""`mode: shadow`: a hook that runs and is recorded but never acts (a gate watched before it is on)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judge.config import config_from_data
from judge.hooks.engine import Engine
from judge.hooks.gate import Gate
from judge.logs.audit import AUDIT_LOG, SESSION_SUMMARIES, AuditLog
from judge.logs.decisions import DECISIONS_LOG, append_decision, record_of
from judge.state import Store
from tests.hooks.test_engine import ScriptedJudge, cmd, post_ctx, pre_ctx, prompt, says, stop_ctx


def engine(hooks: dict[str, Any], **extra: Any) -> Engine:
    return Engine(config_from_data({"hooks": hooks, **extra}), judge=ScriptedJudge())


async def test_a_shadow_stop_rejection_is_recorded_but_does_not_block_or_count() -> None:
    eng = engine({"Stop": [prompt("reject: tests are missing", mode="shadow", maxRejections=1)]})
    decision = await eng.evaluate("Stop", stop_ctx())
    assert (decision.decision, decision.forced_stop, decision.rejection_count) == ("allow", False, 0)
    [hook] = decision.to_json()["hooks"]
    assert (hook["mode"], hook["decision"], hook["reason"]) == ("shadow", "block", "tests are missing")


async def test_shadow_and_enforced_hooks_side_by_side() -> None:
    eng = engine({"Stop": [prompt("reject: enforced says no", maxRejections=5), prompt("ok", mode="shadow")]})
    decision = await eng.evaluate("Stop", stop_ctx())
    assert (decision.decision, decision.rejection_count, decision.reason) == ("block", 1, "enforced says no")
    hooks = decision.to_json()["hooks"]
    assert "mode" not in hooks[0] and hooks[1]["mode"] == "shadow"


async def test_a_shadow_hook_never_denies_rewrites_or_adds_context_and_errors_do_not_fail_closed() -> None:
    pre = engine(
        {
            "PreToolUse": [
                cmd("exit 2", matcher="Bash", mode="shadow"),  # would deny
                cmd(says({"updatedInput": {"command": "ls"}}), matcher="Bash", mode="shadow"),
                cmd("exit 1", matcher="Bash", mode="shadow", failMode="block"),  # would fail closed
                cmd(says({"decision": "allow"}), matcher="Bash"),
            ]
        }
    )
    decision = await pre.evaluate("PreToolUse", pre_ctx())
    assert decision.decision == "allow" and decision.updated_input is None
    out = decision.to_json()["hooks"]
    assert [h.get("mode") for h in out] == ["shadow", "shadow", "shadow", None]
    assert out[0]["decision"] == "block" and out[2]["error"]  # recorded: what they would have done
    post = engine(
        {
            "PostToolUse": [
                cmd(says({"decision": "block", "reason": "secret in output"}), matcher="*", mode="shadow"),
                cmd(
                    says({"hookSpecificOutput": {"additionalContext": "shadow note"}}),
                    matcher="*",
                    mode="shadow",
                ),
            ]
        }
    )
    decision = await post.evaluate("PostToolUse", post_ctx())
    assert decision.decision == "allow" and decision.additional_context is None


async def test_a_shadow_custom_agent_runs_all_its_hooks_in_shadow() -> None:
    eng = engine(
        {"Stop": [prompt("ok")]},
        customAgents={"reviewer": {"mode": "shadow", "hooks": {"Stop": [prompt("reject: would block")]}}},
    )
    decision = await eng.evaluate("Stop", stop_ctx(agent_name="reviewer"))
    assert decision.decision == "allow"
    custom = decision.to_json()["hooks"][1]
    assert (custom["level"], custom["mode"], custom["decision"]) == ("custom", "shadow", "block")


async def test_audit_lines_and_the_decision_log_say_shadow(tmp_path: Path) -> None:
    eng = engine(
        {
            "Stop": [prompt("reject: would block", mode="shadow")],
            "PostToolUse": [cmd(says({"decision": "block", "reason": "leak"}), matcher="*", mode="shadow")],
        }
    )
    gate = Gate(eng, store=Store(tmp_path / "s.db"), audit=AuditLog(tmp_path))
    stop = await gate.decide("Stop", stop_ctx(session_id="s1"), session_id="s1")
    await gate.decide("PostToolUse", post_ctx(session_id="s1"), session_id="s1")
    summary = json.loads((tmp_path / SESSION_SUMMARIES).read_text().splitlines()[-1])
    assert summary["decision"] == "allow"
    assert summary["shadow"] == [
        {"hook": "agent[0]", "type": "prompt", "decision": "block", "reason": "would block", "error": None}
    ]
    audit = json.loads((tmp_path / AUDIT_LOG).read_text().splitlines()[-1])
    assert audit["decision"] == "allow" and audit["shadow"][0]["reason"] == "leak"
    append_decision(tmp_path, record_of("Stop", None, "s1", stop, 0.01))
    logged = json.loads((tmp_path / DECISIONS_LOG).read_text())
    assert logged["hooks"][0]["mode"] == "shadow" and logged["hooks"][0]["reason"] == "would block"


def test_mode_is_validated() -> None:
    import pytest

    from judge.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        config_from_data({"hooks": {"Stop": [{"prompt": "x", "mode": "watch"}]}})
    assert any("hooks.Stop[0].mode" in p for p in caught.value.problems), caught.value.problems


SHADOW_CONFIG = """hooks:
  Stop:
    - type: prompt
      mode: shadow
      model: fake:heuristic
      prompt: 'The answer must end with "Task complete." $ARGUMENTS'
"""


def test_a_shadow_log_becomes_a_suite_scored_as_recorded_and_judged_again(tmp_path: Path) -> None:
    from judge.cli import main
    from judge.evaluation.runner import read_results
    from tests.service.test_service import Service

    (tmp_path / "gate.yaml").write_text(SHADOW_CONFIG)
    data = tmp_path / "data"
    service = Service(tmp_path, ["--config", str(tmp_path / "gate.yaml"), "--data-dir", str(data)]).start()
    answers = ["Fixed the bug. Task complete.", "I will run the tests next.", "Done, all green.", ""]
    try:
        for i, answer in enumerate(answers):
            body = {
                "session_id": f"s{i}",
                "final_output": answer,
                "transcript": f"USER: task {i}\nASSISTANT: {answer}",
            }
            status, decision = service.request("POST", "/api/v2/hooks/Stop", body)
            assert status == 200 and decision["decision"] == "allow"  # shadow: never blocks
            assert decision["hooks"][0]["mode"] == "shadow"
    finally:
        assert service.stop() == 0
    suite_dir = tmp_path / "suite"
    argv = ["datasets", "convert", "shadow", str(data / "shadow_log.jsonl"), "--out", str(suite_dir)]
    assert main([*argv, "--config", str(tmp_path / "gate.yaml")]) == 0
    cases = [json.loads(x) for x in (suite_dir / "cases.jsonl").read_text().splitlines()]
    assert [c["recorded"]["decision"] for c in cases] == ["allow", "block", "block", "block"]
    assert cases[1]["transcript"].startswith("USER: task 1") and cases[1]["label"] is None
    # A person labels them: the third answer was fine (the gate would have been wrong).
    for case, label in zip(cases, ["allow", "block", "allow", "block"], strict=True):
        case["label"] = label
    (suite_dir / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    out = tmp_path / "recorded"
    assert main(["eval", str(suite_dir / "suite.yaml"), "--out", str(out), "--recorded", "--quiet"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["confusion"] == {"tp": 2, "fp": 1, "tn": 1, "fn": 0}
    assert [r.decision for r in read_results(out / "results.jsonl")] == ["allow", "block", "block", "block"]
    # Judged again with the suite's config: the same fake judge reaches the same verdicts.
    again = tmp_path / "again"
    assert main(["eval", str(suite_dir / "suite.yaml"), "--out", str(again), "--quiet", "--no-cache"]) == 0
    assert json.loads((again / "report.json").read_text())["n"] == 4


def test_recorded_needs_recorded_verdicts(tmp_path: Path, capsys: Any) -> None:
    from judge.cli import main
    from tests.evaluation.test_runner import labelled_rows, write_suite

    suite = write_suite(tmp_path / "s", labelled_rows(2))
    assert main(["eval", str(suite), "--out", str(tmp_path / "o"), "--recorded"]) == 2
    assert "2 case(s) have no recorded verdict" in capsys.readouterr().err
