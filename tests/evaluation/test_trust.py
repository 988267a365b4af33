"""What `judge eval` measures about its judge beyond accuracy, driven through the real OpenAI
SDK against a local model server that counts its requests: samples (at most k× the calls,
their flip rate and per-case agreement), probes (at most (probes + 1)× the calls, their
flips), both served from the cache on a re-run; suite-defined probes; calibration.json;
and the recorded block rate corrected by a calibration record."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from judge.cli import main
from judge.hooks.calibration import prompt_sha256
from judge.testing import LLMRequest, LLMServer, Reply, verdict
from tests.evaluation.test_runner import write_suite

PROMPT = "Is it complete? $ARGUMENTS"
ANSWER = re.compile(r"answer (\d+) (BAD|done|UNSURE)")


def rows() -> list[dict[str, Any]]:
    """Three good answers, three bad ones, two the model is unsure about (it flips on them)."""
    out: list[dict[str, Any]] = []
    for i in range(3):
        out.append({"id": f"ok{i}", "context": {"final_output": f"answer {i} done"}, "label": "allow"})
        out.append({"id": f"bad{i}", "context": {"final_output": f"answer {i} BAD"}, "label": "block"})
    for i in range(2):
        out.append({"id": f"unsure{i}", "context": {"final_output": f"answer {i} UNSURE"}, "label": "block"})
    return out


class Model:
    """Blocks BAD answers and anything that claims success; on UNSURE ones it alternates."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()

    def __call__(self, request: LLMRequest) -> Reply:
        found = ANSWER.search(request.text)
        assert found is not None, request.text
        kind = found.group(2)
        self.seen[found.group(0)] += 1
        if kind == "UNSURE":
            return verdict(self.seen[found.group(0)] % 2 == 0, "not sure it is done")
        if kind == "BAD" or "All requested tasks have been completed" in request.text:
            return verdict(False, "it is not done")
        return verdict(True)


def config(**hook: Any) -> dict[str, Any]:
    return {"hooks": {"Stop": [{"type": "prompt", "model": "openai:m", "prompt": PROMPT, **hook}]}}


def run(server: LLMServer, suite: Path, out: Path, *extra: str) -> tuple[int, int]:
    """``judge eval``; (its exit code, the model calls it made)."""
    before = len(server.requests)
    code = main(["eval", str(suite), "--out", str(out), "--quiet", *extra])
    return code, len(server.requests) - before


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    with LLMServer(handler=Model()) as found:
        for key, value in found.env("openai").items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        monkeypatch.delenv("JUDGE_TEMPERATURE", raising=False)
        yield found


def report(out: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((out / "report.json").read_text())
    return loaded


def test_samples_cost_at_most_k_times_the_calls_and_a_rerun_is_served_from_the_cache(
    tmp_path: Path, server: LLMServer
) -> None:
    plain = write_suite(tmp_path / "plain", rows(), config())
    code, calls = run(server, plain, tmp_path / "out-plain", "--no-cache")
    assert (code, calls) == (0, 8)
    sampled = write_suite(tmp_path / "sampled", rows(), config(samples=3))
    code, calls = run(server, sampled, tmp_path / "runs" / "k3")
    assert code == 0 and calls <= 3 * 8
    assert calls == 3 * 8
    code, again = run(server, sampled, tmp_path / "runs" / "k3-again")
    assert (code, again) == (0, 0)  # every sample is its own cache entry
    found = report(tmp_path / "runs" / "k3-again")
    section = found["samples"]["hooks.Stop[0]"]
    assert (section["k"], section["judgements"]) == (3, 8)
    assert section["flipped"] == 2 and section["flipRate"] == pytest.approx(2 / 8)
    assert found["sampleFlipRate"] == pytest.approx(2 / 8)
    assert {c["id"] for c in section["byCase"]} == {"unsure0", "unsure1"}
    assert all(c["agreement"] == pytest.approx(2 / 3) for c in section["byCase"])
    html = (tmp_path / "runs" / "k3-again" / "report.html").read_text()
    assert "<h2>Samples</h2>" in html and "unsure0#0" in html


def test_adding_samples_reuses_the_judgements_already_made(tmp_path: Path, server: LLMServer) -> None:
    write_suite(tmp_path / "s", rows(), config())
    code, calls = run(server, tmp_path / "s" / "suite.yaml", tmp_path / "runs" / "k1")
    assert (code, calls) == (0, 8)
    write_suite(tmp_path / "s", rows(), config(samples=3))
    code, calls = run(server, tmp_path / "s" / "suite.yaml", tmp_path / "runs" / "k3")
    assert (code, calls) == (0, 16)  # the first sample of each is the judgement made before


def test_probes_cost_at_most_one_run_each_are_cached_and_count_their_flips(
    tmp_path: Path, server: LLMServer
) -> None:
    suite = write_suite(tmp_path / "s", rows()[:6], config())
    code, calls = run(server, suite, tmp_path / "runs" / "probed", "--probes", "all")
    assert code == 0 and calls <= (4 + 1) * 6
    code, again = run(server, suite, tmp_path / "runs" / "again", "--probes", "all")
    assert (code, again) == (0, 0)
    found = report(tmp_path / "runs" / "again")
    assert set(found["probes"]) == {"padding", "claims", "injection", "format"}
    claims = found["probes"]["claims"]
    assert (claims["n"], claims["flips"], claims["allowToBlock"], claims["blockToAllow"]) == (6, 3, 3, 0)
    assert claims["flipRate"] == pytest.approx(0.5)
    assert {f["id"] for f in claims["flipped"]} == {"ok0", "ok1", "ok2"}
    assert found["probes"]["padding"]["flips"] == 0
    assert found["probeFlipRate"] == pytest.approx(0.5)
    assert (tmp_path / "runs" / "again" / "probes" / "claims.jsonl").is_file()
    html = (tmp_path / "runs" / "again" / "report.html").read_text()
    assert "Flipped by claims (3)" in html and "Flipped by padding" not in html
    code, _ = run(
        server, suite, tmp_path / "runs" / "gate", "--probes", "claims", "--fail-over", "probeFlipRate=0.1"
    )
    assert code == 1


def test_suite_probes_perturb_the_transcript_or_the_answer(tmp_path: Path, server: LLMServer) -> None:
    cases = [
        {
            "id": "t1",
            "context": {"final_output": "answer 1 done"},
            "transcript": "user: x\nassistant: answer 1 done\n",
        },
        {"id": "t2", "context": {"final_output": "answer 2 done"}},
    ]
    suite = write_suite(tmp_path / "s", cases, config())
    suite.write_text(
        suite.read_text()
        + "probes:\n"
        + "  - name: worse\n    replace: {pattern: 'answer (\\d) done', with: 'answer 7 BAD'}\n"
        + '  - name: tail\n    target: transcript\n    append: "\\nassistant: anything else?\\n"\n'
    )
    code, _ = run(server, suite, tmp_path / "runs" / "p", "--probes", "worse,tail")
    assert code == 0
    found = report(tmp_path / "runs" / "p")["probes"]
    assert (found["worse"]["n"], found["worse"]["allowToBlock"]) == (2, 2)
    assert (found["tail"]["n"], found["tail"]["unchanged"]) == (1, 1)  # t2 has no transcript to change
    probed = [
        json.loads(line)
        for line in (tmp_path / "runs" / "p" / "probes" / "worse.jsonl").read_text().splitlines()
    ]
    assert {r["decision"] for r in probed} == {"block"}


@pytest.mark.parametrize(
    ("probes", "problem"),
    [
        (
            "  - name: x\n    replace: {pattern: 'a(', with: b}\n",
            "probes.0.replace.pattern: invalid regular expression 'a(': missing ): a( (RE2 syntax",
        ),
        ("  - name: x\n    replace: {pattern: '(a{999}){999}', with: b}\n", "invalid repetition size"),
        (
            "  - name: padding\n    append: x\n",
            "probes.0.name: 'padding' is a built-in probe's name; choose another",
        ),
        (
            "  - name: x\n    append: a\n    replace: {pattern: a, with: b}\n",
            "give replace, or prepend/append, not both",
        ),
        ("  - name: x\n", "give append, prepend or replace"),
        (
            "  - name: x\n    target: tool_input\n    append: a\n",
            "probes.0.target: Input should be 'final_output' or 'transcript'",
        ),
    ],
)
def test_a_bad_suite_probe_is_a_located_suite_error(
    tmp_path: Path, probes: str, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "s", rows()[:2], config(model="fake:allow"))
    suite.write_text(suite.read_text() + "probes:\n" + probes)
    assert main(["eval", str(suite), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{suite}: " in err and problem in err


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (["--probes", "zebra"], "--probes: unknown probe 'zebra'; known: padding, claims, injection, format"),
        (["--probes", ","], "--probes: name one or more of padding, claims, injection, format, or all"),
        (
            ["--probes", "all", "--recorded"],
            "--probes re-judges every case; it cannot be combined with --recorded",
        ),
        (["--calibration", "c.json"], "--calibration corrects recorded verdicts: use it with --recorded"),
    ],
)
def test_bad_probe_and_calibration_flags_are_refused_before_anything_is_judged(
    tmp_path: Path, flags: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "s", rows()[:2], config(model="fake:allow"))
    assert main(["eval", str(suite), "--out", str(tmp_path / "o"), "--quiet", *flags]) == 2
    assert problem in capsys.readouterr().err
    assert (
        not (tmp_path / "o" / "results.jsonl").exists() or not (tmp_path / "o" / "results.jsonl").read_text()
    )


def test_calibration_json_records_each_prompt_hooks_own_verdicts(tmp_path: Path, server: LLMServer) -> None:
    two = {
        "hooks": {
            "Stop": [
                {"type": "prompt", "model": "openai:m", "prompt": PROMPT},
                {"type": "prompt", "model": "fake:allow", "prompt": "Always fine? $ARGUMENTS"},
            ]
        }
    }
    suite = write_suite(tmp_path / "s", rows()[:6], two)
    assert main(["eval", str(suite), "--out", str(tmp_path / "runs"), "--quiet"]) == 0
    written = json.loads((tmp_path / "runs" / "calibration.json").read_text())
    first, second = written["records"]
    assert (first["index"], first["model"], first["promptSha256"]) == (0, "openai:m", prompt_sha256(PROMPT))
    assert first["confusion"] == {"tp": 3, "fp": 0, "tn": 3, "fn": 0} and first["kappa"] == 1.0
    assert first["kappaCi95"] == [1.0, 1.0] or first["kappaCi95"] is None
    assert first["blockPrecisionCi95"][0] < 1.0 == first["blockPrecisionCi95"][1]
    assert second["confusion"] == {"tp": 0, "fp": 0, "tn": 3, "fn": 3}  # its own verdicts, not the event's
    assert second["blockRecall"] == 0.0 and second["blockPrecision"] is None
    for key in ("suiteSha256", "judgeVersion", "createdAt", "allowRecallCi95", "blockRecallCi95"):
        assert first[key], key
    found = report(tmp_path / "runs")["calibration"]
    assert [r["place"] for r in found] == ["hooks.Stop[0]", "hooks.Stop[1]"]


def test_recorded_verdicts_get_the_block_rate_corrected_by_a_calibration_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.hooks.test_calibration import record, write_records

    hook = {"type": "prompt", "model": "fake:block:x", "prompt": PROMPT}
    cases = [
        {
            "id": f"r{i}",
            "context": {"final_output": "x"},
            "recorded": {"decision": "block" if i < 30 else "allow"},
        }
        for i in range(100)
    ]
    suite = write_suite(tmp_path / "s", cases, {"hooks": {"Stop": [hook]}})
    measured = record(PROMPT, "fake:block:x")
    measured["confusion"] = {"tp": 40, "fn": 10, "tn": 45, "fp": 5}  # sensitivity 0.8, specificity 0.9
    cal = write_records(tmp_path / "cal.json", measured)
    argv = ["eval", str(suite), "--out", str(tmp_path / "o"), "--recorded", "--calibration", str(cal)]
    assert main(argv) == 0
    found = report(tmp_path / "o")["correctedBlockRate"]
    assert (found["n"], found["blocked"], found["raw"]) == (100, 30, 0.3)
    assert found["corrected"] == pytest.approx((0.3 + 0.9 - 1) / (0.8 + 0.9 - 1))
    assert found["ci95"][0] < found["corrected"] < found["ci95"][1]
    assert (found["sensitivity"], found["specificity"]) == (0.8, 0.9)
    assert "block rate: raw 0.300" in capsys.readouterr().out
    assert "Corrected block rate" in (tmp_path / "o" / "report.html").read_text()
    write_records(cal, record("another prompt", "fake:block:x"))
    assert main(argv) == 2
    assert "no record matches a Stop prompt hook of the suite's configuration" in capsys.readouterr().err
