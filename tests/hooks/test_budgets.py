"""Prices, the cost of every decision and eval, and spending budgets that stop model calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge.config import config_from_data
from judge.decision import Usage
from judge.errors import ConfigError
from judge.hooks.engine import Engine
from judge.hooks.gate import Gate
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.pricing import BUILTIN_PRICES, PRICES_ENV, Price, cost_usd, price_for, price_table
from judge.state import Store


class PricedJudge:
    """Answers with a model label and a usage, and counts its calls."""

    def __init__(self, model: str = "openai:gpt-5-mini", ok: bool = False) -> None:
        self.model = model
        self.ok = ok
        self.calls = 0

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        self.calls += 1
        return PromptVerdict(
            ok=self.ok, reason=None if self.ok else "not done", model=self.model,
            usage=Usage(inputTokens=1000, outputTokens=500),
        )  # fmt: skip


def stop(**extra: Any) -> dict[str, Any]:
    return {"hook_event_name": "Stop", "final_output": "done?", **extra}


def test_price_lookup_exact_prefix_and_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    table = price_table(env={})
    assert price_for("openai:gpt-5-mini", table) == Price(0.25, 2.0)
    assert price_for("fake:heuristic", table) == Price(0.0, 0.0)  # `fake:*`
    assert price_for("openai:some-new-model", table) is None  # never guessed
    configured = {"openai:*": Price(1.0, 1.0), "openai:gpt-5-mini": Price(0.5, 4.0)}
    table = price_table(
        configured, env={PRICES_ENV: json.dumps({"openai:gpt-5-mini": {"input": 9, "output": 9}})}
    )
    assert price_for("openai:gpt-5-mini", table) == Price(9.0, 9.0)  # environment wins
    assert price_for("openai:other", table) == Price(1.0, 1.0)
    assert cost_usd("openai:gpt-5-mini", Usage(inputTokens=1_000_000, outputTokens=0), table) == 9.0
    assert price_table(env={PRICES_ENV: "{broken"}) == BUILTIN_PRICES  # never breaks a decision


async def test_every_decision_carries_its_cost() -> None:
    engine = Engine(
        config_from_data({"hooks": {"Stop": [{"prompt": "done? $ARGUMENTS"}]}}), judge=PricedJudge()
    )
    out = (await engine.evaluate("Stop", stop())).to_json()
    assert out["hooks"][0]["costUsd"] == pytest.approx(0.00125)  # 1000 x 0.25 + 500 x 2 per million
    assert out["costUsd"] == pytest.approx(0.00125)
    unknown = Engine(engine.config, judge=PricedJudge(model="openai:unlisted"))
    out = (await unknown.evaluate("Stop", stop())).to_json()
    assert "costUsd" not in out and "costUsd" not in out["hooks"][0]
    configured = config_from_data(
        {"hooks": {"Stop": [{"prompt": "p"}]}, "prices": {"openai:unlisted": {"input": 1, "output": 1}}}
    )
    out = (
        await Engine(configured, judge=PricedJudge(model="openai:unlisted")).evaluate("Stop", stop())
    ).to_json()
    assert out["costUsd"] == pytest.approx(0.0015)


async def test_a_spent_session_budget_stops_model_calls_and_failmode_decides(tmp_path: Path) -> None:
    config = config_from_data(
        {
            "hooks": {"Stop": [{"prompt": "p", "maxRejections": 25, "repeats": 25}]},
            "budgets": {"perSessionUsd": 0.002},
        }
    )
    judge = PricedJudge()
    gate = Gate(Engine(config, judge=judge), store=Store(tmp_path / "s.db"))
    first = await gate.decide("Stop", stop(), session_id="s1")
    second = await gate.decide("Stop", stop(), session_id="s1")
    assert (first.decision, second.decision, judge.calls) == ("block", "block", 2)  # $0.0025 spent
    third = await gate.decide("Stop", stop(), session_id="s1")
    assert judge.calls == 2  # the model was not called
    assert third.decision == "allow"  # a Stop hook error fails open by default
    error = third.hooks[0].error or ""
    assert "budget exhausted: session budget of $0.002 spent ($0.0025)" in error
    # Another session still has its own budget.
    assert (await gate.decide("Stop", stop(), session_id="s2")).decision == "block" and judge.calls == 3


async def test_a_spent_daily_budget_covers_every_session_and_pre_tool_use_fails_closed(
    tmp_path: Path,
) -> None:
    config = config_from_data(
        {
            "hooks": {"PreToolUse": [{"type": "prompt", "prompt": "p", "matcher": "*"}]},
            "budgets": {"perDayUsd": 0.001},
        }
    )
    judge = PricedJudge(ok=True)
    gate = Gate(Engine(config, judge=judge), store=Store(tmp_path / "s.db"))
    tool = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}}
    assert (await gate.decide("PreToolUse", tool, session_id="a")).decision == "allow"
    later = await gate.decide("PreToolUse", tool, session_id="b")
    assert judge.calls == 1 and later.decision == "block"  # PreToolUse fails closed
    assert "daily budget of $0.001 spent" in (later.reason or "")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"prices": {"openai:x": {"input": -1, "output": 1}}}, "prices.openai:x.input"),
        ({"prices": {"openai:x": {"input": 1}}}, "prices.openai:x.output"),
        ({"prices": ["x"]}, "prices: must be a mapping"),
        ({"budgets": {"perSessionUsd": 0}}, "budgets.perSessionUsd"),
        ({"budgets": {"perWeek": 3}}, "budgets.perWeek: unknown key"),
        (
            {"customAgents": {"a": {"mode": "watch", "hooks": {}}}},
            "customAgents.a.mode: must be 'enforce' or 'shadow'",
        ),
    ],
)
def test_price_budget_and_mode_problems_are_located(data: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config_from_data({"hooks": {}, **data})
    assert any(problem in p for p in caught.value.problems), caught.value.problems


def test_eval_reports_cost_and_unpriced_judgements(tmp_path: Path) -> None:
    from judge.cli import build_parser
    from judge.cli.eval import eval_main
    from tests.evaluation.test_runner import labelled_rows, write_suite

    suite = write_suite(tmp_path / "s", labelled_rows(4))
    args = build_parser().parse_args(
        ["eval", str(suite), "--out", str(tmp_path / "o"), "--quiet", "--no-cache"]
    )
    assert eval_main(args, judge=PricedJudge()) == 0
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["costUsd"] == pytest.approx(4 * 0.00125) and report["unpricedJudgements"] == 0
    results = [json.loads(x) for x in (tmp_path / "o" / "results.jsonl").read_text().splitlines()]
    assert all(r["costUsd"] == pytest.approx(0.00125) for r in results)
    args = build_parser().parse_args(
        ["eval", str(suite), "--out", str(tmp_path / "u"), "--quiet", "--no-cache"]
    )
    assert eval_main(args, judge=PricedJudge(model="openai:unlisted")) == 0
    report = json.loads((tmp_path / "u" / "report.json").read_text())
    assert (report["costUsd"], report["unpricedJudgements"]) == (0, 4)
    assert "cost $0.0000 (4 without a known price)" in (tmp_path / "u" / "report.html").read_text()
