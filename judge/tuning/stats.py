"""Paired comparisons for tuning: two prompts (or configs) judged on the same items, and
whether the one is right where the other is wrong more often than chance (the exact
McNemar test of :mod:`judge.evaluation.stats` on the discordant pairs).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from judge.evaluation.stats import mcnemar_exact


class ItemPair(BaseModel):
    """One item judged by A and B (majority decisions)."""

    id: str
    label: str | None
    a: str | None
    b: str | None


class PairedComparison(BaseModel):
    """A against B on the same labelled items.

    ``improved``: items A got wrong and B got right; ``regressed``: the reverse.
    An item without a decision (error or tied repeats) counts as wrong.
    """

    n: int
    accuracy_a: float | None
    accuracy_b: float | None
    both_right: int
    both_wrong: int
    improved: list[ItemPair]
    regressed: list[ItemPair]
    changed: list[ItemPair]
    p_value: float


def _right(decision: str | None, label: str | None) -> bool:
    return decision is not None and decision == label


def compare_paired(items: Sequence[ItemPair]) -> PairedComparison:
    """Paired comparison over labelled items (unlabelled ones are ignored)."""
    labelled = [i for i in items if i.label is not None]
    improved = [i for i in labelled if not _right(i.a, i.label) and _right(i.b, i.label)]
    regressed = [i for i in labelled if _right(i.a, i.label) and not _right(i.b, i.label)]
    both_right = sum(1 for i in labelled if _right(i.a, i.label) and _right(i.b, i.label))
    n = len(labelled)
    return PairedComparison(
        n=n,
        accuracy_a=sum(1 for i in labelled if _right(i.a, i.label)) / n if n else None,
        accuracy_b=sum(1 for i in labelled if _right(i.b, i.label)) / n if n else None,
        both_right=both_right,
        both_wrong=n - both_right - len(improved) - len(regressed),
        improved=improved,
        regressed=regressed,
        changed=[i for i in items if i.a != i.b],
        p_value=mcnemar_exact(len(improved), len(regressed)).p_value,
    )
