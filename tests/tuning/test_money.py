"""`judge tune --max-usd` and `judge tune --estimate` over the real SDK path (the OpenAI client
against the local model server): never a request past the budget, the test evaluation
kept in reserve, and an estimate that calls nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.cli import main
from judge.decision import Usage
from judge.evaluation.suite import load_suite
from judge.pricing import Price
from judge.testing import LLMRequest, LLMServer, Reply
from judge.tuning.call_budget import BudgetError
from judge.tuning.tuner import TuneOptions, tune
from tests.tuning.test_loop import write_suite
from tests.tuning.test_sdk import handler

pytestmark = pytest.mark.slow

PRICE = Price(1.0, 10.0)
PRICES = json.dumps({"openai:*": {"input": 1.0, "output": 10.0}})
IN, OUT = 1500, 60


def priced(request: LLMRequest) -> Reply:
    answer = handler(request)
    return Reply(text=answer.text, input_tokens=IN, output_tokens=OUT)


def served(server: LLMServer) -> float:
    return len(server.requests) * PRICE.cost(Usage(inputTokens=IN, outputTokens=OUT))


def env_for(server: LLMServer) -> dict[str, str]:
    env = server.env("openai", model="judge-model")
    return env | {
        "JUDGE_MODEL_REASONING": "openai:optimizer-model",
        "JUDGE_PRICES": PRICES,
        "JUDGE_MAX_OUTPUT_TOKENS": "256",
    }


@pytest.mark.parametrize("max_usd", [0.15, 0.17, 0.2])
async def test_tune_never_spends_past_its_budget_and_keeps_the_test_share(
    tmp_path: Path, max_usd: float
) -> None:
    # a judgement costs $0.0021 here: the baseline 24 of them, the test share 2 x 16
    with LLMServer(handler=priced) as server:
        suite = load_suite(write_suite(tmp_path))
        options = TuneOptions(out=tmp_path / "out", hook="Stop:1", rounds=3, beam=2, max_usd=max_usd)
        outcome = await tune(suite, options, env=env_for(server))
        requests = list(server.requests)
    assert served(server) <= max_usd
    assert outcome.spent_usd == pytest.approx(served(server))
    assert outcome.calls == len(requests)
    assert all(ev.complete for ev in outcome.test.values())  # the held-back share covered test
    assert outcome.stopped == "budget" and outcome.limit == "--max-usd"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["maxUsd"] == max_usd and summary["limit"] == "--max-usd"
    assert "the budget (--max-usd) ran out" in (tmp_path / "out" / "report.html").read_text()


async def test_a_budget_below_the_baseline_is_refused_before_any_request(tmp_path: Path) -> None:
    with LLMServer(handler=priced) as server:
        suite = load_suite(write_suite(tmp_path))
        options = TuneOptions(out=tmp_path / "out", hook="Stop:1", max_usd=0.01)
        with pytest.raises(BudgetError, match=r"--max-usd 0\.01 is too small"):
            await tune(suite, options, env=env_for(server))
        assert server.requests == []


def test_the_cli_estimate_calls_nothing_and_uses_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(tmp_path)
    with LLMServer(handler=priced) as server:
        for key, value in env_for(server).items():
            monkeypatch.setenv(key, value)
        suite = str(tmp_path / "suite.yaml")
        args = ["tune", suite, "--hook", "Stop:1", "--out", str(tmp_path / "runs" / "t"), "--rounds", "2"]
        assert main([*args, "--estimate", "--max-usd", "1"]) == 0
        text = capsys.readouterr().out
        assert server.requests == [] and not (tmp_path / "runs").exists()
        assert "train 8, dev 16, test 16 item(s)" in text and "optimizer openai:optimizer-model" in text
        assert "at least (the baseline only): 40 judgement(s) (0 from the cache)" in text
        assert "the run stops at --max-usd 1" in text
        least = float(text.split("at least")[1].split("tokens, $")[1].split()[0])
        most = float(text.split("at most")[1].split("tokens, $")[1].split()[0])
        assert 0 < least < most
        # a judge eval of the suite fills the cache next to the output folder: the baseline is free
        assert main(["eval", suite, "--out", str(tmp_path / "runs" / "eval"), "--quiet"]) != 2
        server.reset()
        assert main([*args, "--estimate"]) == 0
        text = capsys.readouterr().out
        assert "40 judgement(s) (40 from the cache)" in text and "40 from cache" in text
        assert server.requests == []


def test_the_cli_refuses_a_model_without_a_price(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(tmp_path)
    with LLMServer(handler=priced) as server:
        for key, value in env_for(server).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("JUDGE_PRICES", json.dumps({"openai:judge-model": {"input": 1, "output": 1}}))
        argv = ["tune", str(tmp_path / "suite.yaml"), "--hook", "Stop:1", "--out", str(tmp_path / "o")]
        assert main([*argv, "--max-usd", "5", "--quiet"]) == 2
        assert "no price for openai:optimizer-model" in capsys.readouterr().err
        assert server.requests == []
