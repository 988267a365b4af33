"""The bench scripts still run: each at its smallest configuration (no timing asserted)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def bench_on_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(BENCH))
    yield


def bench(name: str) -> ModuleType:
    sys.modules.pop(name, None)
    return importlib.import_module(name)


def test_engine_overhead_smallest(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "JUDGE_MODEL_REASONINGFAST"):
        monkeypatch.setenv(name, "restored after the test")  # the script points them at its server
    assert bench("bench_engine_overhead").main(["--n", "2", "--warmup", "1"]) == 0
    out = capsys.readouterr().out
    assert "engine: prompt hook" in out and "target: prompt hook" in out


def test_eval_concurrency_smallest(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench("bench_eval_concurrency").main(["--n", "4", "--latency", "0.01", "--concurrency", "2"]) == 0
    assert "wall/ideal" in capsys.readouterr().out


def test_evidence_smallest(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench("bench_evidence").main(["--repeats", "1", "--latency", "0", "--concurrency", "2"]) == 0
    out = capsys.readouterr().out
    assert "hallucinated citations caught: 9/9 (all)" in out and "evidence: off (baseline)" in out


def test_transcript_tools_smallest(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench("bench_transcript_tools").main(["--sizes", "1"]) == 0
    out = capsys.readouterr().out
    assert "GrepSearch regex" in out and "ReadFile (near end)" in out


def test_service_smallest(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--seconds", "0.3", "--connections", "2", "--requests", "5", "--workers", "1"]
    assert bench("bench_service").main(args) == 0
    out = capsys.readouterr().out
    assert "POST Stop, prompt hook" in out and "GET /healthz" in out


def test_service_command_hook_smallest(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench("bench_service").main(["--command-hook", "--n", "2", "--warmup", "1"]) == 0
    out = capsys.readouterr().out
    assert "minimal Starlette app, plain subprocess (baseline)" in out and "JUDGE_FORKSERVER=0" in out
    assert "target: a Stop with one command hook <= 2x" in out


def test_inspect_judge_side_runs_without_inspect(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    module = bench("bench_inspect")
    # No install in a test: Inspect AI is reported missing, so its row is skipped with the reason.
    module.ensure_inspect = lambda folder: (None, "skipped in the smoke test")
    assert module.main(["--n", "3", "--latency", "0", "--concurrency", "2", "--venv", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "judge eval" in out and "Inspect AI row skipped: skipped in the smoke test" in out


def test_claude_code_smallest(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench("bench_claude_code").main(["--n", "1", "--mb", "0.2"]) == 0
    out = capsys.readouterr().out
    assert "judge: PreToolUse, no hook matches" in out and "later Stop, ~20 KB appended" in out
    assert "first event: the resident starts" in out and "target: Stop through the OpenAI SDK" in out


def test_command_hooks_smallest(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench("bench_command_hooks").main(["--n", "2"]) == 0
    out = capsys.readouterr().out
    assert "bare bash -c true (baseline)" in out and "sandboxed, PID namespace" in out


def test_cascade_smallest(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench("bench_cascade").main(["--fast-latency", "0", "--strong-latency", "0"]) == 0
    out = capsys.readouterr().out
    assert "strong alone (baseline)" in out and "cascade [fast, strong]" in out and "9/20" in out


def test_service_replicas_smallest(capsys: pytest.CaptureFixture[str], postgres: object) -> None:
    """Needs the PostgreSQL server binaries (the ``postgres`` fixture skips without them)."""
    args = ["--seconds", "0.5", "--sessions", "2", "--replicas", "2", "--warmup", "0", "--latency", "0"]
    assert bench("bench_service_replicas").main(args) == 0
    out = capsys.readouterr().out
    assert "PostgreSQL, 2 replicas" in out and "SQLite, 1 process" in out


def test_tuning_smallest(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench("bench_tuning").main(["--seeds", "1", "--rounds", "1", "--edits", "1"]) == 0
    out = capsys.readouterr().out
    assert "| 2 + rationales |" in out and "--objective pairwise" in out and "block precision" in out
