"""The metrics of an eval run, computed from its results alone.

Definitions (``block`` is the positive class; every (case, repeat) is one judgement):

* ``n`` — judgements; ``errors`` — judgements with an error (no decision, or a hook
  reported an error and its failMode decided); ``errorRate`` = errors / n;
  ``abstentions`` — judgements with no decision at all (the case could not be
  evaluated); ``abstentionRate`` = abstentions / n; ``allowRate`` — allow / judgements
  with a decision. ``errorGroups`` — the errors grouped by message, most frequent first:
  ``{"message", "count", "examples": ["<id>#<repeat>", ...]}`` (at most
  :data:`ERROR_EXAMPLES` examples each).
* A Stop forced through by ``maxRejections`` (decision allow, ``forcedStop``) counts as
  **block** in every metric: the judge blocked, and the label is about the answer, not
  about the gate's loop limit (``forcedStops`` counts them; ``judge tune`` scores them
  the same way). So does a Stop the judge found **impossible** without the user (the
  work is not done): ``impossible`` counts them and ``impossibleRate`` = impossible /
  judgements with a decision (with its Wilson interval). ``outcomes`` counts the Stop
  outcomes (``approved``, ``rejected``, ``forced``, ``impossible``, ``deferred``,
  ``failed_open``, ``failed_closed``; present when the results have outcomes).
* Agreement metrics use the *scored* judgements: labelled, with a decision and no error.
  ``tp`` = label block & decision block, ``fp`` = label allow & block, ``tn`` = allow &
  allow, ``fn`` = label block & allow.
  ``precision`` = tp/(tp+fp), ``recall`` = tp/(tp+fn), ``specificity`` = tn/(tn+fp),
  ``f1`` = 2tp/(2tp+fp+fn), ``accuracy`` = (tp+tn)/scored, ``balancedAccuracy`` =
  (recall+specificity)/2, ``falseBlockRate`` = fp/(fp+tn), ``falsePassRate`` = fn/(fn+tp).
  A metric whose denominator is 0 is ``null`` (so is balancedAccuracy when either class
  is missing).
* ``cohenKappa`` = (po - pe)/(1 - pe) with po = accuracy and pe the chance agreement
  from the judge's and the labels' block rates. When pe = 1 (judge and labels all the
  same single class) kappa is defined as 1.0 if po = 1, else 0.0.
* ``ci95`` holds the 95% Wilson score interval of each proportion (allowRate,
  errorRate, precision, recall, specificity, accuracy, falseBlockRate, falsePassRate,
  flipRate); f1, balancedAccuracy and kappa are not proportions and have none.
* ``flipRate`` (when some case has more than one repeat) — among cases with at least two
  decided, error-free repeats, the share whose decisions differ. It depends on the
  number of repeats: the more repeats, the more chances for one to differ (a case that
  blocks with probability p flips with probability 1 - p^k - (1-p)^k over k repeats),
  so compare flip rates only between runs with the same repeats (``flips`` records
  ``repeats`` beside the counts). ``pairFlipRate`` does not depend on it: among the
  pairs of decided, error-free repeats of one case, the share that disagree (an
  estimate of 2p(1-p), whatever k).
* ``samples`` and ``sampleFlipRate`` (prompt hooks with ``samples: k``): how often a
  judgement's samples disagree, per hook (:mod:`judge.evaluation.consistency`).
  ``probes`` and ``probeFlipRate`` (``--probes``): how often a perturbed input flips the
  verdict (:mod:`judge.evaluation.probes`); ``calibration``: each prompt hook's own
  agreement with the labels, as written to ``calibration.json``
  (:mod:`judge.evaluation.calibration`).
* ``latencyMs`` — percentiles of the per-judgement duration, linear interpolation
  between closest ranks. ``tokens`` — summed usage (cached judgements report the usage
  of the original call). ``cachedResults`` — judgements served wholly from the cache.

Everything except ``latencyMs`` and ``cachedResults`` depends only on the decisions, so
a resumed run reports the same as an uninterrupted one (see :func:`stable_view`).
Values are computed exactly (:func:`compute_metrics`, what ``--fail-under`` and
``--fail-over`` compare) and rounded to 6 decimals in ``report.json``
(:func:`compute_report`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from judge.decision import STOP_OUTCOMES
from judge.evaluation.consistency import samples_section, worst_flip_rate
from judge.evaluation.reports.cascade import cascade_section
from judge.evaluation.runner import CaseResult
from judge.evaluation.stats import balanced_accuracy, cohen_kappa, flip_counts, wilson_interval

#: Metrics ``--fail-under`` accepts (higher is better for each).
THRESHOLD_METRICS: tuple[str, ...] = (
    "accuracy",
    "allowRate",
    "balancedAccuracy",
    "cohenKappa",
    "f1",
    "precision",
    "recall",
    "specificity",
)
#: Metrics ``--fail-over`` accepts (lower is better for each; allowRate goes both ways).
UPPER_BOUND_METRICS: tuple[str, ...] = (
    "abstentionRate",
    "allowRate",
    "errorRate",
    "falseBlockRate",
    "falsePassRate",
    "flipRate",
    "impossibleRate",
    "pairFlipRate",
    "probeFlipRate",
    "sampleFlipRate",
)
#: Examples (``id#repeat``) kept per error group.
ERROR_EXAMPLES = 5
#: Decimals of the values in ``report.json``.
DIGITS = 6
#: Report keys that vary between runs of the same judgements.
VOLATILE_KEYS: tuple[str, ...] = ("latencyMs", "cachedResults")


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100), linear interpolation between closest ranks."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _ci(num: int, den: int) -> list[float] | None:
    if not den:
        return None
    lo, hi = wilson_interval(num, den)
    return [lo, hi]


def rounded(value: Any, digits: int = DIGITS) -> Any:
    """``value`` with every float in it rounded (dicts and lists walked)."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v, digits) for v in value]
    return value


def _classification(scored: list[CaseResult]) -> tuple[dict[str, Any], dict[str, list[float] | None]]:
    tp = sum(1 for r in scored if r.label == "block" and r.verdict == "block")
    fp = sum(1 for r in scored if r.label == "allow" and r.verdict == "block")
    tn = sum(1 for r in scored if r.label == "allow" and r.verdict == "allow")
    fn = sum(1 for r in scored if r.label == "block" and r.verdict == "allow")
    n = len(scored)
    recall = _ratio(tp, tp + fn)
    specificity = _ratio(tn, tn + fp)
    balanced = balanced_accuracy([(r.verdict, r.label) for r in scored], both_classes=True)
    out: dict[str, Any] = {
        "scored": n,
        "confusion": {"tp": tp, "fp": fp, "tn": tn, "fn": fn},
        "precision": _ratio(tp, tp + fp),
        "recall": recall,
        "specificity": specificity,
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
        "accuracy": _ratio(tp + tn, n),
        "balancedAccuracy": balanced,
        "cohenKappa": cohen_kappa(tp, fp, tn, fn),
        "falseBlockRate": _ratio(fp, fp + tn),
        "falsePassRate": _ratio(fn, fn + tp),
    }
    ci = {
        "precision": _ci(tp, tp + fp),
        "recall": _ci(tp, tp + fn),
        "specificity": _ci(tn, tn + fp),
        "accuracy": _ci(tp + tn, n),
        "falseBlockRate": _ci(fp, fp + tn),
        "falsePassRate": _ci(fn, fn + tp),
    }
    return out, ci


def _flips(results: list[CaseResult]) -> dict[str, int]:
    """Flip counts per case and per pair of repeats (see the module docstring)."""
    per_case: dict[str, list[str | None]] = defaultdict(list)
    for r in results:
        if r.decision is not None and r.error is None:
            per_case[r.id].append(r.verdict)
    counts = flip_counts(per_case.values())
    return {
        "flipped": counts.flipped,
        "eligible": counts.eligible,
        "disagreeingPairs": counts.disagreeing_pairs,
        "pairs": counts.pairs,
    }


def _basic(results: list[CaseResult]) -> tuple[dict[str, Any], dict[str, list[float] | None]]:
    decided = [r for r in results if r.decision is not None]
    allow = sum(1 for r in decided if r.verdict == "allow")
    errors = sum(1 for r in results if r.error is not None)
    abstentions = len(results) - len(decided)
    out: dict[str, Any] = {
        "n": len(results),
        "allow": allow,
        "block": len(decided) - allow,
        "allowRate": _ratio(allow, len(decided)),
        "errors": errors,
        "errorRate": _ratio(errors, len(results)),
        "abstentions": abstentions,
        "abstentionRate": _ratio(abstentions, len(results)),
    }
    ci = {
        "allowRate": _ci(allow, len(decided)),
        "errorRate": _ci(errors, len(results)),
        "abstentionRate": _ci(abstentions, len(results)),
    }
    return out, ci


def error_groups(results: list[CaseResult]) -> list[dict[str, Any]]:
    """The errors grouped by message, most frequent first (then by message)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for r in results:
        if r.error is not None:
            groups[r.error].append(f"{r.id}#{r.repeat}")
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return [
        {"message": message, "count": len(where), "examples": where[:ERROR_EXAMPLES]}
        for message, where in ordered
    ]


def compute_report(results: list[CaseResult], *, name: str = "", event: str | None = None) -> dict[str, Any]:
    """The ``report.json`` object for ``results`` (see the module docstring for definitions)."""
    report: dict[str, Any] = rounded(compute_metrics(results, name=name, event=event))
    return report


def compute_metrics(results: list[CaseResult], *, name: str = "", event: str | None = None) -> dict[str, Any]:
    """:func:`compute_report` with exact (unrounded) values (``event``: the suite's, which the
    cascade section needs to read each model's verdict as the hook does)."""
    report: dict[str, Any] = {"name": name}
    basic, ci = _basic(results)
    report.update(basic)
    report["errorGroups"] = error_groups(results)
    report["cases"] = len({r.id for r in results})
    report["repeats"] = max((r.repeat for r in results), default=-1) + 1
    report["forcedStops"] = sum(1 for r in results if r.forced_stop)
    _outcomes(results, report, ci)
    labelled = [r for r in results if r.label is not None]
    report["labelled"] = len(labelled)
    if labelled:
        scored = [r for r in labelled if r.decision is not None and r.error is None]
        metrics, metric_ci = _classification(scored)
        report.update(metrics)
        ci.update(metric_ci)
        report["disagreements"] = [
            {"id": r.id, "repeat": r.repeat, "label": r.label, "decision": r.verdict, "reason": r.reason}
            for r in scored
            if r.verdict != r.label
        ]
    if report["repeats"] > 1:
        flips = _flips(results)
        report["flipRate"] = _ratio(flips["flipped"], flips["eligible"])
        report["pairFlipRate"] = _ratio(flips["disagreeingPairs"], flips["pairs"])
        report["flips"] = {**flips, "repeats": report["repeats"]}
        ci["flipRate"] = _ci(flips["flipped"], flips["eligible"])
    report["ci95"] = ci
    durations = [r.duration_ms for r in results]
    report["latencyMs"] = {
        "p50": percentile(durations, 50),
        "p90": percentile(durations, 90),
        "p99": percentile(durations, 99),
        "mean": sum(durations) / len(durations) if durations else None,
        "max": max(durations) if durations else None,
    }
    priced = [r.cost_usd for r in results if r.cost_usd is not None]
    report["costUsd"] = round(sum(priced), 6)
    report["unpricedJudgements"] = sum(1 for r in results if r.cost_usd is None and r.usage.input_tokens)
    report["tokens"] = {
        "inputTokens": sum(r.usage.input_tokens for r in results),
        "outputTokens": sum(r.usage.output_tokens for r in results),
    }
    report["cachedResults"] = sum(1 for r in results if r.cached)
    report["byTag"] = _by_tag(results)
    cascades = cascade_section(results, event)
    if cascades is not None:
        report["cascade"] = cascades
    samples = samples_section(results)
    if samples is not None:
        report["samples"] = samples
        report["sampleFlipRate"] = worst_flip_rate(samples)
    return report


def _outcomes(results: list[CaseResult], report: dict[str, Any], ci: dict[str, list[float] | None]) -> None:
    """``outcomes``, ``impossible`` and ``impossibleRate`` (Stop suites; see the module docstring)."""
    outcomes = [r.outcome for r in results if r.outcome is not None]
    if not outcomes:
        return
    report["outcomes"] = {name: outcomes.count(name) for name in STOP_OUTCOMES if name in outcomes}
    decided = sum(1 for r in results if r.decision is not None)
    impossible = outcomes.count("impossible")
    report["impossible"] = impossible
    report["impossibleRate"] = _ratio(impossible, decided)
    ci["impossibleRate"] = _ci(impossible, decided)


def _by_tag(results: list[CaseResult]) -> dict[str, dict[str, Any]]:
    tags = sorted({t for r in results for t in r.tags})
    out: dict[str, dict[str, Any]] = {}
    for tag in tags:
        subset = [r for r in results if tag in r.tags]
        entry, _ = _basic(subset)
        labelled = [r for r in subset if r.label is not None]
        if labelled:
            scored = [r for r in labelled if r.decision is not None and r.error is None]
            metrics, _ = _classification(scored)
            for key in ("confusion", "accuracy", "precision", "recall", "f1"):
                entry[key] = metrics[key]
        out[tag] = entry
    return out


def stable_view(report: dict[str, Any]) -> dict[str, Any]:
    """The report without the keys that vary between runs of the same judgements."""
    return {k: v for k, v in report.items() if k not in VOLATILE_KEYS}


def metric_value(report: dict[str, Any], metric: str) -> float | None:
    """A threshold metric's value (None when the run cannot define it)."""
    value = report.get(metric)
    return float(value) if isinstance(value, (int, float)) else None


def canonical_metric(name: str, metrics: tuple[str, ...] = THRESHOLD_METRICS) -> str | None:
    """``recall``, ``Recall``, ``balanced_accuracy``, ``cohen-kappa`` ... → the report key
    (None unless it is one of ``metrics``)."""
    key = name.strip().replace("_", "").replace("-", "").lower()
    for metric in metrics:
        if metric.lower() == key:
            return metric
    if key == "kappa" and "cohenKappa" in metrics:
        return "cohenKappa"
    return None
