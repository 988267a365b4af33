"""``judge tune --compare A B SUITE``: two hook configs judged on the same labelled cases, and
the paired comparison (items each one fixed and broke, the exact McNemar test)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from judge.config import Config
from judge.evaluation.runner import CaseResult, run_cases
from judge.evaluation.suite import Suite
from judge.hooks.judging import PromptJudge
from judge.tuning.candidates import ItemOutcome
from judge.tuning.measure import outcomes, require_a_verdict, summary_metrics
from judge.tuning.plan import TuneError, labelled_cases
from judge.tuning.stats import ItemPair, PairedComparison, compare_paired


@dataclass
class CompareOutcome:
    suite: str
    a: str
    b: str
    n: int
    comparison: PairedComparison
    metrics: dict[str, dict[str, Any]]
    repeats: int


async def compare_configs(
    a: Config,
    b: Config,
    suite: Suite,
    *,
    names: tuple[str, str] = ("A", "B"),
    repeats: int | None = None,
    concurrency: int = 8,
    judge: PromptJudge | None = None,
) -> CompareOutcome:
    """Judge the suite's labelled cases with both configs; the paired comparison."""
    cases = labelled_cases(suite)
    if not cases:
        raise TuneError(f"{suite.path}: no labelled cases to compare on")
    k = repeats or suite.repeats
    labels = {c.id: c.label for c in cases}
    evaluated: list[tuple[list[CaseResult], list[ItemOutcome]]] = []
    for config in (a, b):
        results = await run_cases(
            config,
            suite.event,
            cases,
            base_dir=suite.base_dir,
            repeats=k,
            concurrency=concurrency,
            judge=judge,
        )
        require_a_verdict(results, f"{names[len(evaluated)]} on {suite.path}")
        evaluated.append((results, outcomes(results, labels)))
    (ra, ia), (rb, ib) = evaluated
    by_b = {i.id: i for i in ib}
    pairs = [ItemPair(id=i.id, label=i.label, a=i.decision, b=by_b[i.id].decision) for i in ia]
    return CompareOutcome(
        suite=suite.name,
        a=names[0],
        b=names[1],
        n=len(cases),
        comparison=compare_paired(pairs),
        metrics={names[0]: summary_metrics(ra, ia), names[1]: summary_metrics(rb, ib)},
        repeats=k,
    )
