"""Model cascades (`model: [Fast, Reasoning]`): the stage rules, per-stage results and
cost, budgets, validation, `judge eval`'s cascade report and `--model` on a cascade."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from judge.cli import main as cli_main
from judge.config import config_from_data
from judge.decision import Usage
from judge.errors import ConfigError, HookError
from judge.hooks.engine import Engine
from judge.hooks.gate import Gate
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.state import Store

ROOT = Path(__file__).resolve().parents[2]
PRICES = {"m:fast": {"input": 1.0, "output": 2.0}, "m:strong": {"input": 10.0, "output": 20.0}}


class StageJudge:
    """Answers per model: ``True``/``False`` verdicts, ``"error"`` to fail; records calls."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        model = request.hook.model
        assert isinstance(model, str)  # the cascade hands each stage one model
        self.calls.append(model)
        answer = self.answers[model]
        if answer == "error":
            raise HookError("provider down", model=model)
        reason = None if answer else f"{model} says no"
        return PromptVerdict(
            ok=answer, reason=reason, model=model, usage=Usage(inputTokens=1000, outputTokens=100)
        )


def stop_config(models: Any, **extra: Any) -> Any:
    return config_from_data(
        {"hooks": {"Stop": [{"prompt": "done? $ARGUMENTS", "model": models, "maxRejections": 25}]}, **extra}
    )


def stop() -> dict[str, Any]:
    return {"hook_event_name": "Stop", "final_output": "done?"}


async def decide(
    answers: dict[str, Any], models: Any = ("m:fast", "m:strong")
) -> tuple[dict[str, Any], StageJudge]:
    judge = StageJudge(answers)
    engine = Engine(stop_config(list(models), prices=PRICES), judge=judge)
    return (await engine.evaluate("Stop", stop())).to_json(), judge


async def test_fast_allows_and_the_strong_model_is_not_called() -> None:
    out, judge = await decide({"m:fast": True, "m:strong": False})
    assert judge.calls == ["m:fast"]
    assert out["decision"] == "allow"
    hook = out["hooks"][0]
    assert [s["model"] for s in hook["stages"]] == ["m:fast"]
    assert hook["stages"][0]["verdict"] == "allow" and hook["stages"][0]["agreed"] is None
    assert hook["costUsd"] == pytest.approx(0.0012)  # 1000 x 1 + 100 x 2 per million


async def test_fast_blocks_and_the_strong_model_confirms() -> None:
    out, judge = await decide({"m:fast": False, "m:strong": False})
    assert judge.calls == ["m:fast", "m:strong"]
    assert out["decision"] == "block" and out["reason"] == "m:strong says no"
    hook = out["hooks"][0]
    assert hook["model"] == "m:strong"
    assert [(s["verdict"], s["agreed"]) for s in hook["stages"]] == [("block", None), ("block", True)]


async def test_fast_blocks_and_the_strong_model_overrides_costs_summed() -> None:
    out, _ = await decide({"m:fast": False, "m:strong": True})
    assert out["decision"] == "allow" and out["rejectionCount"] == 0
    hook = out["hooks"][0]
    assert [(s["verdict"], s["agreed"]) for s in hook["stages"]] == [("block", None), ("allow", False)]
    assert [s["costUsd"] for s in hook["stages"]] == [pytest.approx(0.0012), pytest.approx(0.012)]
    assert hook["costUsd"] == pytest.approx(0.0132) and out["costUsd"] == pytest.approx(0.0132)
    assert hook["usage"] == {"inputTokens": 2000, "outputTokens": 200}
    assert all(s["durationMs"] >= 0 for s in hook["stages"])


async def test_fast_errors_and_the_strong_model_decides() -> None:
    out, judge = await decide({"m:fast": "error", "m:strong": False})
    assert judge.calls == ["m:fast", "m:strong"]
    assert out["decision"] == "block" and out["hooks"][0]["error"] is None
    first, second = out["hooks"][0]["stages"]
    assert first["verdict"] == "error" and "provider down" in first["error"]
    assert second["agreed"] is None  # nothing to agree with


async def test_every_stage_failing_is_a_hook_error_under_failmode() -> None:
    out, judge = await decide({"m:fast": "error", "m:strong": "error"})
    assert judge.calls == ["m:fast", "m:strong"]
    hook = out["hooks"][0]
    assert out["decision"] == "allow"  # Stop's default failMode
    assert "every stage of the cascade failed" in hook["error"] and hook["model"] == "m:strong"
    assert [s["verdict"] for s in hook["stages"]] == ["error", "error"]


async def test_three_stages_stop_at_the_first_approval() -> None:
    out, judge = await decide({"a:1": False, "a:2": True, "a:3": False}, models=("a:1", "a:2", "a:3"))
    assert judge.calls == ["a:1", "a:2"] and out["decision"] == "allow"


async def test_a_single_model_has_no_stages() -> None:
    judge = StageJudge({"m:fast": True})
    out = (await Engine(stop_config("m:fast"), judge=judge).evaluate("Stop", stop())).to_json()
    assert "stages" not in out["hooks"][0]


async def test_budgets_count_every_stage(tmp_path: Path) -> None:
    config = stop_config(["m:fast", "m:strong"], prices=PRICES, budgets={"perSessionUsd": 0.02})
    judge = StageJudge({"m:fast": False, "m:strong": False})
    gate = Gate(Engine(config, judge=judge), store=Store(tmp_path / "s.db"))
    await gate.decide("Stop", stop(), session_id="s1")  # 0.0132 spent: both stages
    await gate.decide("Stop", stop(), session_id="s1")  # 0.0264: over the budget now
    third = await gate.decide("Stop", stop(), session_id="s1")
    assert judge.calls == ["m:fast", "m:strong"] * 2
    assert "budget exhausted" in (third.hooks[0].error or "")


async def test_fake_models_through_the_default_judge() -> None:
    config = stop_config(["fake:block:too early", "fake:allow"])
    out = (await Engine(config).evaluate("Stop", stop())).to_json()
    assert out["decision"] == "allow"
    assert [s["model"] for s in out["hooks"][0]["stages"]] == ["fake:block:too early", "fake:allow"]
    assert out["hooks"][0]["stages"][0]["reason"] == "too early"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "a cascade lists 2 or more models"),
        (["Fast"], "a cascade lists 2 or more models"),
        (["Fast", 3], "stage 2: must be a tier or model name (a string)"),
        (["Fast", ""], "stage 2: must name a tier"),
        ({"fast": "Fast"}, "must be a tier or model name (a string), or a list of them"),
        (7, "must be a tier or model name"),
    ],
)
def test_bad_cascades_are_config_errors(value: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        stop_config(value)
    assert "hooks.Stop[0].model" in str(info.value) and message in str(info.value)


def test_validate_checks_each_stage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_MODEL_"):
            os.environ.pop(name)
    path = tmp_path / "judge.yaml"
    path.write_text('hooks:\n  Stop:\n    - prompt: "done?"\n      model: [Fast, ReasoningFats]\n')
    assert cli_main(["validate", str(path)]) == 1
    err = capsys.readouterr().err
    assert "hooks.Stop[0].model[1]: unknown tier 'ReasoningFats' (did you mean ReasoningFast?)" in err
    path.write_text(
        'hooks:\n  Stop:\n    - prompt: "done? $ARGUMENTS"\n      model: [fake:allow, Reasoning]\n'
    )
    assert cli_main(["validate", str(path)]) == 0


def test_the_schema_documents_the_list_form() -> None:
    from judge.config.schema import config_json_schema

    text = json.dumps(config_json_schema())
    assert "is a cascade" in text and '"type": "array"' in text


def run_eval(tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any], list[dict[str, Any]], str]:
    out = tmp_path / "out"
    code = cli_main(
        ["eval", str(ROOT / "evals/cascade/suite.yaml"), "--out", str(out), "--no-cache", "--quiet", *extra]
    )
    report = json.loads((out / "report.json").read_text())
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return code, report, lines, (out / "report.html").read_text()


def test_eval_reports_each_stage_and_the_first_stage_alone(tmp_path: Path) -> None:
    code, report, lines, page = run_eval(tmp_path)
    assert code == 0
    section = report["cascade"]["agent[0]"]
    fast, strong = section["stages"]
    assert fast["models"] == ["fake:fast.yaml"] and fast["calls"] == 20
    # fast blocks a11, a12, b01-b06 and cannot decide a10: those 9 go to the strong stage
    assert strong["calls"] == 9 and section["cascade"]["escalationRate"] == pytest.approx(0.45)
    assert fast["verdicts"] == {"allow": 11, "block": 8, "error": 1}
    assert strong["overrides"] == 3 and strong["agreement"] == pytest.approx(5 / 8)  # a11, a12, b06
    assert section["firstAlone"]["accuracy"] == pytest.approx(15 / 19)  # a10 unscored
    assert section["cascade"]["accuracy"] == pytest.approx(17 / 20) == pytest.approx(report["accuracy"])
    assert section["escalated"]["final"]["correct"] == 8
    assert report["costUsd"] == pytest.approx(section["cascade"]["costUsd"], abs=1e-6)
    assert section["cascade"]["costUsd"] == pytest.approx(fast["costUsd"] + strong["costUsd"], abs=1e-6)
    by_id = {line["id"]: line for line in lines}
    assert [s["model"] for s in by_id["a01"]["cascades"]["agent[0]"]] == ["fake:fast.yaml"]
    stages = by_id["a11"]["cascades"]["agent[0]"]
    assert [(s["verdict"], s["agreed"]) for s in stages] == [("block", None), ("allow", False)]
    assert by_id["a11"]["costUsd"] == pytest.approx(sum(s["costUsd"] for s in stages))
    assert "<h2>Cascades</h2>" in page and "first stage alone" in page


def test_eval_summary_shows_the_cascade(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert cli_main(["eval", str(ROOT / "evals/cascade/suite.yaml"), "--out", str(out), "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "cascade agent[0]: first stage alone accuracy 0.789" in text
    assert "stage 2 fake:strong.yaml: 9 call(s)" in text and "agreement 0.625" in text


def test_model_override_replaces_the_whole_cascade(tmp_path: Path) -> None:
    _, report, lines, _ = run_eval(tmp_path, "--model", "fake:allow")
    assert "cascade" not in report and all("cascades" not in line for line in lines)
    assert report["allowRate"] == 1.0


async def test_audit_logs_carry_the_stages(tmp_path: Path) -> None:
    from judge.logs.audit import AuditLog

    judge = StageJudge({"m:fast": False, "m:strong": True})
    engine = Engine(stop_config(["m:fast", "m:strong"], prices=PRICES), judge=judge)
    log = AuditLog(tmp_path)
    context = {**stop(), "session_id": "s1"}
    log.record("Stop", context, await engine.evaluate("Stop", context))
    [summary] = list(log.session_summaries())
    [cascade] = summary["cascades"]
    assert cascade["hook"] == "agent[0]"
    assert [(s["model"], s["verdict"], s["agreed"]) for s in cascade["stages"]] == [
        ("m:fast", "block", None),
        ("m:strong", "allow", False),
    ]
    assert cascade["stages"][1]["costUsd"] == pytest.approx(0.012)
    single = Engine(stop_config("m:fast"), judge=StageJudge({"m:fast": True}))
    log.record("Stop", context, await single.evaluate("Stop", context))
    assert "cascades" not in list(log.session_summaries())[1]


async def test_service_metrics_count_each_stage_under_its_model() -> None:
    from judge.service.metrics import GateMetrics

    engine = Engine(
        stop_config(["m:fast", "m:strong"], prices=PRICES),
        judge=StageJudge({"m:fast": False, "m:strong": True}),
    )
    metrics = GateMetrics()
    metrics.observe("Stop", None, await engine.evaluate("Stop", stop()), 0.01)
    text = metrics.exposition()[0].decode()
    assert 'judge_tokens_total{kind="input",model="m:fast"} 1000.0' in text
    assert 'judge_tokens_total{kind="input",model="m:strong"} 1000.0' in text
    assert 'judge_cost_usd_total{model="m:strong"} 0.012' in text
