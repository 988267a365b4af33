"""A double Ctrl-C stops `judge eval` with exit code 2 and the finished results kept.

A second SIGINT used to land wherever the process was (inside the cancellation, or
during interpreter shutdown) and kill it by SIGINT. The eval runs as a real process;
a command hook tells the test (through a FIFO) when the slow case has started, and the
test reads stderr to send later SIGINTs while the process is shutting down.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from judge.evaluation.runner import read_results


def _suite(folder: Path, ready: Path) -> Path:
    hook = f'input=$(cat); case "$input" in *slow*) echo go > {ready}; sleep 30;; esac'
    config = {"hooks": {"Stop": [{"type": "command", "command": hook, "timeout": 60}]}}
    (folder / "agent.json").write_text(json.dumps(config))
    outputs = ["done 1", "done 2", "slow 3", "done 4"]
    rows = [{"id": f"c{i}", "context": {"final_output": o}, "label": "allow"} for i, o in enumerate(outputs)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    suite = folder / "suite.yaml"
    suite.write_text("name: t\nconfig: agent.json\nevent: Stop\ncases: cases.jsonl\n")
    return suite


def _interrupt(tmp_path: Path, late_signals: bool, writable: Path) -> tuple[int, str, Path]:
    ready = writable / "ready"  # hooks may run as another user (nobody, under root)
    os.mkfifo(ready)
    os.chmod(ready, 0o666)
    suite = _suite(tmp_path, ready)
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    args = [str(suite), "--out", str(out), "--no-cache", "--concurrency", "1", "--quiet"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "judge", "eval", *args],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # the test's own process group gets no signal
    )
    assert proc.stderr is not None
    try:
        assert ready.read_text() == "go\n"  # the slow case is being judged
        os.kill(proc.pid, signal.SIGINT)
        os.kill(proc.pid, signal.SIGINT)  # the second: during the cancellation
        err = ""
        if late_signals:
            while line := proc.stderr.readline():
                err += line
                if line.startswith("interrupted:"):  # it is about to exit: shutdown signals
                    for _ in range(3):
                        os.kill(proc.pid, signal.SIGINT)
                    break
        err += proc.stderr.read()
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stderr.close()
    return code, err, out


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("late_signals", [False, True])
def test_repeated_ctrl_c_exits_2_with_results_kept(tmp_path, late_signals, hook_writable):
    code, err, out = _interrupt(tmp_path, late_signals, hook_writable)
    assert code == 2, err
    assert "interrupted: 2 of 4 results are kept" in err and "--resume" in err
    assert "KeyboardInterrupt" not in err  # no later SIGINT escaped into the program
    assert [r.id for r in read_results(out / "results.jsonl")] == ["c0", "c1"]
