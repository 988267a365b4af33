"""``--fail-under`` and ``--fail-over``: bounds on an eval run's metrics.

``--fail-under METRIC=VALUE`` fails the run when METRIC is below VALUE (for metrics
where higher is better: accuracy, recall, ...); ``--fail-over METRIC=VALUE`` fails it
when METRIC is above VALUE (rates where lower is better: errorRate, abstentionRate,
falsePassRate, ...). Each flag accepts only the metrics its direction makes sense for,
and says which flag to use otherwise. Values are compared exactly, as computed
(``report.json`` rounds them to 6 decimals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from judge.errors import UsageError
from judge.evaluation.metrics import THRESHOLD_METRICS, UPPER_BOUND_METRICS, canonical_metric, metric_value

Direction = Literal["under", "over"]


@dataclass(frozen=True)
class Bound:
    """One bound: the run fails when ``metric`` is under (or over) ``value``."""

    metric: str
    value: float
    direction: Direction

    @property
    def flag(self) -> str:
        return f"--fail-{self.direction}"


_METRICS: dict[Direction, tuple[str, ...]] = {"under": THRESHOLD_METRICS, "over": UPPER_BOUND_METRICS}


def parse_bounds(specs: list[str], direction: Direction = "under") -> list[Bound]:
    """``["recall=0.8", ...]`` → bounds; UsageError for bad ones."""
    flag = f"--fail-{direction}"
    other: Direction = "over" if direction == "under" else "under"
    bounds = []
    for spec in specs:
        name, sep, raw = spec.partition("=")
        if not sep or not name.strip() or not raw.strip():
            example = "recall=0.8" if direction == "under" else "errorRate=0.05"
            raise UsageError(f"{flag} {spec!r}: expected METRIC=VALUE, e.g. {example}")
        metric = canonical_metric(name, _METRICS[direction])
        if metric is None:
            twin = canonical_metric(name, _METRICS[other])
            if twin is not None:
                better = "lower" if direction == "under" else "higher"
                raise UsageError(
                    f"{flag}: {twin} is better {better}; bound it with --fail-{other} {twin}={raw.strip()}"
                )
            raise UsageError(
                f"{flag}: unknown metric {name.strip()!r}; valid metrics: {', '.join(_METRICS[direction])}"
            )
        try:
            value = float(raw)
        except ValueError:
            raise UsageError(f"{flag} {spec!r}: {raw.strip()!r} is not a number") from None
        if not math.isfinite(value):
            raise UsageError(f"{flag} {spec!r}: the bound must be a finite number")
        bounds.append(Bound(metric, value, direction))
    return bounds


def _undefined(metrics: dict[str, Any], metric: str) -> str:
    """Why ``metric`` has no value in this run."""
    n = int(metrics.get("n") or 0)
    if n == 0:
        return "the run has no judgements"
    if metric in ("flipRate", "pairFlipRate"):
        return "no case has two decided, error-free repeats (run with --repeats 2 or more)"
    if metric == "sampleFlipRate":
        return "no judgement has two samples with a verdict (set samples: 3 on a prompt hook)"
    if metric == "probeFlipRate":
        return "no probe compared a decided judgement (run with --probes)"
    if metric in ("allowRate",):
        return f"no judgement reached a decision (all {n} errored)"
    labelled = int(metrics.get("labelled") or 0)
    if labelled == 0:
        return "the suite has no labelled cases"
    if int(metrics.get("scored") or 0) == 0:
        return f"no labelled case could be scored: all {labelled} labelled judgements errored"
    return "not enough labelled cases (e.g. recall needs labelled block cases, specificity allow cases)"


def check_bounds(metrics: dict[str, Any], bounds: list[Bound]) -> list[str]:
    """One message per violated bound (``metrics``: the unrounded report)."""
    failed = []
    for bound in bounds:
        value = metric_value(metrics, bound.metric)
        if value is None:
            failed.append(
                f"{bound.flag}: {bound.metric} is undefined: {_undefined(metrics, bound.metric)}; "
                f"bound {bound.value:.10g}"
            )
        elif bound.direction == "under" and value < bound.value:
            failed.append(f"{bound.flag}: {bound.metric} {value:.10g} < {bound.value:.10g}")
        elif bound.direction == "over" and value > bound.value:
            failed.append(f"{bound.flag}: {bound.metric} {value:.10g} > {bound.value:.10g}")
    return failed
