"""A special file that `stat` calls regular but whose reads wait for data (`/proc/kmsg` as
root) is refused by every command, never waited for: `judge run` (config, context,
transcript, execution_summary), `judge eval`, `judge validate` and `judge claude-code`
(where a tool call is then denied, never let through unchecked).

The commands run for real against `/proc/kmsg` (only as root, where it can be opened;
reading it takes the kernel messages waiting there, as `dmesg -c` would), each in a child
with a time limit: a regression hangs into that limit and fails. The helper is also
tested anywhere, with a pipe made to look regular.
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path

import pytest

from judge import files
from judge.files import NotARegularFile, check_readable, open_regular, read_text
from tests.security.test_special_files import ALLOW_CONFIG, _config, _context, _stop_input, _suite, judge

KMSG = "/proc/kmsg"


def _kmsg_opens() -> bool:
    try:
        os.close(os.open(KMSG, os.O_RDONLY | os.O_NONBLOCK))
    except OSError:
        return False
    return True


needs_kmsg = pytest.mark.skipif(not _kmsg_opens(), reason="needs root (a readable /proc/kmsg)")


def _waits(text: str, path: str = KMSG) -> bool:
    return f"{path} is a special file whose reads wait for data, not a regular file" in text


@pytest.fixture
def waiting_pipe(tmp_path, monkeypatch):
    """A pipe with a writer that never writes, which ``fstat`` is made to call regular."""
    path = tmp_path / "looks-regular"
    os.mkfifo(path)
    writer = os.open(path, os.O_RDWR | os.O_NONBLOCK)  # (a writer: reads wait instead of ending)
    real_fstat = os.fstat

    def fstat(fd: int) -> os.stat_result:
        found = real_fstat(fd)
        if stat.S_ISFIFO(found.st_mode):
            fields = list(found)
            fields[0] = stat.S_IFREG | 0o644
            return os.stat_result(fields)
        return found

    monkeypatch.setattr(files.os, "fstat", fstat)
    yield str(path)
    os.close(writer)


def test_a_read_that_would_wait_is_refused_at_once(waiting_pipe: str) -> None:
    outcome: list[BaseException | None] = []

    def attempt() -> None:
        try:
            with open_regular(waiting_pipe, "transcript") as handle:
                handle.read(4096)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    reader = threading.Thread(target=attempt, daemon=True)
    reader.start()
    reader.join(30)  # (it used to wait forever)
    assert outcome and isinstance(outcome[0], NotARegularFile), outcome
    assert _waits(str(outcome[0]), waiting_pipe)
    for call in (lambda: read_text(waiting_pipe, "config file"), lambda: check_readable(waiting_pipe, "x")):
        with pytest.raises(NotARegularFile):
            call()


def test_regular_files_still_read_whole_and_by_line(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"a\n" * 300_000)
    with open_regular(path) as handle:
        assert handle.readline() == b"a\n"
        assert len(handle.read()) == 599_998
        handle.seek(0)
        assert handle.read(3) == b"a\na"
    assert len(read_text(path)) == 600_000


@needs_kmsg
def test_judge_run_refuses_it_wherever_it_is_named(tmp_path: Path) -> None:
    config, context = _config(tmp_path), _context(tmp_path)
    for args in (
        ["--config", KMSG, "--context", context],
        ["--config", config, "--context", KMSG],
        ["--config", config, "--context", context, "--transcript", KMSG],
    ):
        began = time.monotonic()
        done = judge("run", "--event", "Stop", *args)
        assert done.returncode == 1 and _waits(done.stderr), (args, done.stderr)
        assert time.monotonic() - began < 30
    done = judge(
        "run", "--config", config, "--event", "Stop", "--context", _context(tmp_path, execution_summary=KMSG)
    )
    assert done.returncode == 0, done.stderr
    [hook] = json.loads(done.stdout)["hooks"]
    assert _waits(hook["error"]), hook


@needs_kmsg
def test_judge_validate_and_judge_eval_refuse_it(tmp_path: Path) -> None:
    done = judge("validate", KMSG)
    assert done.returncode == 1 and _waits(done.stdout + done.stderr), done.stdout + done.stderr
    for suite in (Path(KMSG), _suite(tmp_path / "c", config=KMSG), _suite(tmp_path / "k", cases=KMSG)):
        done = judge("eval", str(suite), "--out", str(tmp_path / "out"), "--quiet", "--no-cache")
        assert done.returncode == 2 and _waits(done.stderr), (suite, done.stderr)
    row = {"id": "c1", "context": {"final_output": "done", "execution_summary": KMSG}, "label": "allow"}
    done = judge(
        "eval", str(_suite(tmp_path / "e", row=row)), "--out", str(tmp_path / "o"), "--quiet", "--no-cache"
    )
    assert done.returncode == 2 and _waits(done.stderr), done.stderr


@needs_kmsg
def test_judge_claude_code_denies_the_tool_call_and_judges_a_stop_without_the_transcript(
    tmp_path: Path,
) -> None:
    checked = {
        "hooks": {
            **ALLOW_CONFIG["hooks"],
            "PreToolUse": [dict(ALLOW_CONFIG["hooks"]["Stop"][0], matcher="*")],
        }
    }
    env = {"JUDGE_STATE": str(tmp_path / "state.sqlite")}
    tool_call = json.dumps(
        {
            "session_id": "s1",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
        }
    )
    done = judge("claude-code", "--config", KMSG, stdin=tool_call, env=env)
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny" and _waits(answer["permissionDecisionReason"]), done.stdout
    done = judge("claude-code", "--config", _config(tmp_path, checked), stdin=_stop_input(KMSG), env=env)
    assert done.returncode == 0 and _waits(done.stderr), done.stderr
    assert json.loads(done.stdout or "{}").get("decision") != "block"
