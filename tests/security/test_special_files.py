"""Special files (a FIFO, /dev/zero, /dev/urandom) named as a config, suite, cases file,
context, transcript or execution_summary: refused with a clear message, never a hang or
an endless read.

Every case runs the real command in a child process with a heap ceiling and a time
limit, so a regression fails here instead of hanging CI or eating its memory.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from judge.files import NotARegularFile, open_regular, read_text, text_lines
from judge.transcripts import prepare_transcript

DEVICES = ["/dev/zero", "/dev/urandom"]
ALLOW_CONFIG = {"hooks": {"Stop": [{"type": "prompt", "prompt": "Check. $ARGUMENTS", "model": "fake:allow"}]}}


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_DATA, (2 << 30, 2 << 30))  # a runaway read dies, not CI


def judge(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "JUDGE_CONFIG"}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "judge", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=full_env,
        preexec_fn=_limited,
    )


@pytest.fixture
def fifo(tmp_path) -> str:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return str(path)


@pytest.fixture(params=["fifo", *DEVICES])
def special(request, tmp_path) -> str:
    if request.param == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
        return str(path)
    return str(request.param)


def _refused(text: str, path: str) -> bool:
    return path in text and ("FIFO" in text or "character device" in text) and "not a regular file" in text


def _config(tmp_path: Path, data=ALLOW_CONFIG) -> str:
    path = tmp_path / "judge.json"
    path.write_text(json.dumps(data))
    return str(path)


def _context(tmp_path: Path, **extra) -> str:
    path = tmp_path / "context.json"
    path.write_text(json.dumps({"final_output": "done", **extra}))
    return str(path)


# ---------------------------------------------------------------------------
# The helper


def test_open_regular_refuses_without_blocking_or_reading(special):
    with pytest.raises(NotARegularFile) as info:
        open_regular(special, "transcript")
    assert _refused(str(info.value), special)
    with pytest.raises(NotARegularFile):
        read_text(special, "config file")
    with pytest.raises(NotARegularFile):
        prepare_transcript(special)


def test_open_regular_reads_regular_files_and_bounds_lines(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"one\r\n" + b"x" * 25 + b"\n")
    with open_regular(path) as handle:
        assert list(text_lines(handle, 10)) == ["one\n", "x" * 10, "x" * 10, "x" * 5 + "\n"]
    link = tmp_path / "link"
    link.symlink_to(path)
    assert read_text(link).startswith("one")


# ---------------------------------------------------------------------------
# judge run


def test_run_refuses_a_special_config(special, tmp_path):
    done = judge("run", "--config", special, "--event", "Stop", "--context", _context(tmp_path))
    assert done.returncode == 1 and _refused(done.stderr, special), done.stderr


def test_run_refuses_a_special_context(special, tmp_path):
    done = judge("run", "--config", _config(tmp_path), "--event", "Stop", "--context", special)
    assert done.returncode == 1 and _refused(done.stderr, special), done.stderr


def test_run_refuses_a_special_transcript(special, tmp_path):
    done = judge(
        "run", "--config", _config(tmp_path), "--event", "Stop", "--context", _context(tmp_path),
        "--transcript", special,
    )  # fmt: skip
    assert done.returncode == 1 and _refused(done.stderr, special), done.stderr


def test_run_with_a_special_execution_summary_is_a_hook_error(special, tmp_path):
    context = _context(tmp_path, execution_summary=special)
    done = judge("run", "--config", _config(tmp_path), "--event", "Stop", "--context", context)
    assert done.returncode == 0, done.stderr
    decision = json.loads(done.stdout)
    [hook] = decision["hooks"]
    assert _refused(hook["error"], special), hook


# ---------------------------------------------------------------------------
# judge eval


def _suite(tmp_path: Path, config: str = "agent.json", cases: str = "cases.jsonl", row=None) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "agent.json").write_text(json.dumps(ALLOW_CONFIG))
    row = row or {"id": "c1", "context": {"final_output": "done"}, "label": "allow"}
    (tmp_path / "cases.jsonl").write_text(json.dumps(row) + "\n")
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"name: t\nconfig: {config}\nevent: Stop\ncases: {cases}\n")
    return suite


def test_eval_refuses_a_special_suite_config_or_cases_file(special, tmp_path):
    for suite in (
        Path(special),
        _suite(tmp_path / "c", config=special),
        _suite(tmp_path / "k", cases=special),
    ):
        done = judge("eval", str(suite), "--out", str(tmp_path / "out"), "--quiet", "--no-cache")
        assert done.returncode == 2 and _refused(done.stderr, special), (suite, done.stderr)


def test_eval_refuses_a_case_whose_execution_summary_is_special(special, tmp_path):
    # refused when the suite loads, before anything is judged (or paid for)
    row = {"id": "c1", "context": {"final_output": "done", "execution_summary": special}, "label": "allow"}
    suite = _suite(tmp_path, row=row)
    out = tmp_path / "out"
    done = judge("eval", str(suite), "--out", str(out), "--quiet", "--no-cache")
    assert done.returncode == 2 and "cannot load suite" in done.stderr, done.stderr
    assert _refused(done.stderr, special) and "cases.jsonl:1: case 'c1': execution_summary" in done.stderr
    assert not (out / "results.jsonl").exists()


# ---------------------------------------------------------------------------
# judge claude-code


def _stop_input(transcript: str | None = None) -> str:
    payload = {"session_id": "s1", "hook_event_name": "Stop", "stop_hook_active": False}
    payload["last_assistant_message"] = "done"
    if transcript is not None:
        payload["transcript_path"] = transcript
    return json.dumps(payload)


def test_claude_code_refuses_a_special_config(special, tmp_path):
    state = {"JUDGE_STATE": str(tmp_path / "state.sqlite")}
    for args, env in ((["--config", special], state), ([], {**state, "JUDGE_CONFIG": special})):
        done = judge("claude-code", *args, stdin=_stop_input(), env=env)
        assert _refused(done.stderr, special), (args, done.stderr)
        assert done.returncode in (0, 2)  # the adapter's documented failure outputs


def test_claude_code_with_a_special_transcript_judges_without_it(special, tmp_path):
    env = {"JUDGE_STATE": str(tmp_path / "state.sqlite")}
    done = judge("claude-code", "--config", _config(tmp_path), stdin=_stop_input(special), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() in ("", "{}") or json.loads(done.stdout).get("decision") != "block"
