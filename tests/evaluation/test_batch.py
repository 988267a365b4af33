"""`judge eval --batch`: the OpenAI Batch API and Anthropic Message Batches, through the
official SDKs against the local model server's batch endpoints."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge.cli import build_parser
from judge.cli.eval import eval_main
from judge.evaluation.batch.run import load_state
from judge.evaluation.metrics import stable_view
from judge.evaluation.runner import read_results
from judge.testing import LLMRequest, LLMServer, Reply, fail, verdict
from judge.testing.batch_wire import BATCH_HEADER
from tests.evaluation.test_runner import labelled_rows, write_suite

REPO = Path(__file__).resolve().parents[2]
PROMPT = {"type": "prompt", "prompt": "Is it complete? $ARGUMENTS"}
LLM_CONFIG: dict[str, Any] = {"hooks": {"Stop": [PROMPT]}}
PRICE = json.dumps(
    {
        "openai:judge-test": {"input": 1.0, "output": 1.0},
        "anthropic:judge-test": {"input": 1.0, "output": 1.0},
    }
)


def judge_by_content(request: LLMRequest) -> Reply:
    """Blocks answers marked BAD, fails those marked REJECTME, allows the rest."""
    text = json.dumps(request.body)
    if "REJECTME" in text:
        return fail(400, "this request is malformed")
    return verdict(False, "not done") if "BAD" in text else verdict(True)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in ("JUDGE_CONFIG", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "JUDGE_MODEL_REASONINGFAST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUDGE_BATCH_POLL_SECONDS", "0")
    monkeypatch.setenv("JUDGE_PRICES", PRICE)
    yield monkeypatch


def use(monkeypatch: pytest.MonkeyPatch, server: LLMServer, provider: str) -> None:
    for key, value in server.env(provider).items():  # type: ignore[arg-type]
        monkeypatch.setenv(key, value)


def run_eval(argv: list[str]) -> int:
    return eval_main(build_parser().parse_args(["eval", *argv]))


def calls(server: LLMServer, prefix: str) -> list[str]:
    return [r.path for r in server.side_requests if r.path.startswith(prefix)]


def live(server: LLMServer) -> list[LLMRequest]:
    """Model requests made the normal way (not as lines of a batch)."""
    return [r for r in server.requests if BATCH_HEADER not in r.headers]


def report(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "report.json").read_text())
    return data


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_batch_gives_the_normal_paths_verdicts_at_half_the_price(
    provider: str, tmp_path: Path, env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = labelled_rows(12)
    rows[1]["transcript"] = "user: fix the bug\nassistant: ran the tests: 3 passed"
    suite = write_suite(tmp_path / "s", rows, LLM_CONFIG)
    with LLMServer(handler=judge_by_content) as server:
        use(env, server, provider)
        assert run_eval([str(suite), "--out", str(tmp_path / "normal"), "--no-cache", "--quiet"]) == 0
        server.reset()
        assert run_eval([str(suite), "--out", str(tmp_path / "batch"), "--no-cache", "--batch"]) == 0
        requests = list(server.requests)
        batch_calls = calls(server, "POST /v1/")
    assert live(server) == [] and len(requests) == 12  # every judgement was a batch line
    create = "POST /v1/batches" if provider == "openai" else "POST /v1/messages/batches"
    assert batch_calls.count(create) == 1
    if provider == "openai":
        assert "POST /v1/files" in batch_calls
    # The transcript travels inside the request; there are no tools to call.
    inlined = [r for r in requests if "ran the tests: 3 passed" in json.dumps(r.body)]
    assert len(inlined) == 1 and "There are no tools" in inlined[0].system
    assert all("tools" not in r.body for r in requests)
    normal, batch = report(tmp_path / "normal"), report(tmp_path / "batch")
    same = {k: v for k, v in stable_view(normal).items() if k not in ("tokens", "costUsd")}
    assert {k: v for k, v in stable_view(batch).items() if k in same} == same
    assert batch["batch"]["judgedInBatches"] == 12 and batch["batch"]["judgedNormally"] == 0
    tokens = sum(
        r.usage.input_tokens + r.usage.output_tokens
        for r in read_results(tmp_path / "batch" / "results.jsonl")
    )
    assert batch["costUsd"] == pytest.approx(0.5 * tokens / 1e6, rel=1e-3)  # the 50% batch discount
    captured = capsys.readouterr()
    assert "12 judgement(s) through batch APIs (priced 50% below list), 0 the normal way" in captured.out
    assert "batches: 12/12 requests done" in captured.err  # the progress shows the batches' state


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_rejected_batch_request_is_that_cases_error(
    provider: str, tmp_path: Path, env: pytest.MonkeyPatch
) -> None:
    rows = labelled_rows(6)
    rows[2]["context"]["final_output"] = "REJECTME"
    suite = write_suite(tmp_path / "s", rows, LLM_CONFIG)
    with LLMServer(handler=judge_by_content) as server:
        use(env, server, provider)
        assert run_eval([str(suite), "--out", str(tmp_path / "o"), "--batch", "--quiet"]) == 0
    results = {r.id: r for r in read_results(tmp_path / "o" / "results.jsonl")}
    assert results["c002"].error is not None and "batch request" in results["c002"].error
    assert "this request is malformed" in results["c002"].error
    assert [r.id for r in results.values() if r.error] == ["c002"]
    assert report(tmp_path / "o")["errors"] == 1 and live(server) == []


def test_crash_mid_poll_then_resume_polls_the_same_batch(tmp_path: Path, env: pytest.MonkeyPatch) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(8), LLM_CONFIG)
    out = tmp_path / "o"
    with LLMServer(handler=judge_by_content) as server:
        use(env, server, "openai")
        server.batches.controls.hold = True  # the batch stays in progress
        child_env = {**os.environ, "PYTHONPATH": str(REPO)}
        argv = [sys.executable, "-m", "judge", "eval", str(suite), "--out", str(out), "--batch", "--quiet"]
        proc = subprocess.Popen(argv, env=child_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            assert server.batches.controls.polled.wait(60), "the batch was never polled"
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        saved = load_state(out).batches
        assert len(saved) == 1 and saved[0].id.startswith("batch_")  # saved before the first poll
        server.batches.controls.hold = False
        assert run_eval([str(suite), "--out", str(out), "--batch", "--resume", "--quiet"]) == 0
        creates = calls(server, "POST /v1/batches")
    assert creates == ["POST /v1/batches"]  # resumed by id: never submitted twice
    assert len(read_results(out / "results.jsonl")) == 8 and live(server) == []
    assert report(out)["batch"]["batches"][0]["id"] == saved[0].id


def test_ctrl_c_while_waiting_keeps_the_batch_for_resume(tmp_path: Path, env: pytest.MonkeyPatch) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(4), LLM_CONFIG)
    out = tmp_path / "o"
    with LLMServer(handler=judge_by_content) as server:
        use(env, server, "anthropic")
        server.batches.controls.hold = True
        child_env = {**os.environ, "PYTHONPATH": str(REPO)}
        argv = [sys.executable, "-m", "judge", "eval", str(suite), "--out", str(out), "--batch", "--quiet"]
        proc = subprocess.Popen(
            argv, env=child_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        try:
            # (generous bounds: they only catch a hang; a loaded machine may take long to get there)
            assert server.batches.controls.polled.wait(600), "the batch was never polled"
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=600)
        finally:
            proc.kill()
        assert proc.returncode == 2
        assert "interrupted: 0 of 4 results" in err and "batch.json; --resume polls them again" in err
        assert "Traceback" not in err
        server.batches.controls.hold = False
        assert run_eval([str(suite), "--out", str(out), "--batch", "--resume", "--quiet"]) == 0
        assert calls(server, "POST /v1/messages/batches") == ["POST /v1/messages/batches"]
    assert len(read_results(out / "results.jsonl")) == 4


@pytest.mark.parametrize(
    ("provider", "end_as", "why"),
    [
        ("openai", "expired", "the batch expired"),
        ("anthropic", "expired", "the batch expired"),
        ("anthropic", "cancelled", "the batch cancelled"),
        ("openai", "failed", "the batch failed (the batch failed validation)"),
    ],
)
def test_requests_an_ended_batch_did_not_run_are_judged_the_normal_way(
    provider: str,
    end_as: Any,
    why: str,
    tmp_path: Path,
    env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(6), LLM_CONFIG)
    with LLMServer(handler=judge_by_content) as server:
        use(env, server, provider)
        server.batches.controls.end_as = end_as
        server.batches.controls.finish_only = 2
        assert run_eval([str(suite), "--out", str(tmp_path / "o"), "--batch"]) == 0
    ran = 0 if end_as == "failed" else 2
    assert len(live(server)) == 6 - ran  # the rest were judged the normal way, in the same run
    section = report(tmp_path / "o")["batch"]
    assert section["judgedInBatches"] == ran and section["normalReasons"] == {
        f"{why} before judging it": 6 - ran
    }
    assert report(tmp_path / "o")["errors"] == 0
    assert "its unfinished requests are judged the normal way" in capsys.readouterr().err


MIXED_CONFIG: dict[str, Any] = {
    "hooks": {"Stop": [PROMPT]},
    "customAgents": {"scripted": {"hooks": {"Stop": [{"type": "command", "command": "exit 0"}]}}},
}


def test_mixed_suite_says_which_cases_went_where(
    tmp_path: Path, env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = labelled_rows(6)
    rows[0]["context"]["agent_name"] = "scripted"  # its command hook runs here
    rows[1]["transcript"] = "x" * 500  # too long to inline at the limit below
    suite = write_suite(tmp_path / "s", rows, MIXED_CONFIG)
    env.setenv("JUDGE_BATCH_MAX_TRANSCRIPT_CHARS", "100")
    with LLMServer(handler=judge_by_content) as server:
        use(env, server, "anthropic")
        assert run_eval([str(suite), "--out", str(tmp_path / "o"), "--batch", "--no-cache"]) == 0
    section = report(tmp_path / "o")["batch"]
    assert section["judgedInBatches"] == 4 and section["judgedNormally"] == 2
    assert section["normalCases"] == [
        {"id": "c000", "repeat": 0, "reason": "a command hook"},
        {"id": "c001", "repeat": 0, "reason": "a transcript over 100 characters (needs the judge's tools)"},
    ]
    # c000's agent-level prompt hook and c001 (with its tools) were judged the normal way.
    judged_live = {
        m for r in live(server) for m in ("answer 0 BAD", "answer 1 done") if m in json.dumps(r.body)
    }
    assert judged_live == {"answer 0 BAD", "answer 1 done"}
    assert sum(1 for r in server.requests if BATCH_HEADER in r.headers) == 4
    captured = capsys.readouterr()
    assert "4 judgement(s) go to batch APIs, 2 the normal way" in captured.err
    assert "1 x a command hook" in captured.out


def test_fake_models_are_judged_the_normal_way(
    tmp_path: Path, env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(4))  # model fake:allow
    assert run_eval([str(suite), "--out", str(tmp_path / "o"), "--batch"]) == 0
    section = report(tmp_path / "o")["batch"]
    assert section["judgedNormally"] == 4 and section["batches"] == []
    assert section["normalReasons"] == {"fake models have no batch API": 4}
    assert "4 x fake models have no batch API" in capsys.readouterr().out


def test_batch_verdicts_are_cached_apart_from_normal_ones(tmp_path: Path, env: pytest.MonkeyPatch) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(4), LLM_CONFIG)
    with LLMServer(handler=judge_by_content) as server:
        use(env, server, "openai")
        for out in ("a", "b"):
            assert run_eval([str(suite), "--out", str(tmp_path / out), "--batch", "--quiet"]) == 0
        assert calls(server, "POST /v1/batches") == ["POST /v1/batches"]  # the second run: all from the cache
        assert report(tmp_path / "b")["cachedResults"] == 4
        assert run_eval([str(suite), "--out", str(tmp_path / "c"), "--quiet"]) == 0
        assert len(live(server)) == 4  # a normal run does not reuse verdicts given without tools


@pytest.mark.parametrize(
    ("extra", "setting", "message"),
    [
        (["--workers", "2"], {}, "--batch cannot be combined with --workers"),
        (["--recorded"], {}, "--batch cannot be combined with --recorded"),
        (
            [],
            {"JUDGE_BATCH_POLL_SECONDS": "soon"},
            "JUDGE_BATCH_POLL_SECONDS must be a number from 0 to 3600",
        ),
        ([], {"JUDGE_BATCH_DISCOUNT": "2"}, "JUDGE_BATCH_DISCOUNT must be a number from 0 to 1"),
        (
            [],
            {"JUDGE_BATCH_MAX_TRANSCRIPT_CHARS": "lots"},
            "JUDGE_BATCH_MAX_TRANSCRIPT_CHARS must be a whole number",
        ),
    ],
)
def test_bad_batch_settings_get_a_clear_error(
    extra: list[str],
    setting: dict[str, str],
    message: str,
    tmp_path: Path,
    env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key, value in setting.items():
        env.setenv(key, value)
    suite = write_suite(tmp_path / "s", labelled_rows(2))
    assert run_eval([str(suite), "--out", str(tmp_path / "o"), "--batch", *extra]) == 2
    assert message in capsys.readouterr().err


def test_a_batch_that_cannot_be_submitted_is_a_clear_error(
    tmp_path: Path, env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(2), LLM_CONFIG)
    with LLMServer(api_key="the-right-key") as server:
        use(env, server, "openai")  # sends "test-key": refused
        assert run_eval([str(suite), "--out", str(tmp_path / "o"), "--batch", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "cannot submit the batch" in err and "401" in err


def test_large_runs_are_split_into_several_batches(tmp_path: Path, env: pytest.MonkeyPatch) -> None:
    from judge.evaluation.batch.openai import OpenAIBatches

    env.setattr(OpenAIBatches, "max_requests", 3)
    suite = write_suite(tmp_path / "s", labelled_rows(4), LLM_CONFIG)
    with LLMServer(handler=judge_by_content) as server:
        use(env, server, "openai")
        assert (
            run_eval([str(suite), "--out", str(tmp_path / "o"), "--batch", "--repeats", "2", "--quiet"]) == 0
        )
        assert calls(server, "POST /v1/batches") == ["POST /v1/batches"] * 3  # 8 requests, 3 at most each
    section = report(tmp_path / "o")["batch"]
    assert [b["requests"] for b in section["batches"]] == [3, 3, 2]
    assert len({r.headers[BATCH_HEADER] for r in server.requests}) == 3 and len(server.requests) == 8
    assert report(tmp_path / "o")["n"] == 8 and report(tmp_path / "o")["errors"] == 0
