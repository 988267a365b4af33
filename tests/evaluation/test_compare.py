"""`judge eval --model A --model B` / `--config C1 --config C2`: variants side by side."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from judge.cli import main
from judge.evaluation.metrics import stable_view
from judge.testing import LLMRequest, LLMServer, Reply, verdict
from tests.evaluation.test_runner import write_suite

REPO = Path(__file__).resolve().parents[2]
LLM_CONFIG: dict[str, Any] = {"hooks": {"Stop": [{"type": "prompt", "prompt": "Is it complete? $ARGUMENTS"}]}}
ANSWER = re.compile(r"answer (\d+) (BAD|done)")
FILES = ("results.jsonl", "report.json", "junit.xml", "report.html", "run.json")


def rows() -> list[dict[str, Any]]:
    """Four good answers (allow), four bad ones (block), one unlabelled bad one."""
    out: list[dict[str, Any]] = []
    for i in range(1, 5):
        out.append({"id": f"ok{i}", "context": {"final_output": f"answer {i} done"}, "label": "allow"})
        out.append({"id": f"bad{i}", "context": {"final_output": f"answer {i} BAD"}, "label": "block"})
    out.append({"id": "free", "context": {"final_output": "answer 9 BAD"}})
    return out


def two_models(request: LLMRequest) -> Reply:
    """model-a blocks every BAD answer and, wrongly, "answer 4 done"; model-b blocks only
    "answer 1 BAD". So on the labelled cases only A is right on bad2-bad4, only B on ok4."""
    found = ANSWER.search(request.text)
    assert found is not None, request.text
    number, kind = int(found.group(1)), found.group(2)
    if request.model == "model-a":
        blocks = kind == "BAD" or number == 4
    else:
        assert request.model == "model-b", request.model
        blocks = kind == "BAD" and number == 1
    return verdict(False, f"{request.model} rejects answer {number}") if blocks else verdict(True)


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_two_openai_models_side_by_side_through_the_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "s", rows(), LLM_CONFIG)
    out = tmp_path / "cmp"
    argv = ["eval", str(suite), "--out", str(out), "--model", "openai:model-a", "--model", "openai:model-b"]
    with LLMServer(handler=two_models) as server:
        for key, value in server.env("openai").items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        assert main([*argv, "--no-cache"]) == 0
        assert sorted(r.model for r in server.requests) == ["model-a"] * 9 + ["model-b"] * 9

        # each variant's normal output, in its own folder
        for slug in ("openai-model-a", "openai-model-b"):
            assert all((out / slug / name).is_file() for name in FILES), slug
        assert not (out / "report.json").exists()
        report_a = load(out / "openai-model-a" / "report.json")
        report_b = load(out / "openai-model-b" / "report.json")
        assert report_a["confusion"] == {"tp": 4, "fp": 1, "tn": 3, "fn": 0}
        assert report_b["confusion"] == {"tp": 1, "fp": 0, "tn": 4, "fn": 3}

        comparison = load(out / "comparison.json")
        assert [v["name"] for v in comparison["variants"]] == ["openai:model-a", "openai:model-b"]
        assert [v["slug"] for v in comparison["variants"]] == ["openai-model-a", "openai-model-b"]
        for row, report in zip(comparison["variants"], (report_a, report_b), strict=True):
            for key in ("accuracy", "cohenKappa", "f1", "precision", "recall", "errorRate"):
                assert row[key] == report[key], key
            assert row["ci95"]["accuracy"] == report["ci95"]["accuracy"]
            assert row["tokens"] == report["tokens"] and row["tokens"]["inputTokens"] > 0
            assert row["latencyMs"]["p95"] >= row["latencyMs"]["p50"] > 0
        assert comparison["variants"][0]["accuracy"] == pytest.approx(7 / 8)
        assert comparison["variants"][1]["accuracy"] == pytest.approx(5 / 8)

        (pair,) = comparison["pairs"]
        test = pair["mcnemar"]
        assert (pair["a"], pair["b"], test["aOnlyCorrect"], test["bOnlyCorrect"]) == (
            "openai:model-a",
            "openai:model-b",
            3,
            1,
        )
        # n = 4 discordant, k = 1: P(X <= 1) = 5/16 -> p = 10/16; mid-p = 10/16 - 4/16
        assert test["pValue"] == 0.625 and test["midPValue"] == 0.375 and test["pValueHolm"] == 0.625
        assert (test["paired"], test["excluded"]) == (8, 0)
        assert pair["decided"] == 9 and pair["agreement"] == pytest.approx(4 / 9, abs=1e-6)
        assert comparison["mcnemarOmitted"] is None

        by_id = {d["id"]: d for d in comparison["disagreements"]}
        assert list(by_id) == ["bad2", "bad3", "ok4", "bad4", "free"]  # suite order
        assert by_id["ok4"]["label"] == "allow" and by_id["free"]["label"] is None
        assert by_id["ok4"]["decisions"] == [
            {"variant": "openai:model-a", "decision": "block", "reason": "model-a rejects answer 4"},
            {"variant": "openai:model-b", "decision": "allow", "reason": None},
        ]
        assert by_id["bad3"]["decisions"][0]["reason"] == "model-a rejects answer 3"

        printed = capsys.readouterr().out
        assert "comparison of 2 variants on t (9 cases, 8 labelled)" in printed
        assert re.search(r"openai:model-a\s+0\.875 \[0\.53, 0\.98\]", printed)
        assert "only A right 3, only B right 1, p = 0.625 (mid-p 0.375, Holm 0.625)" in printed
        assert "5 case(s) decided differently" in printed

        page = (out / "comparison.html").read_text(encoding="utf-8")
        assert 'href="openai-model-a/report.html"' in page and "model-a rejects answer 4" in page
        assert "Cases decided differently (5)" in page and "0.625" in page

        # resume works per variant: two lost lines of model-b are judged again, nothing else
        lines = (out / "openai-model-b" / "results.jsonl").read_text().splitlines(keepends=True)
        (out / "openai-model-b" / "results.jsonl").write_text("".join(lines[:-2]))
        server.reset()
        assert main([*argv, "--no-cache", "--resume", "--quiet"]) == 0
        assert [r.model for r in server.requests] == ["model-b", "model-b"]
        assert stable_view(load(out / "openai-model-b" / "report.json")) == stable_view(report_b)
        resumed = load(out / "comparison.json")
        assert resumed["pairs"] == comparison["pairs"]
        assert resumed["disagreements"] == comparison["disagreements"]

        # the judgement cache works per variant: a second run makes no provider calls
        cache = ["--cache", str(tmp_path / "c.sqlite"), "--quiet"]
        assert main([*argv, *cache]) == 0
        server.reset()
        assert main([*argv, *cache]) == 0
        assert server.requests == []
        assert load(out / "comparison.json")["pairs"] == comparison["pairs"]


def copy_smoke(tmp_path: Path) -> Path:
    suite = tmp_path / "smoke"
    shutil.copytree(REPO / "evals" / "smoke", suite)
    return suite / "suite.yaml"


def test_fake_models_compared_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = copy_smoke(tmp_path)
    out = tmp_path / "out"
    argv = ["eval", str(suite), "--out", str(out), "--model", "fake:heuristic", "--model", "fake:allow"]
    assert main([*argv, "--no-cache"]) == 0
    comparison = load(out / "comparison.json")
    heuristic, allow = comparison["variants"]
    assert heuristic["accuracy"] == 1.0 and allow["accuracy"] == pytest.approx(6 / 9, abs=1e-6)
    test = comparison["pairs"][0]["mcnemar"]
    assert (test["aOnlyCorrect"], test["bOnlyCorrect"], test["pValue"], test["midPValue"]) == (
        3,
        0,
        0.25,
        0.125,
    )
    labelled = [d for d in comparison["disagreements"] if d["label"] is not None]
    assert len(labelled) == 3 and {d["label"] for d in labelled} == {"block"}
    for item in labelled:  # the heuristic blocks what fake:allow lets through
        assert [d["decision"] for d in item["decisions"]] == ["block", "allow"]
        assert item["decisions"][0]["reason"]
    # the same run in 2 worker processes gives the same comparison
    assert main([*argv, "--no-cache", "--workers", "2", "--out", str(tmp_path / "w")]) == 0
    in_workers = load(tmp_path / "w" / "comparison.json")
    assert in_workers["pairs"] == comparison["pairs"]
    assert in_workers["disagreements"] == comparison["disagreements"]


def test_configs_and_models_are_crossed(tmp_path: Path) -> None:
    suite = copy_smoke(tmp_path)
    strict = tmp_path / "strict.yaml"
    text = (suite.parent / "agent.yaml").read_text()
    strict.write_text(text.replace("model: fake:heuristic", "model: fake:block:too strict <b>"))
    out = tmp_path / "out"
    argv = ["eval", str(suite), "--out", str(out), "--no-cache", "--quiet"]
    code = main([*argv, "--config", str(suite.parent / "agent.yaml"), "--config", str(strict)])
    assert code == 0
    comparison = load(out / "comparison.json")
    assert [v["slug"] for v in comparison["variants"]] == ["agent", "strict"]
    assert comparison["variants"][1]["config"] == str(strict)
    assert comparison["variants"][1]["allowRate"] == 0.0
    page = (out / "comparison.html").read_text()
    assert "too strict &lt;b&gt;" in page and "too strict <b>" not in page  # escaped
    out2 = tmp_path / "out2"
    configs = ["--config", str(strict), "--config", str(suite.parent / "agent.yaml")]
    code = main([*argv, "--out", str(out2), *configs, "--model", "fake:allow", "--model", "fake:heuristic"])
    assert code == 0
    variants = load(out2 / "comparison.json")["variants"]
    assert [v["slug"] for v in variants] == [
        "strict--fake-allow",
        "strict--fake-heuristic",
        "agent--fake-allow",
        "agent--fake-heuristic",
    ]
    assert variants[1]["name"] == f"{strict} + fake:heuristic"
    # --model overrides the config's model: the strict config judged by fake:heuristic is the heuristic
    assert variants[1]["accuracy"] == variants[3]["accuracy"] == 1.0
    assert len(load(out2 / "comparison.json")["pairs"]) == 6


def test_one_model_or_one_config_keeps_todays_layout(tmp_path: Path) -> None:
    suite = copy_smoke(tmp_path)
    out = tmp_path / "one"
    assert (
        main(["eval", str(suite), "--out", str(out), "--no-cache", "--quiet", "--model", "fake:allow"]) == 0
    )
    assert all((out / name).is_file() for name in FILES)
    assert not (out / "comparison.json").exists() and not [p for p in out.iterdir() if p.is_dir()]
    assert load(out / "report.json")["allowRate"] == 0.8  # the command hook still blocks two
    strict = tmp_path / "strict.yaml"
    strict.write_text((suite.parent / "agent.yaml").read_text().replace("fake:heuristic", "fake:block"))
    out = tmp_path / "config"
    assert (
        main(["eval", str(suite), "--out", str(out), "--no-cache", "--quiet", "--config", str(strict)]) == 0
    )
    assert load(out / "report.json")["allowRate"] == 0.0 and not (out / "comparison.json").exists()


def test_unlabelled_suite_omits_mcnemar_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unlabelled = [{k: v for k, v in row.items() if k != "label"} for row in rows()]
    suite = write_suite(tmp_path / "s", unlabelled, LLM_CONFIG)
    scripts = {}
    for name, reply in (("a", {"ok": True}), ("b", {"ok": False, "reason": "no"})):
        scripts[name] = tmp_path / f"{name}.json"
        scripts[name].write_text(json.dumps([reply]))
    out = tmp_path / "o"
    argv = ["eval", str(suite), "--out", str(out), "--no-cache"]
    assert main([*argv, "--model", f"fake:{scripts['a']}", "--model", f"fake:{scripts['b']}"]) == 0
    comparison = load(out / "comparison.json")
    assert comparison["labelled"] == 0
    assert comparison["mcnemarOmitted"] == "the suite has no labelled cases"
    assert comparison["pairs"][0]["mcnemar"] is None and comparison["pairs"][0]["agreement"] == 0.0
    assert len(comparison["disagreements"]) == 9
    assert "McNemar tests omitted: the suite has no labelled cases" in capsys.readouterr().out
    assert "McNemar tests omitted: the suite has no labelled cases" in (out / "comparison.html").read_text()


def test_fail_under_applies_to_each_variant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = copy_smoke(tmp_path)
    argv = ["eval", str(suite), "--out", str(tmp_path / "o"), "--no-cache", "--quiet"]
    models = ["--model", "fake:heuristic", "--model", "fake:allow"]
    assert main([*argv, *models, "--fail-under", "accuracy=0.9"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if line.startswith("FAIL")] == [
        "FAIL [fake:allow] --fail-under: accuracy 0.6666666667 < 0.9"
    ]
    assert main([*argv, *models, "--fail-under", "accuracy=0.5", "--fail-over", "errorRate=0"]) == 0
    assert main([*argv, *models, "--fail-under", "bogus=1"]) == 2  # checked before judging
    assert "unknown metric 'bogus'" in capsys.readouterr().err


def test_a_variant_whose_every_judgement_errored_exits_2_with_the_comparison(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = copy_smoke(tmp_path)
    out = tmp_path / "o"
    code = main(
        [
            "eval",
            str(suite),
            "--out",
            str(out),
            "--no-cache",
            "--quiet",
            "--model",
            "fake:heuristic",
            "--model",
            "fake:error",
        ]
    )
    assert code == 2
    assert "every judgement of fake:error errored" in capsys.readouterr().err
    comparison = load(out / "comparison.json")
    assert comparison["variants"][1]["errorRate"] == 1.0
    assert (
        comparison["pairs"][0]["mcnemarOmitted"]
        == "no labelled case was decided by both (errors or split repeats)"
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--model", "fake:allow", "--model", "ReasoningFats"], "unknown tier 'ReasoningFats'"),
        (["--config", "{agent}", "--config", "{agent}"], "given twice"),
        (["--config", "{agent}", "--config", "{missing}"], "file not found"),
        (["--model", "fake:allow", "--model", "fake:block", "--recorded"], "--recorded scores the recorded"),
        ([arg for i in range(17) for arg in ("--model", f"fake:block:{i}")], "at most 16 can be compared"),
    ],
)
def test_bad_variants_exit_2_before_judging(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    suite = copy_smoke(tmp_path)
    values = {"agent": str(suite.parent / "agent.yaml"), "missing": str(tmp_path / "nope.yaml")}
    argv = ["eval", str(suite), "--out", str(tmp_path / "o"), "--no-cache", "--quiet"]
    argv += [flag.format(**values) for flag in flags]
    try:
        code = main(argv)
    except SystemExit as exited:  # argparse's own usage errors
        code = int(exited.code or 0)
    assert code == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.rglob("results.jsonl"))  # nothing was judged


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_ctrl_c_stops_the_comparison_and_resume_finishes_it(tmp_path: Path, hook_writable: Path) -> None:
    """A real Ctrl-C in the second variant: exit 2, no comparison; --resume judges only what is missing."""
    ready, go_on = hook_writable / "ready", hook_writable / "go-on"
    os.mkfifo(ready)
    os.chmod(ready, 0o666)
    fast = {"hooks": {"Stop": [{"type": "command", "command": "cat > /dev/null"}]}}
    slow_hook = (
        f'input=$(cat); case "$input" in *slow*) [ -e {go_on} ] || {{ echo go > {ready}; sleep 30; }};; esac'
    )
    slow = {"hooks": {"Stop": [{"type": "command", "command": slow_hook, "timeout": 60}]}}
    (tmp_path / "fast.json").write_text(json.dumps(fast))
    (tmp_path / "slow.json").write_text(json.dumps(slow))
    cases = [
        {"id": f"c{i}", "context": {"final_output": o}, "label": "allow"} for i, o in enumerate(["a", "slow"])
    ]
    suite = write_suite(tmp_path / "s", cases)
    out = tmp_path / "out"
    argv = [
        sys.executable,
        "-m",
        "judge",
        "eval",
        str(suite),
        "--out",
        str(out),
        "--no-cache",
        "--quiet",
        "--concurrency",
        "1",
        "--config",
        str(tmp_path / "fast.json"),
        "--config",
        str(tmp_path / "slow.json"),
    ]
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        assert ready.read_text() == "go\n"  # the second variant is judging the slow case
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 2, err
    assert "Traceback" not in err, err
    assert "interrupted: 1 of 2 results are kept" in err
    assert "the comparison stopped at variant" in err and "1 of 2 variant(s) are complete" in err
    assert not (out / "comparison.json").exists() and (out / "fast" / "report.json").is_file()
    go_on.write_text("")
    resumed = subprocess.run([*argv, "--resume"], capture_output=True, text=True, env=env, timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    assert load(out / "fast" / "run.json")["judgements"] == 0  # nothing judged again
    assert load(out / "slow" / "run.json")["judgements"] == 1
    assert [v["n"] for v in load(out / "comparison.json")["variants"]] == [2, 2]
