"""``comparison.json``: several variants of one suite side by side (pure: results in, dict out).

* ``variants`` — one row per variant: its headline metrics (from the same definitions
  as ``report.json``, :mod:`judge.evaluation.metrics`) with 95% Wilson intervals, latency
  p50/p95, tokens and cost.
* ``pairs`` — every pair of variants: how often they decide a case the same way, and
  McNemar's exact test (:mod:`judge.evaluation.stats`) on the labelled cases
  both decided: ``aOnlyCorrect`` / ``bOnlyCorrect`` are the discordant counts,
  ``pValue`` the two-sided exact binomial p-value, ``midPValue`` its mid-p version,
  ``pValueHolm`` the exact p-value adjusted for testing all pairs (Holm).
* ``disagreements`` — the cases the variants decide differently, with each variant's
  decision and reason and the label.

Each case counts once per variant: its **case decision** is the majority of its
decided, error-free repeats (with one repeat, simply the decision; ``split`` on a tie,
``error`` when no repeat was decided without an error). McNemar's test needs
independent pairs, so the repeats of a case are not counted as separate pairs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from judge.evaluation.metrics import percentile
from judge.evaluation.runner import CaseResult
from judge.evaluation.stats import holm, mcnemar_exact
from judge.evaluation.suite import Case
from judge.evaluation.variants import Variant

TEST_NAME = "McNemar, exact two-sided binomial on the discordant pairs (mid-p also given)"
#: Headline metrics copied from each variant's report (with their ci95 when they have one).
ROW_METRICS = ("accuracy", "cohenKappa", "f1", "precision", "recall", "errorRate", "allowRate")


@dataclass(frozen=True)
class CaseDecision:
    """What one variant decided for one case (see the module docstring)."""

    decision: str  # allow, block, split or error
    reason: str | None


def case_decisions(results: list[CaseResult]) -> dict[str, CaseDecision]:
    """Each case's decision for one variant, by case id."""
    by_case: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        by_case[r.id].append(r)
    out: dict[str, CaseDecision] = {}
    for case_id, rows in by_case.items():
        scored = [r for r in rows if r.decision is not None and r.error is None]
        if not scored:
            first = rows[0]
            out[case_id] = CaseDecision("error", first.error or "no decision was reached")
            continue
        blocks = sum(1 for r in scored if r.verdict == "block")
        if 2 * blocks == len(scored):
            out[case_id] = CaseDecision("split", f"{blocks} of {len(scored)} repeats blocked")
            continue
        decision = "block" if 2 * blocks > len(scored) else "allow"
        reason = next(r.reason for r in scored if r.verdict == decision)
        out[case_id] = CaseDecision(decision, reason)
    return out


def variant_row(variant: Variant, metrics: dict[str, Any], results: list[CaseResult]) -> dict[str, Any]:
    """The comparison table's row for one variant (``metrics``: its exact report)."""
    durations = [r.duration_ms for r in results]
    ci = metrics.get("ci95", {})
    return {
        "name": variant.name,
        "slug": variant.slug,
        "model": variant.model,
        "config": variant.config,
        "n": metrics["n"],
        "errors": metrics["errors"],
        "scored": metrics.get("scored", 0),
        **{key: metrics.get(key) for key in ROW_METRICS},
        "ci95": {key: ci.get(key) for key in ROW_METRICS if key in ci},
        "latencyMs": {"p50": percentile(durations, 50), "p95": percentile(durations, 95)},
        "tokens": metrics["tokens"],
        "costUsd": metrics["costUsd"],
        "unpricedJudgements": metrics["unpricedJudgements"],
        "cachedResults": metrics["cachedResults"],
    }


def _pair(
    a: Variant, b: Variant, da: dict[str, CaseDecision], db: dict[str, CaseDecision], cases: list[Case]
) -> dict[str, Any]:
    decided = [c for c in cases if _decided(da, c.id) and _decided(db, c.id)]
    same = sum(1 for c in decided if da[c.id].decision == db[c.id].decision)
    pair: dict[str, Any] = {
        "a": a.name,
        "b": b.name,
        "decided": len(decided),
        "agreed": same,
        "agreement": same / len(decided) if decided else None,
        "mcnemar": None,
        "mcnemarOmitted": None,
    }
    labelled = [c for c in cases if c.label is not None]
    decided_ids = {c.id for c in decided}
    paired = [c for c in labelled if c.id in decided_ids]
    if not labelled:
        pair["mcnemarOmitted"] = "the suite has no labelled cases"
        return pair
    if not paired:
        pair["mcnemarOmitted"] = "no labelled case was decided by both (errors or split repeats)"
        return pair
    a_right = [da[c.id].decision == c.label for c in paired]
    b_right = [db[c.id].decision == c.label for c in paired]
    only_a = sum(1 for x, y in zip(a_right, b_right, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a_right, b_right, strict=True) if y and not x)
    test = mcnemar_exact(only_a, only_b)
    pair["mcnemar"] = {
        "paired": len(paired),
        "excluded": len(labelled) - len(paired),
        "aAccuracy": sum(a_right) / len(paired),
        "bAccuracy": sum(b_right) / len(paired),
        "aOnlyCorrect": only_a,
        "bOnlyCorrect": only_b,
        "pValue": test.p_value,
        "midPValue": test.mid_p_value,
    }
    return pair


def _decided(decisions: dict[str, CaseDecision], case_id: str) -> bool:
    found = decisions.get(case_id)
    return found is not None and found.decision in ("allow", "block")


def disagreements(
    variants: list[Variant], decisions: list[dict[str, CaseDecision]], cases: list[Case]
) -> list[dict[str, Any]]:
    """The cases whose case decisions are not all the same, in suite order."""
    out = []
    missing = CaseDecision("error", "no result")
    for case in cases:
        row = [d.get(case.id, missing) for d in decisions]
        if len({d.decision for d in row}) > 1:
            out.append(
                {
                    "id": case.id,
                    "label": case.label,
                    "decisions": [
                        {"variant": v.name, "decision": d.decision, "reason": d.reason}
                        for v, d in zip(variants, row, strict=True)
                    ],
                }
            )
    return out


def build_comparison(
    name: str,
    cases: list[Case],
    repeats: int,
    variants: list[Variant],
    metrics: list[dict[str, Any]],
    results: list[list[CaseResult]],
) -> dict[str, Any]:
    """The ``comparison.json`` object (exact values; round them to write)."""
    decisions = [case_decisions(r) for r in results]
    pairs = [
        _pair(variants[i], variants[j], decisions[i], decisions[j], cases)
        for i, j in combinations(range(len(variants)), 2)
    ]
    tested = [p for p in pairs if p["mcnemar"] is not None]
    for pair, adjusted in zip(tested, holm([p["mcnemar"]["pValue"] for p in tested]), strict=True):
        pair["mcnemar"]["pValueHolm"] = adjusted
    labelled = sum(1 for c in cases if c.label is not None)
    return {
        "name": name,
        "cases": len(cases),
        "repeats": repeats,
        "labelled": labelled,
        "test": TEST_NAME,
        "mcnemarOmitted": None if labelled else "the suite has no labelled cases",
        "variants": [variant_row(v, m, r) for v, m, r in zip(variants, metrics, results, strict=True)],
        "pairs": pairs,
        "disagreements": disagreements(variants, decisions, cases),
    }
