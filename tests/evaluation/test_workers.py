"""`judge eval --workers N`: forked worker processes, one results stream, the same guarantees."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from judge.cli import build_parser
from judge.cli.eval import eval_main
from judge.evaluation.metrics import stable_view
from judge.evaluation.runner import read_results
from judge.evaluation.workers import MIN_JOBS_PER_WORKER, available_cpus, choose_workers
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.testing import LLMServer, verdict
from tests.evaluation.test_runner import ScriptedJudge, labelled_rows, write_suite

REPO = Path(__file__).resolve().parents[2]
LLM_CONFIG: dict[str, Any] = {"hooks": {"Stop": [{"type": "prompt", "prompt": "Is it complete? $ARGUMENTS"}]}}


def run_eval(argv: list[str], judge: Any = None) -> int:
    return eval_main(build_parser().parse_args(["eval", *argv]), judge=judge)


class PidJudge(ScriptedJudge):
    """Says which process judged each case (in the reason)."""

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        found = await super().evaluate(request)
        return found.model_copy(update={"reason": f"{found.reason or 'ok'} pid={os.getpid()}"})


def test_choose_workers() -> None:
    assert choose_workers(4, jobs=1000, concurrency=100) == 4
    assert choose_workers(4, jobs=3, concurrency=100) == 3  # never more workers than jobs
    assert choose_workers(8, jobs=1000, concurrency=2) == 2  # nor than judgements in flight
    assert choose_workers(None, jobs=MIN_JOBS_PER_WORKER - 1, concurrency=100) == 1  # small runs: one process
    assert choose_workers(None, jobs=10**6, concurrency=100) == min(available_cpus(), 100)


def test_workers_give_the_same_report_as_one_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(40))
    one, many = tmp_path / "one", tmp_path / "many"
    assert run_eval([str(suite), "--out", str(one), "--quiet", "--no-cache"], ScriptedJudge()) == 0
    judge = ScriptedJudge()
    code = run_eval(
        [str(suite), "--out", str(many), "--no-cache", "--workers", "2", "--concurrency", "4"], judge
    )
    assert code == 0
    assert "in 2 worker processes" in capsys.readouterr().out
    assert judge.calls == 0  # every judgement ran in a forked worker, not here
    results = read_results(many / "results.jsonl")
    assert sorted((r.id, r.repeat) for r in results) == [(f"c{i:03d}", 0) for i in range(40)]
    first, second = (json.loads((d / "report.json").read_text()) for d in (one, many))
    assert stable_view(first) == stable_view(second)
    assert json.loads((many / "run.json").read_text())["workers"] == 2
    # Two processes, neither of them this one, did the judging.
    assert run_eval([str(suite), "--out", str(tmp_path / "p"), "--quiet", "--workers", "2"], PidJudge()) == 0
    pids = {r.reason.rsplit("pid=", 1)[1] for r in read_results(tmp_path / "p" / "results.jsonl") if r.reason}
    assert len(pids) == 2 and str(os.getpid()) not in pids


def test_workers_share_the_cache_through_the_sdk(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(24), LLM_CONFIG)
    with LLMServer(default=verdict(True)) as server:
        env = {**os.environ, **server.env("openai"), "PYTHONPATH": str(REPO)}
        env.pop("JUDGE_CONFIG", None)
        argv = [sys.executable, "-m", "judge", "eval", str(suite), "--workers", "2", "--quiet"]
        for out in ("a", "b"):
            proc = subprocess.run(
                [*argv, "--out", str(tmp_path / out)], env=env, capture_output=True, timeout=120
            )
            assert proc.returncode == 0, proc.stderr.decode()
        assert len(server.requests) == 24  # the second run was served from the cache
        assert json.loads((tmp_path / "b" / "run.json").read_text())["workers"] == 2


SLOW_RUNNER = """
import os, sys
from judge.cli import build_parser
from judge.cli.eval import eval_main
from tests.evaluation.test_runner import ScriptedJudge

class Slow(ScriptedJudge):
    async def evaluate(self, request):
        if "answer 13 " in str(request.context.get("final_output")) and os.environ.get("DIE_ON_13"):
            os._exit(3)
        return await super().evaluate(request)

sys.exit(eval_main(build_parser().parse_args(sys.argv[1:]), judge=Slow(delay=float(os.environ["DELAY"]))))
"""


def start_run(
    tmp_path: Path, out: Path, n: int, delay: float = 0.05, **env_extra: str
) -> tuple[subprocess.Popen[bytes], Path]:
    suite = write_suite(tmp_path / "s", labelled_rows(n))
    env = {**os.environ, "PYTHONPATH": str(REPO), "DELAY": str(delay), **env_extra}
    argv = [
        "eval",
        str(suite),
        "--out",
        str(out),
        "--workers",
        "2",
        "--concurrency",
        "2",
        "--quiet",
        "--no-cache",
    ]
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_RUNNER, *argv],
        cwd=REPO,
        env=env,
        stderr=subprocess.PIPE,
        start_new_session=True,
        # Ctrl-C as a terminal user has it, whatever disposition this process passes down.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    return proc, suite


def wait_for_results(proc: subprocess.Popen[bytes], results: Path, count: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if results.exists() and results.read_text().count("\n") >= count:
            return
        assert proc.poll() is None, "the run ended too early"
        time.sleep(0.01)
    raise AssertionError("no results in time")


def children_of(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(x) for x in (task / "children").read_text().split()]
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
def test_kill_9_of_the_parent_kills_the_workers_and_resume_finishes(tmp_path: Path) -> None:
    out = tmp_path / "o"
    proc, suite = start_run(tmp_path, out, 80)
    try:
        wait_for_results(proc, out / "results.jsonl", 6)
        workers = children_of(proc.pid)
        assert len(workers) == 2
        proc.kill()
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not any(alive(w) for w in workers), "a worker outlived its parent"
    finally:
        if proc.poll() is None:
            proc.kill()
    kept = read_results(out / "results.jsonl")
    judge = ScriptedJudge()
    assert run_eval([str(suite), "--out", str(out), "--resume", "--quiet", "--no-cache"], judge) == 0
    assert judge.calls == 80 - len(kept)
    assert json.loads((out / "report.json").read_text())["n"] == 80


@pytest.mark.slow
def test_ctrl_c_stops_the_workers_keeps_results_and_says_resume(tmp_path: Path) -> None:
    out = tmp_path / "o"
    proc, suite = start_run(tmp_path, out, 80, delay=0.5)  # ~20 s left when interrupted
    wait_for_results(proc, out / "results.jsonl", 6)
    workers = children_of(proc.pid)
    assert proc.poll() is None
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal does: the whole process group
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2, err.decode()
    assert "--resume" in err.decode()
    assert not any(alive(w) for w in workers)
    kept = read_results(out / "results.jsonl")
    assert 6 <= len(kept) < 80
    assert (
        run_eval([str(suite), "--out", str(out), "--resume", "--quiet", "--no-cache"], ScriptedJudge()) == 0
    )


@pytest.mark.slow
def test_a_worker_that_dies_ends_the_run_with_exit_2_and_keeps_the_rest(tmp_path: Path) -> None:
    out = tmp_path / "o"
    proc, _ = start_run(tmp_path, out, 30, DIE_ON_13="1")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "1 of 2 worker(s) died before finishing (exit codes [3])" in err.decode()
    assert "--resume" in err.decode()
    kept = {r.id for r in read_results(out / "results.jsonl")}
    assert "c013" not in kept and len(kept) >= 15  # the other worker finished its shard


def test_the_sdks_a_suite_uses_are_imported_once_before_forking(tmp_path: Path) -> None:
    suite = write_suite(
        tmp_path / "s",
        labelled_rows(2),
        {
            "hooks": {
                "Stop": [
                    {"type": "prompt", "model": "openai:m", "prompt": "p $ARGUMENTS"},
                    {"type": "prompt", "model": "fake:allow", "prompt": "p $ARGUMENTS"},
                ]
            }
        },
    )
    code = (
        "import sys; from judge.evaluation.suite import load_suite; "
        "from judge.evaluation.workers import preload_sdks; "
        f"preload_sdks(load_suite({str(suite)!r})); "
        "print('openai' in sys.modules, 'anthropic' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.stdout.split() == ["True", "False"], proc.stderr
