"""Statistics for tuning: majority votes over repeats, flip rate, and paired comparisons.

A paired comparison judges two prompts (or configs) on the same items and asks whether
the one is right where the other is wrong more often than chance: the exact McNemar test,
i.e. a two-sided binomial test with p = 1/2 on the discordant pairs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from pydantic import BaseModel

Verdict = str  # "allow" | "block"


def majority_vote(decisions: Iterable[str | None]) -> str | None:
    """The most frequent decision, ignoring ``None`` (errors). A tie has no majority: ``None``."""
    counts = Counter(d for d in decisions if d is not None)
    if not counts:
        return None
    ranked = counts.most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def flipped(decisions: Sequence[str | None]) -> bool:
    """Whether the repeats of one item disagree (errors ignored; fewer than 2 → no)."""
    seen = {d for d in decisions if d is not None}
    return len(seen) > 1


def flip_rate(per_item: Iterable[Sequence[str | None]]) -> float | None:
    """Share of items (with at least two decided repeats) whose repeats disagree."""
    eligible = [d for d in per_item if sum(1 for x in d if x is not None) >= 2]
    if not eligible:
        return None
    return sum(1 for d in eligible if flipped(d)) / len(eligible)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs.

    ``P = min(1, 2 * P[X <= min(b, c)])`` with ``X ~ Binomial(b + c, 1/2)``; 1.0 when
    there are no discordant pairs.
    """
    if b < 0 or c < 0:
        raise ValueError("discordant counts must be non-negative")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    # Exact integers, divided once: int / int is correctly rounded for any size
    # (float(2**n) overflows from n = 1024 discordant pairs on).
    term, total = 1, 1
    for i in range(k):
        term = term * (n - i) // (i + 1)
        total += term
    return min(1.0, 2.0 * (total / (1 << n)))


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
        p_value=mcnemar_exact(len(improved), len(regressed)),
    )


def balanced_accuracy(pairs: Sequence[tuple[str | None, str | None]]) -> float | None:
    """Mean of recall on block and on allow over (decision, label) pairs; a ``None``
    decision is a miss. Uses whichever classes are present."""
    recalls = []
    for cls in ("block", "allow"):
        of_cls = [d for d, label in pairs if label == cls]
        if of_cls:
            recalls.append(sum(1 for d in of_cls if d == cls) / len(of_cls))
    return sum(recalls) / len(recalls) if recalls else None
