"""`judge eval --batch` where a batch gives less than everything: answers it did return are
used and kept, a broken results stream is a clear error; and cascades in eval reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import Response

from judge.evaluation.runner import read_results
from judge.testing import LLMRequest, LLMServer, Reply, verdict
from judge.testing import message_batch_wire as mbw
from judge.testing.batch_wire import BATCH_HEADER
from tests.evaluation.test_batch import env, live, report, run_eval, use
from tests.evaluation.test_runner import write_suite

__all__ = ["env"]  # the fixture, used by name

TWO_HOOKS: dict[str, Any] = {
    "hooks": {
        "Stop": [
            {"type": "prompt", "prompt": "Hook A: complete? $ARGUMENTS"},
            {"type": "prompt", "prompt": "Hook B: polite? $ARGUMENTS"},
        ]
    }
}


def _hooks_in(requests: list[LLMRequest]) -> list[str]:
    return sorted("A" if "Hook A" in json.dumps(r.body) else "B" for r in requests)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_what_an_expired_batch_answered_is_used_and_only_the_rest_is_judged_live(
    provider: str, tmp_path: Path, env: pytest.MonkeyPatch
) -> None:
    rows = [{"id": "c1", "context": {"final_output": "done"}, "label": "allow"}]
    suite = write_suite(tmp_path / "s", rows, TWO_HOOKS)
    with LLMServer(default=verdict(True)) as server:
        use(env, server, provider)
        server.batches.controls.end_as = "expired"
        server.batches.controls.finish_only = 1
        assert run_eval([str(suite), "--out", str(tmp_path / "o"), "--batch", "--quiet"]) == 0
        answered = [r for r in server.requests if BATCH_HEADER in r.headers]
        again = live(server)
    assert len(answered) == 1 and len(again) == 1  # the answered request is not paid twice
    assert _hooks_in(answered + again) == ["A", "B"]
    assert [r.decision for r in read_results(tmp_path / "o" / "results.jsonl")] == ["allow"]


def test_pre_tool_use_answers_the_engine_did_not_ask_for_are_kept_for_the_next_run(
    tmp_path: Path, env: pytest.MonkeyPatch
) -> None:
    # the first hook denies, so the engine never reads the second's answer; it was paid for
    config = {
        "hooks": {
            "PreToolUse": [
                {"type": "prompt", "matcher": "Bash", "prompt": "Hook A: safe? $ARGUMENTS"},
                {"type": "prompt", "matcher": "Bash", "prompt": "Hook B: allowed? $ARGUMENTS"},
            ]
        }
    }
    folder = tmp_path / "s"
    write_suite(folder, [], config)
    case = {
        "id": "c1",
        "context": {"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}},
        "label": "block",
    }
    (folder / "cases.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    (folder / "suite.yaml").write_text("name: t\nconfig: agent.yaml\nevent: PreToolUse\ncases: cases.jsonl\n")

    def handler(request: LLMRequest) -> Reply:
        return verdict(False, "dangerous") if "Hook A" in json.dumps(request.body) else verdict(True)

    cache = tmp_path / "cache.sqlite"
    with LLMServer(handler=handler) as server:
        use(env, server, "openai")
        made = []
        for run in ("first", "second"):
            server.reset()
            out = tmp_path / run
            argv = [
                str(folder / "suite.yaml"),
                "--out",
                str(out),
                "--cache",
                str(cache),
                "--batch",
                "--quiet",
            ]
            assert run_eval(argv) == 0
            made.append(len([r for r in server.side_requests if r.path == "POST /v1/batches"]))
            assert [r.decision for r in read_results(out / "results.jsonl")] == ["block"]
    assert made == [1, 0]
    assert (
        report(tmp_path / "first")["cachedResults"] == 0 and report(tmp_path / "second")["cachedResults"] == 1
    )


def test_a_broken_line_in_anthropic_results_is_a_clear_error_that_resumes(
    tmp_path: Path,
    env: pytest.MonkeyPatch,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    original = mbw.MessageBatches.results_anthropic

    async def garbled(self: mbw.MessageBatches, request: Request) -> Response:
        found = self.results.get(request.path_params["batch_id"])
        if found is None:
            return await original(self, request)
        lines = ['{"custom_id": "zzz", "result": ', *(json.dumps(item) for item in found)]
        return Response("\n".join(lines) + "\n", media_type="application/x-jsonl")

    monkeypatch.setattr(mbw.MessageBatches, "results_anthropic", garbled)
    rows = [{"id": f"c{i}", "context": {"final_output": "done"}, "label": "allow"} for i in range(3)]
    suite = write_suite(
        tmp_path / "s", rows, {"hooks": {"Stop": [{"type": "prompt", "prompt": "Done? $ARGUMENTS"}]}}
    )
    with LLMServer(default=verdict(True)) as server:
        use(env, server, "anthropic")
        assert run_eval([str(suite), "--out", str(tmp_path / "o"), "--batch", "--quiet"]) == 2
        assert live(server) == []  # nothing paid twice
    err = capsys.readouterr().err
    assert "reading the results of" in err and "JSONDecodeError" in err and "--resume" in err


def test_a_cascade_is_scored_as_the_hook_reads_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # on Stop a rejection without a reason is an approval: the stage is scored that way
    config = {
        "hooks": {
            "Stop": [
                {"type": "prompt", "prompt": "Done? $ARGUMENTS", "model": ["fake:reasonless", "fake:allow"]}
            ]
        }
    }
    rows = [{"id": f"c{i}", "context": {"final_output": "done"}, "label": "allow"} for i in range(2)]
    suite = write_suite(tmp_path / "s", rows, config)
    assert run_eval([str(suite), "--out", str(tmp_path / "o"), "--quiet", "--no-cache"]) == 0
    section = report(tmp_path / "o")["cascade"]["agent[0]"]
    assert section["firstAlone"]["accuracy"] == 1.0 and section["cascade"]["accuracy"] == 1.0
    assert section["stages"][0]["verdicts"]["block"] == 2  # what the model said, as it said it


def test_a_judgement_without_a_usable_verdict_still_reports_its_tokens(
    tmp_path: Path, env: pytest.MonkeyPatch
) -> None:
    rows = [{"id": "c1", "context": {"final_output": "done"}, "label": "allow"}]
    suite = write_suite(
        tmp_path / "s", rows, {"hooks": {"Stop": [{"type": "prompt", "prompt": "Done? $ARGUMENTS"}]}}
    )
    with LLMServer(default=Reply(text="I think it is probably fine, but hard to say.")) as server:
        use(env, server, "openai")
        assert run_eval([str(suite), "--out", str(tmp_path / "o"), "--quiet", "--no-cache"]) == 2
        answered = len(server.requests)
    (result,) = read_results(tmp_path / "o" / "results.jsonl")
    assert result.error is not None and "not a verdict" in result.error
    assert answered >= 2 and result.usage.input_tokens > 0 and result.cost_usd


def test_batch_state_keeps_no_credential_and_polls_with_the_live_one(
    tmp_path: Path, env: pytest.MonkeyPatch
) -> None:
    rows = [{"id": "c1", "context": {"final_output": "done"}, "label": "allow"}]
    suite = write_suite(
        tmp_path / "s", rows, {"hooks": {"Stop": [{"type": "prompt", "prompt": "Done? $ARGUMENTS"}]}}
    )
    with LLMServer(default=verdict(True)) as server:
        use(env, server, "openai")
        env.setenv("OPENAI_BASE_URL", server.openai_base_url.replace("http://", "http://gwuser:TOPSECRET@"))
        assert run_eval([str(suite), "--out", str(tmp_path / "o"), "--batch", "--quiet"]) == 0
    state = tmp_path / "o" / "batch.json"
    text = state.read_text()
    assert "TOPSECRET" not in text and "gwuser:***@" in text  # batch.json is a CI artifact
    assert state.stat().st_mode & 0o777 == 0o600
    assert report(tmp_path / "o")["batch"]["judgedInBatches"] == 1  # polled and read through the live URL
