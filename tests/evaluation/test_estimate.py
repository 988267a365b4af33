"""`judge eval --estimate`: calls, tokens and dollars from the suite, the prompts, the price
table and the cache — with no model call, no command hook run and nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge.cli import main
from judge.testing import LLMRequest, LLMServer, Reply
from tests.evaluation.test_runner import labelled_rows, write_suite

CONFIG: dict[str, Any] = {
    "hooks": {"Stop": [{"type": "prompt", "prompt": "Is it complete? $ARGUMENTS"}]},
    "prices": {"openai:judge-test": {"input": 1.0, "output": 10.0}},
}
IN, OUT = 1200, 80


def answer(request: LLMRequest) -> Reply:
    return Reply(text='{"ok": true}', input_tokens=IN, output_tokens=OUT)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    with LLMServer(handler=answer) as running:
        for key, value in running.env("openai").items():
            monkeypatch.setenv(key, value)
        yield running


def estimate(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(["eval", *argv, "--estimate"]) == 0
    return capsys.readouterr().out


def test_an_estimate_calls_no_model_runs_no_command_and_writes_nothing(
    tmp_path: Path, server: LLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "command-ran"
    config = {
        "hooks": {"Stop": [{"type": "command", "command": f"touch {marker}"}, *CONFIG["hooks"]["Stop"]]},
        "prices": CONFIG["prices"],
    }
    suite = write_suite(tmp_path / "s", labelled_rows(6), config)
    out = tmp_path / "o"
    text = estimate(capsys, str(suite), "--out", str(out), "--repeats", "2")
    assert server.requests == [] and not marker.exists() and not out.exists()
    assert "12 judgement(s), 0 served from the cache" in text
    assert "model calls: at least 12" in text
    assert "openai:judge-test: 12 judgement(s)" in text and "12 from the prompt's length" in text
    tokens = int(text.split("tokens: ~")[1].split(" in")[0].replace(",", ""))
    dollars = float(text.split("cost: $")[1].split()[0])
    assert tokens > 12 * 400  # the system prompt alone is over 400 tokens
    assert dollars == pytest.approx((tokens * 1.0 + 12 * 150 * 10.0) / 1e6, abs=1e-4)


def test_the_cache_makes_judgements_free_and_gives_their_measured_tokens(
    tmp_path: Path, server: LLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(6), CONFIG)
    out = tmp_path / "runs" / "o"
    assert main(["eval", str(suite), "--out", str(out), "--quiet"]) == 0
    assert len(server.requests) == 6
    server.reset()
    folder = out.parent
    before = {f.name: f.stat().st_mtime_ns for f in folder.iterdir() if f.is_file()}
    text = estimate(capsys, str(suite), "--out", str(out))
    after = {f.name: f.stat().st_mtime_ns for f in folder.iterdir() if f.is_file()}
    assert after == before  # the cache is read, never written (not even its journal)
    assert "6 judgement(s), 6 served from the cache (free)" in text and "cost: $0.0000" in text
    assert "at least 0" in text
    # without the cache they would be judged again: at the tokens the cache measured
    text = estimate(capsys, str(suite), "--out", str(out), "--no-cache")
    assert f"~{6 * IN:,} in, ~{6 * OUT:,} out" in text and "6 from this judgement in the cache" in text
    assert f"cost: ${6 * (IN * 1.0 + OUT * 10.0) / 1e6:.4f}" in text
    # a repeat the cache has not seen is priced like this prompt's others
    text = estimate(capsys, str(suite), "--out", str(out), "--repeats", "2")
    assert "6 served from the cache" in text and "6 from the same prompt in the cache" in text
    assert f"~{6 * IN:,} in" in text
    assert server.requests == []


def test_resume_counts_only_what_is_left_and_transcripts_cost_a_tool_round(
    tmp_path: Path, server: LLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = labelled_rows(4)
    for row in rows:
        row["transcript"] = "user: do it\nassistant: done\n" * 50
    suite = write_suite(tmp_path / "s", rows, CONFIG)
    out = tmp_path / "o"
    out.mkdir()
    done = {"id": rows[0]["id"], "repeat": 0, "decision": "allow"}
    (out / "results.jsonl").write_text(json.dumps(done) + "\n")
    text = estimate(capsys, str(suite), "--out", str(out), "--resume", "--no-cache")
    assert "3 judgement(s)" in text and "model calls: at least 6" in text  # two calls each
    assert server.requests == []


def test_a_model_without_a_price_is_named_and_its_cost_unknown(
    tmp_path: Path, server: LLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(2), {"hooks": CONFIG["hooks"]})
    text = estimate(capsys, str(suite), "--out", str(tmp_path / "o"))
    assert "cost: unknown" in text and "no price for openai:judge-test" in text


def test_several_variants_are_estimated_each(
    tmp_path: Path, server: LLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(2), CONFIG)
    text = estimate(
        capsys,
        str(suite),
        "--out",
        str(tmp_path / "o"),
        "--model",
        "fake:allow",
        "--model",
        "openai:judge-test",
    )
    assert "estimate for t [fake:allow]" in text and "estimate for t [openai:judge-test]" in text
    assert "total: ~$" in text and server.requests == []
