"""Cascades through the real openai and anthropic SDKs against the local test server: each
stage is a request for its own model, and the stages' tokens are priced per model."""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge.cli import main as cli_main
from judge.config import config_from_data
from judge.hooks.engine import Engine
from judge.llm import LLMJudge
from judge.testing import LLMServer, Reply, fail, hang, verdict

FORMATS = ["openai", "anthropic"]

for _sdk in FORMATS:
    importlib.import_module(_sdk)


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer() as srv:
        yield srv


def run(server: LLMServer, fmt: str, replies: dict[str, Reply], timeout: int = 20) -> dict[str, Any]:
    """Judge one Stop with the cascade [<fmt>:fast-model, <fmt>:strong-model]."""
    server.reset()
    server.handler = lambda request: replies[request.model]
    config = config_from_data(
        {
            "hooks": {
                "Stop": [
                    {
                        "prompt": "done? $ARGUMENTS",
                        "timeout": timeout,
                        "model": [f"{fmt}:fast-model", f"{fmt}:strong-model"],
                    }
                ]
            },
            "prices": {
                f"{fmt}:fast-model": {"input": 1.0, "output": 1.0},
                f"{fmt}:strong-model": {"input": 100.0, "output": 100.0},
            },
        }
    )
    engine = Engine(config, judge=LLMJudge(env=server.env(fmt)))
    decision = asyncio.run(engine.evaluate("Stop", {"hook_event_name": "Stop", "final_output": "All done."}))
    return decision.to_json()


def models(server: LLMServer) -> list[str]:
    return [r.model for r in server.requests]


@pytest.mark.parametrize("fmt", FORMATS)
def test_fast_allows_so_the_strong_model_gets_no_request(server: LLMServer, fmt: str) -> None:
    out = run(server, fmt, {"fast-model": verdict(True), "strong-model": verdict(False, "no")})
    assert models(server) == ["fast-model"]
    assert out["decision"] == "allow"
    [stage] = out["hooks"][0]["stages"]
    assert stage["model"] == f"{fmt}:fast-model" and stage["usage"]["inputTokens"] > 0


@pytest.mark.parametrize("fmt", FORMATS)
def test_fast_blocks_strong_confirms(server: LLMServer, fmt: str) -> None:
    out = run(
        server, fmt, {"fast-model": verdict(False, "tests?"), "strong-model": verdict(False, "run the tests")}
    )
    assert models(server) == ["fast-model", "strong-model"]
    assert out["decision"] == "block" and out["reason"] == "run the tests"
    assert [s["agreed"] for s in out["hooks"][0]["stages"]] == [None, True]


@pytest.mark.parametrize("fmt", FORMATS)
def test_fast_blocks_strong_overrides_and_both_are_paid(server: LLMServer, fmt: str) -> None:
    out = run(server, fmt, {"fast-model": verdict(False, "tests?"), "strong-model": verdict(True)})
    assert out["decision"] == "allow"
    hook = out["hooks"][0]
    fast, strong = hook["stages"]
    assert (fast["verdict"], strong["verdict"], strong["agreed"]) == ("block", "allow", False)
    tokens = [s["usage"]["inputTokens"] + s["usage"]["outputTokens"] for s in (fast, strong)]
    assert fast["costUsd"] == pytest.approx(tokens[0] / 1e6) and strong["costUsd"] == pytest.approx(
        tokens[1] * 1e-4
    )
    assert hook["costUsd"] == pytest.approx(fast["costUsd"] + strong["costUsd"])
    assert hook["usage"]["inputTokens"] == fast["usage"]["inputTokens"] + strong["usage"]["inputTokens"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_fast_errors_strong_decides(server: LLMServer, fmt: str) -> None:
    out = run(server, fmt, {"fast-model": fail(404, "model not found"), "strong-model": verdict(False, "no")})
    assert models(server) == ["fast-model", "strong-model"]
    assert out["decision"] == "block" and out["hooks"][0]["error"] is None
    fast = out["hooks"][0]["stages"][0]
    assert fast["verdict"] == "error" and "model not found" in fast["error"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_unparseable_fast_answer_goes_to_the_strong_model(server: LLMServer, fmt: str) -> None:
    out = run(server, fmt, {"fast-model": Reply(text="maybe?"), "strong-model": verdict(True)})
    assert models(server) == ["fast-model", "fast-model", "strong-model"]  # one repair turn, then on
    assert out["decision"] == "allow"
    assert "not a verdict" in out["hooks"][0]["stages"][0]["error"]


def test_a_hanging_fast_model_leaves_the_strong_one_time(server: LLMServer) -> None:
    out = run(server, "openai", {"fast-model": hang(30), "strong-model": verdict(False, "no")}, timeout=2)
    assert out["decision"] == "block" and out["reason"] == "no"
    fast = out["hooks"][0]["stages"][0]
    assert fast["verdict"] == "error" and fast["durationMs"] < 1500  # at most half of the 2 s


def test_eval_batch_judges_a_cascade_the_normal_way(
    server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.evaluation.test_runner import labelled_rows, write_suite

    monkeypatch.setenv("JUDGE_BATCH_POLL_SECONDS", "0")
    for key, value in server.env("openai").items():
        monkeypatch.setenv(key, value)
    server.reset()
    server.handler = lambda request: verdict(True)
    cascade = {"prompt": "Is it complete? $ARGUMENTS", "model": ["openai:fast-model", "openai:strong-model"]}
    suite = write_suite(tmp_path / "s", labelled_rows(2), {"hooks": {"Stop": [cascade]}})
    out = tmp_path / "o"
    assert cli_main(["eval", str(suite), "--out", str(out), "--batch", "--no-cache", "--quiet"]) in (0, 1)
    report = json.loads((out / "report.json").read_text())
    assert report["batch"]["normalReasons"] == {"a model cascade (its stages run one after another)": 2}
    assert report["cascade"]["agent[0]"]["stages"][0]["calls"] == 2
    assert models(server) == ["fast-model", "fast-model"]
