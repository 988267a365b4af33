"""``JUDGE_REQUEST_LOG``: every request the judge sends to a model and its answer, one JSON
line each; through the real openai / anthropic SDKs against the local test server, and
through ``judge eval --workers 2`` sharing one file."""

from __future__ import annotations

import importlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from judge.errors import HookError
from judge.llm import LLMJudge
from judge.llm.providers.request_log import REQUEST_LOG_VAR, RequestLog
from judge.testing import LLMServer, call, fail, say, verdict
from tests.evaluation.test_runner import labelled_rows, write_suite
from tests.llm.test_schemas import request_for

FORMATS = ["openai", "anthropic"]
REPO = Path(__file__).resolve().parents[2]

for _sdk in FORMATS:
    importlib.import_module(_sdk)


@pytest.fixture
def server(llm_server: LLMServer) -> LLMServer:
    return llm_server  # (tests/conftest.py: reset for each test)


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_each_request_and_its_answer_is_one_line(server, fmt, tmp_path):
    transcript = tmp_path / "transcript.txt"
    transcript.write_text("User: run the tests\nAssistant: (tool) pytest -> 2 failed\n")
    log = tmp_path / "requests.jsonl"
    server.push(call("ReadFile", startLine=1, endLine=100), verdict(False, "2 tests failed."))
    judge = LLMJudge(env={**server.env(fmt), REQUEST_LOG_VAR: str(log)})
    result = await judge.evaluate(request_for(transcript))
    assert (result.ok, result.reason) == (False, "2 tests failed.")
    first, second = lines_of(log)
    assert first["model"] == second["model"] and first["model"].startswith(f"{fmt}:")
    assert first["pid"] == os.getpid() and first["seconds"] >= 0 and "T" in first["time"]
    assert first["url"].startswith("http://127.0.0.1:")
    # the bodies as sent and as received: the read's result went back, the verdict came
    assert first["request"] == server.requests[0].body and "tools" in first["request"]
    assert "ReadFile" in json.dumps(first["response"])
    assert "2 failed" in json.dumps(second["request"])
    assert "2 tests failed." in json.dumps(second["response"])
    assert "error" not in first and "error" not in second
    assert server.env(fmt)[f"{fmt.upper()}_API_KEY"] not in log.read_text()  # headers are not logged
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_rejected_request_is_logged_with_its_error(server, fmt, tmp_path):
    log = tmp_path / "requests.jsonl"
    server.push(fail(400, "response_format is not supported"), say('{"ok": true}'))
    judge = LLMJudge(env={**server.env(fmt), REQUEST_LOG_VAR: str(log)})
    assert (await judge.evaluate(request_for())).ok is True
    rejected, retried = lines_of(log)
    assert rejected["error"].startswith("HTTP 400") and "not supported" in rejected["error"]
    assert "response" not in rejected
    assert retried["response"] is not None and "error" not in retried
    assert len(json.dumps(rejected["request"])) > len(json.dumps(retried["request"]))  # the schema dropped


async def test_no_log_without_the_variable(server, tmp_path):
    judge = LLMJudge(env={**server.env("openai"), REQUEST_LOG_VAR: " "})
    assert (await judge.evaluate(request_for())).ok is True
    assert RequestLog.from_env({}) is None and RequestLog.from_env({REQUEST_LOG_VAR: ""}) is None
    assert list(tmp_path.iterdir()) == []


async def test_a_log_that_cannot_be_written_is_a_hook_error_naming_it(server, tmp_path):
    for bad in (tmp_path, tmp_path / "missing" / "requests.jsonl"):
        with pytest.raises(HookError, match=rf"JUDGE_REQUEST_LOG: cannot write {bad}"):
            await LLMJudge(env={**server.env("openai"), REQUEST_LOG_VAR: str(bad)}).evaluate(request_for())
    assert server.requests == []  # nothing was sent unlogged


def test_eval_workers_share_one_log(server, tmp_path):
    config = {"hooks": {"Stop": [{"type": "prompt", "prompt": "Is it complete? $ARGUMENTS"}]}}
    suite = write_suite(tmp_path / "s", labelled_rows(120), config)
    log = tmp_path / "requests.jsonl"
    env = {**os.environ, **server.env("openai"), "PYTHONPATH": str(REPO), REQUEST_LOG_VAR: str(log)}
    env.pop("JUDGE_CONFIG", None)
    argv = [sys.executable, "-m", "judge", "eval", str(suite), "--out", str(tmp_path / "out")]
    proc = subprocess.run(
        [*argv, "--workers", "2", "--no-cache", "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    lines = lines_of(log)  # every line whole: appends from two processes never interleave
    assert len(lines) == 120 and len({line["pid"] for line in lines}) == 2
    finals = {line["request"]["messages"][-1]["content"] for line in lines}
    assert len(finals) == 120  # one request per case, each case once
