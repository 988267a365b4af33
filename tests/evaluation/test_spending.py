"""--max-usd: every request is admitted by its worst case and settled at its real cost, so
the spend never passes the limit; `judge eval --max-usd` stops starting cases there, keeps
only whole judgements, says where it stopped, and --resume finishes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from judge.cli import main
from judge.decision import Usage
from judge.evaluation.spending import REFUSAL, Metered, SpendRefused, UsdLimit, worst_case_usd
from judge.llm.providers.base import Completion, Message
from judge.llm.providers.fake import FakeProvider
from judge.pricing import Price
from judge.testing import LLMRequest, LLMServer, Reply
from tests.evaluation.test_runner import labelled_rows, write_suite

PRICE = Price(1.0, 10.0)  # USD per million tokens
PRICES = {"fake:*": PRICE, "openai:judge-test": PRICE}
ASK = [Message(role="user", content="x" * 1000)]


def reply(input_tokens: int = 1000, output_tokens: int = 100) -> Completion:
    return Completion(text="{}", usage=Usage(inputTokens=input_tokens, outputTokens=output_tokens))


def test_a_request_is_admitted_by_its_worst_case_and_charged_its_real_cost() -> None:
    worst = worst_case_usd(PRICE, ASK, [], 4096)
    # a token per byte of the messages and the tools ("[]"), the overheads, the output cap
    assert worst == PRICE.cost(Usage(inputTokens=1000 + 2 + 1024 + 16, outputTokens=4096))
    charge = PRICE.cost(Usage(inputTokens=1000, outputTokens=100))
    limit = UsdLimit(worst + charge / 2, PRICES)
    provider = FakeProvider([reply()], label="fake:x")
    metered = Metered(provider, limit)
    asyncio.run(metered.complete(ASK, []))
    assert limit.spent == charge and limit.reserved == 0
    # what is left no longer covers a worst case, though the next answer would cost only `charge`
    with pytest.raises(SpendRefused, match=REFUSAL):
        asyncio.run(metered.complete(ASK, []))
    assert len(provider.calls) == 1 and limit.refused == 1


def test_an_answer_without_usage_and_a_failure_are_charged_their_worst_case() -> None:
    worst = worst_case_usd(PRICE, ASK, [], 4096)
    limit = UsdLimit(10 * worst, PRICES)
    asyncio.run(Metered(FakeProvider([reply(0, 0)], label="fake:x"), limit).complete(ASK, []))
    assert limit.spent == pytest.approx(worst)

    def broken(messages: list[Message], tools: list[Any]) -> str:
        raise TimeoutError("the server went away mid-answer")

    with pytest.raises(TimeoutError):
        asyncio.run(Metered(FakeProvider(function=broken, label="fake:x"), limit).complete(ASK, []))
    assert limit.spent == pytest.approx(2 * worst) and limit.reserved == 0


def test_a_model_without_a_price_is_refused_before_any_request() -> None:
    provider = FakeProvider([reply()], label="openai:unpriced")
    with pytest.raises(SpendRefused, match="has no price"):
        asyncio.run(Metered(provider, UsdLimit(100.0, PRICES)).complete(ASK, []))
    assert provider.calls == []


def test_concurrent_requests_never_spend_past_the_limit() -> None:
    worst = worst_case_usd(PRICE, ASK, [], 4096)
    limit = UsdLimit(7.5 * worst, PRICES)
    provider = FakeProvider([reply(2000, 3000)], label="fake:x")  # each answer costs ~0.8 worst case

    async def many() -> list[Any]:
        metered = Metered(provider, limit)
        return await asyncio.gather(*(metered.complete(ASK, []) for _ in range(40)), return_exceptions=True)

    outcomes = asyncio.run(many())
    sent = [o for o in outcomes if isinstance(o, Completion)]
    assert len(sent) == len(provider.calls) and limit.refused == 40 - len(sent) > 0
    assert len(sent) * PRICE.cost(Usage(inputTokens=2000, outputTokens=3000)) == pytest.approx(limit.spent)
    assert limit.spent <= limit.max_usd


# ---------------------------------------------------------------------------
# judge eval --max-usd, through the OpenAI SDK against the local server

CONFIG: dict[str, Any] = {
    "hooks": {"Stop": [{"type": "prompt", "prompt": "Is it complete? $ARGUMENTS"}]},
    "prices": {"openai:judge-test": {"input": 1.0, "output": 10.0}},
}
IN, OUT = 1000, 100  # what the server reports for every answer


def answer(request: LLMRequest) -> Reply:
    return Reply(text='{"ok": true}', input_tokens=IN, output_tokens=OUT)


def served_cost(server: LLMServer) -> float:
    return len(server.requests) * PRICE.cost(Usage(inputTokens=IN, outputTokens=OUT))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    with LLMServer(handler=answer) as running:
        for key, value in running.env("openai").items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("JUDGE_MAX_OUTPUT_TOKENS", "64")
        yield running


def test_eval_stops_at_its_budget_keeps_whole_judgements_and_resumes(
    tmp_path: Path, server: LLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(20), CONFIG)
    out = tmp_path / "o"
    argv = ["eval", str(suite), "--out", str(out), "--no-cache", "--quiet", "--concurrency", "4"]
    assert main([*argv, "--max-usd", "0.02"]) == 2
    err = capsys.readouterr().err
    assert "stopped at --max-usd 0.02" in err and "--resume" in err
    assert 0 < len(server.requests) < 20 and served_cost(server) <= 0.02
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(results) == len(server.requests)  # each one a whole judgement, none refused
    assert all(r["error"] is None for r in results)
    report = json.loads((out / "report.json").read_text())
    assert report["n"] == len(results)
    stopped = report["stoppedAtBudget"]
    assert stopped["maxUsd"] == 0.02 and stopped["judged"] == len(results) and stopped["of"] == 20
    assert stopped["spentUsd"] == pytest.approx(served_cost(server))
    first = len(server.requests)
    assert main([*argv, "--resume", "--max-usd", "1"]) == 0
    assert len(server.requests) == 20  # the rest, once each
    report = json.loads((out / "report.json").read_text())
    assert report["n"] == 20 and "stoppedAtBudget" not in report
    run = json.loads((out / "run.json").read_text())
    assert run["spend"]["spentUsd"] == pytest.approx(
        (20 - first) * PRICE.cost(Usage(inputTokens=IN, outputTokens=OUT))
    )


def test_a_budget_too_small_for_one_request_calls_nothing(
    tmp_path: Path, server: LLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(3), CONFIG)
    assert main(["eval", str(suite), "--out", str(tmp_path / "o"), "--max-usd", "0.0001", "--quiet"]) == 2
    assert server.requests == [] and "0 of 3 judgements" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "config", "message"),
    [
        ([], {"hooks": CONFIG["hooks"]}, "no price for openai:judge-test"),
        (["--workers", "2"], CONFIG, "cannot be combined with --workers"),
        (["--batch"], CONFIG, "cannot be combined with --batch"),
        (["--max-usd", "0"], CONFIG, "must be above 0"),
    ],
)
def test_a_budget_that_cannot_be_kept_is_refused_up_front(
    tmp_path: Path,
    server: LLMServer,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    config: dict[str, Any],
    message: str,
) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(3), config)
    max_usd = [] if "--max-usd" in extra else ["--max-usd", "1"]
    assert main(["eval", str(suite), "--out", str(tmp_path / "o"), *max_usd, *extra]) == 2
    assert message in capsys.readouterr().err and server.requests == []


def test_variants_share_the_budget_equally(
    tmp_path: Path, server: LLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(20), CONFIG)
    argv = ["eval", str(suite), "--out", str(tmp_path / "o"), "--no-cache", "--quiet", "--max-usd", "0.02"]
    assert main([*argv, "--model", "openai:judge-test", "--model", "ReasoningFast"]) == 2
    assert served_cost(server) <= 0.01  # the first variant's half; the comparison stops there
    run = json.loads((tmp_path / "o" / "openai-judge-test" / "report.json").read_text())
    assert run["stoppedAtBudget"]["maxUsd"] == 0.01
    assert "the comparison stopped at variant openai:judge-test" in capsys.readouterr().err
