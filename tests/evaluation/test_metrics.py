"""Metrics of an eval run against hand-computed values (block is the positive class); a
stop forced by maxRejections scores as a block (in tuning too); flips per case and per pair."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from judge.config import config_from_data
from judge.decision import Usage
from judge.evaluation.metrics import canonical_metric, compute_report, percentile, stable_view
from judge.evaluation.runner import CaseResult, run_cases
from judge.evaluation.stats import cohen_kappa, wilson_interval
from judge.evaluation.suite import Case
from judge.tuning.measure import hook_verdict


def res(
    cid: str,
    label: str | None,
    decision: str | None,
    *,
    repeat: int = 0,
    error: str | None = None,
    ms: float = 10.0,
    tags: list[str] | None = None,
    usage: tuple[int, int] = (0, 0),
    cached: bool = False,
) -> CaseResult:
    return CaseResult(
        id=cid,
        repeat=repeat,
        label=label,  # type: ignore[arg-type]
        decision=decision,  # type: ignore[arg-type]
        error=error,
        durationMs=ms,
        tags=tags or [],
        usage=Usage(inputTokens=usage[0], outputTokens=usage[1]),
        cached=cached,
    )


def crafted() -> list[CaseResult]:
    """tp=3, fp=1, tn=4, fn=2 (+ one errored labelled case, + one unlabelled)."""
    rows = [("b", "block")] * 3 + [("a", "block")] * 1 + [("a", "allow")] * 4 + [("b", "allow")] * 2
    out = []
    for i, (lab, dec) in enumerate(rows):
        label = "block" if lab == "b" else "allow"
        out.append(res(f"c{i}", label, dec, ms=float(10 * (i + 1)), tags=["odd" if i % 2 else "even"]))
    out.append(res("err", "block", "allow", error="agent[0] (prompt): timed out", ms=200.0))
    out.append(res("free", None, "block", ms=5.0, usage=(100, 7)))
    return out


def test_crafted_suite_matches_hand_computed_values() -> None:
    report = compute_report(crafted(), name="crafted")
    assert report["n"] == 12
    assert report["errors"] == 1
    assert report["errorRate"] == pytest.approx(1 / 12, abs=1e-6)
    # decided: 12 (the errored one has a failMode decision): allow = tn 4 + fn 2 + err 1 = 7
    assert report["allowRate"] == pytest.approx(7 / 12, abs=1e-6)
    assert report["labelled"] == 11
    assert report["scored"] == 10  # the errored judgement is left out of agreement metrics
    assert report["confusion"] == {"tp": 3, "fp": 1, "tn": 4, "fn": 2}
    assert report["precision"] == pytest.approx(0.75)
    assert report["recall"] == pytest.approx(0.6)
    assert report["specificity"] == pytest.approx(0.8)
    assert report["f1"] == pytest.approx(2 / 3, abs=1e-6)
    assert report["accuracy"] == pytest.approx(0.7)
    assert report["balancedAccuracy"] == pytest.approx(0.7)
    assert report["falseBlockRate"] == pytest.approx(0.2)
    assert report["falsePassRate"] == pytest.approx(0.4)
    # po = 0.7; judge blocks 4/10, labels block 5/10 -> pe = 0.4*0.5 + 0.6*0.5 = 0.5
    assert report["cohenKappa"] == pytest.approx(0.4)
    assert report["tokens"] == {"inputTokens": 100, "outputTokens": 7}
    assert "flipRate" not in report  # one repeat only
    assert {d["id"] for d in report["disagreements"]} == {"c3", "c8", "c9"}
    assert report["ci95"]["accuracy"] == pytest.approx(list(wilson_interval(7, 10)), abs=1e-6)
    assert report["ci95"]["recall"] == pytest.approx(list(wilson_interval(3, 5)), abs=1e-6)
    assert "f1" not in report["ci95"] and "cohenKappa" not in report["ci95"]
    assert report["byTag"]["even"]["n"] == 5 and report["byTag"]["odd"]["n"] == 5


def test_wilson_interval_reference_values() -> None:
    lo, hi = wilson_interval(5, 10)
    assert (lo, hi) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson_interval(10, 10)
    assert lo == pytest.approx(0.7225, abs=1e-4) and hi == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)
    # The guard's own message: without it math.sqrt would raise a ValueError of its own
    # ("math domain error") for these, or return a meaningless interval.
    for bad in (11, -1):
        with pytest.raises(ValueError, match=r"successes must be between 0 and n \(10\), got"):
            wilson_interval(bad, 10)


def test_no_positive_labels() -> None:
    results = [res("a1", "allow", "block"), *(res(f"a{i}", "allow", "allow") for i in range(2, 5))]
    report = compute_report(results)
    assert report["confusion"] == {"tp": 0, "fp": 1, "tn": 3, "fn": 0}
    assert report["recall"] is None
    assert report["falsePassRate"] is None
    assert report["balancedAccuracy"] is None
    assert report["precision"] == 0.0
    assert report["f1"] == 0.0
    assert report["specificity"] == pytest.approx(0.75)
    assert report["accuracy"] == pytest.approx(0.75)
    # po = .75; judge blocks .25, labels block 0 -> pe = .75 -> kappa 0
    assert report["cohenKappa"] == pytest.approx(0.0)
    assert report["ci95"]["recall"] is None


def test_all_errors() -> None:
    results = [res(f"e{i}", "block", None, error="no decision") for i in range(4)]
    report = compute_report(results)
    assert report["n"] == 4 and report["errors"] == 4 and report["errorRate"] == 1.0
    assert report["allowRate"] is None
    assert report["scored"] == 0
    assert report["confusion"] == {"tp": 0, "fp": 0, "tn": 0, "fn": 0}
    for key in ("precision", "recall", "f1", "accuracy", "balancedAccuracy", "cohenKappa"):
        assert report[key] is None, key


def test_kappa_with_chance_agreement_one() -> None:
    results = [res(f"b{i}", "block", "block") for i in range(3)]
    report = compute_report(results)
    assert report["cohenKappa"] == 1.0
    assert report["accuracy"] == 1.0
    assert report["specificity"] is None and report["balancedAccuracy"] is None
    assert cohen_kappa(0, 0, 5, 0) == 1.0  # all allow, all agree
    assert cohen_kappa(0, 0, 0, 0) is None


def test_kappa_perfect_disagreement() -> None:
    assert cohen_kappa(0, 2, 0, 2) == pytest.approx(-1.0)


def test_flip_rate_across_repeats() -> None:
    results = [
        res("a", "block", "allow", repeat=0),
        res("a", "block", "block", repeat=1),
        res("b", "allow", "allow", repeat=0),
        res("b", "allow", "allow", repeat=1),
        res("c", "allow", "block", repeat=0),
        res("c", "allow", None, repeat=1, error="timeout"),
    ]
    report = compute_report(results)
    assert report["repeats"] == 2
    assert report["flips"] == {  # c has one usable repeat only
        "flipped": 1,
        "eligible": 2,
        "disagreeingPairs": 1,
        "pairs": 2,
        "repeats": 2,
    }
    assert report["pairFlipRate"] == 0.5
    assert report["flipRate"] == pytest.approx(0.5)
    assert report["ci95"]["flipRate"] == pytest.approx(list(wilson_interval(1, 2)), abs=1e-6)


def test_latency_percentiles_and_stable_view() -> None:
    results = [res(f"x{i}", None, "allow", ms=ms) for i, ms in enumerate([40.0, 10.0, 30.0, 20.0])]
    report = compute_report(results)
    assert report["latencyMs"]["p50"] == pytest.approx(25.0)
    assert report["latencyMs"]["p90"] == pytest.approx(37.0)
    assert report["latencyMs"]["p99"] == pytest.approx(39.7)
    assert "confusion" not in report  # no labels, no agreement metrics
    faster = compute_report([r.model_copy(update={"duration_ms": 1.0, "cached": True}) for r in results])
    assert stable_view(faster) == stable_view(report)
    assert faster != report
    assert percentile([], 50) is None


def test_metric_names() -> None:
    assert canonical_metric("recall") == "recall"
    assert canonical_metric("balanced_accuracy") == "balancedAccuracy"
    assert canonical_metric("Cohen-Kappa") == "cohenKappa"
    assert canonical_metric("falseBlockRate") is None  # lower is better: not a --fail-under metric
    assert canonical_metric("nonsense") is None


def test_forced_stops_score_as_block_in_eval_and_in_tuning() -> None:
    forced = CaseResult(id="f", decision="allow", forcedStop=True, label="block", reason="still missing")
    allowed = CaseResult(id="a", decision="allow", label="allow")
    report = compute_report([forced, allowed])
    assert report["confusion"] == {"tp": 1, "fp": 0, "tn": 1, "fn": 0}
    assert (report["allowRate"], report["forcedStops"]) == (0.5, 1)
    assert hook_verdict(forced) == "block" == forced.verdict


def test_impossible_and_stalled_stops_score_as_block_in_eval_and_in_tuning() -> None:
    impossible = CaseResult(
        id="i", decision="allow", outcome="impossible", label="block", reason="needs a key"
    )
    stalled = CaseResult(id="s", decision="allow", outcome="stalled", label="block", reason="same again")
    deferred = CaseResult(id="d", decision="allow", outcome="deferred", label="allow")
    report = compute_report([impossible, stalled, deferred])
    assert report["confusion"] == {"tp": 2, "fp": 0, "tn": 1, "fn": 0}
    assert report["outcomes"] == {"impossible": 1, "stalled": 1, "deferred": 1}
    assert (report["impossible"], report["impossibleRate"]) == (1, round(1 / 3, 6))
    assert hook_verdict(impossible) == "block" == hook_verdict(stalled)
    assert "outcomes" not in compute_report([CaseResult(id="t", decision="allow")])  # a tool-event suite


async def test_forced_stop_end_to_end_counts_as_block(tmp_path: Path) -> None:
    config = {
        "hooks": {
            "Stop": [
                {
                    "type": "prompt",
                    "prompt": "Done? $ARGUMENTS",
                    "model": "fake:block:more",
                    "maxRejections": 1,
                }
            ]
        }
    }
    case = Case.model_validate({"id": "x", "context": {"final_output": "half"}, "label": "block"})
    [result] = await run_cases(config_from_data(config), "Stop", [case], base_dir=tmp_path)
    assert (result.decision, result.forced_stop) == ("allow", True)  # results.jsonl: the gate's decision
    report = compute_report([result])
    assert (report["recall"], report["forcedStops"]) == (1.0, 1)  # metrics: the judge's block


def flip_results(decisions: dict[str, list[str]]) -> list[CaseResult]:
    out: list[Any] = []
    for cid, ds in decisions.items():
        out += [CaseResult(id=cid, repeat=i, decision=d) for i, d in enumerate(ds)]  # type: ignore[arg-type]
    return out


def test_flip_rate_per_case_grows_with_repeats_and_per_pair_is_reported_too() -> None:
    # A judge that blocks about half the time, seen with 2 and with 4 repeats: flipRate
    # (share of cases with any disagreement) doubles; pairFlipRate stays near 2p(1-p).
    two = compute_report(flip_results({"a": ["block", "allow"], "b": ["block", "block"]}))
    four = compute_report(
        flip_results({"a": ["block", "allow", "block", "allow"], "b": ["block", "allow", "block", "allow"]})
    )
    assert (two["flipRate"], four["flipRate"]) == (0.5, 1.0)
    assert two["pairFlipRate"] == 0.5  # 1 of 2 pairs disagree
    assert four["pairFlipRate"] == pytest.approx(8 / 12, abs=1e-6)  # 2x2 of the 6 pairs per case
    assert four["flips"] == {"flipped": 2, "eligible": 2, "disagreeingPairs": 8, "pairs": 12, "repeats": 4}
