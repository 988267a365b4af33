"""The statistics of evals and tuning, in one place (pure functions, no scipy).

* :func:`wilson_interval` — the 95% Wilson score interval of a proportion;
* :func:`cohen_kappa` — agreement of decisions with labels beyond chance, and
  :func:`kappa_interval` its 95% interval: kappa ± 1.96 standard errors, the standard
  error from the large-sample variance of Fleiss, Cohen & Everitt (1969, "Large sample
  standard errors of kappa and weighted kappa", Psychological Bulletin 72(5)), clipped
  to [-1, 1];
* :func:`rogan_gladen` — a block rate corrected for the judge's measured error (Rogan &
  Gladen 1978): ``(raw + specificity - 1) / (sensitivity + specificity - 1)``, clipped to
  [0, 1]. Its 95% interval is the delta-method interval over all three estimated
  proportions (the raw rate and the judge's sensitivity and specificity, each from its
  own sample), computed on Agresti–Coull-adjusted proportions (z²/2 successes and z²/2
  failures added to each), the adjustment Lang & Reiczigel (2014, "Confidence limits for
  prevalence of disease adjusted for estimated sensitivity and specificity", Preventive
  Veterinary Medicine 113(1)) found to hold the nominal coverage from ~30 cases where
  the plain delta method does not; clipped to [0, 1];
* :func:`balanced_accuracy` — the mean of the per-class recalls;
* :func:`majority_vote`, :func:`flip_counts`, :func:`flip_rate` — repeats of one item:
  their majority, and how often they disagree;
* :func:`mcnemar_exact` — McNemar's exact test on the discordant pairs of two variants:
  among the cases exactly one of them got right (``b`` only the first, ``c`` only the
  second), the number ``min(b, c)`` is Binomial(b + c, 1/2) when both are equally
  accurate. The two-sided p-value is ``min(1, 2 * P(X <= min(b, c)))``; the mid-p
  variant subtracts the probability of the observed value once,
  ``min(1, 2 * P(X <= k) - P(X = k))`` (less conservative, closer to the nominal level).
* :func:`holm` — Holm's step-down adjustment of several p-values (all pairs of several
  variants are tested at once).

Binomial tails are computed exactly with integers up to :data:`EXACT_LIMIT` discordant
pairs and in log space above (relative error around 1e-12).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

#: Up to this many discordant pairs the tail is an exact fraction.
EXACT_LIMIT = 1000


@dataclass(frozen=True)
class McNemar:
    """The exact McNemar test of one pair of variants."""

    b: int  # only the first variant correct
    c: int  # only the second variant correct
    p_value: float  # two-sided exact binomial
    mid_p_value: float  # two-sided mid-p

    @property
    def discordant(self) -> int:
        return self.b + self.c


def half_tail(k: int, n: int) -> tuple[float, float]:
    """(P(X <= k), P(X = k)) for X ~ Binomial(n, 1/2), 0 <= k <= n."""
    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n <= EXACT_LIMIT:
        total = 1 << n
        pmf = math.comb(n, k)
        cdf = sum(math.comb(n, i) for i in range(k + 1))
        return float(Fraction(cdf, total)), float(Fraction(pmf, total))
    return log_tail(k, n)


def _log_pmf(i: int, n: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2.0)


def log_tail(k: int, n: int) -> tuple[float, float]:
    """The same in log space (large n: 2**-n underflows a float)."""
    logs = [_log_pmf(i, n) for i in range(k + 1)]
    top = max(logs)
    cdf = math.exp(top) * math.fsum(math.exp(v - top) for v in logs)
    return min(cdf, 1.0), math.exp(logs[-1])


def mcnemar_exact(b: int, c: int) -> McNemar:
    """The exact two-sided McNemar test for ``b`` and ``c`` discordant pairs.

    With no discordant pairs both p-values are 1.0 (nothing tells the variants apart).
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must not be negative, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return McNemar(b, c, 1.0, 1.0)
    cdf, pmf = half_tail(min(b, c), n)
    return McNemar(b, c, min(1.0, 2.0 * cdf), min(1.0, 2.0 * cdf - pmf))


def holm(p_values: list[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given (each at most 1, never below its raw value)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of ``successes``/``n``; (0, 1) when ``n`` is 0."""
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n ({n}), got {successes}")
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return (max(0.0, center - half), min(1.0, center + half))


def cohen_kappa(tp: int, fp: int, tn: int, fn: int) -> float | None:
    """Cohen's kappa between decisions and labels, block the positive class: (po - pe)/(1 - pe)
    with po the accuracy and pe the chance agreement from the judge's and the labels' block
    rates. When pe = 1 (judge and labels all the same single class) kappa is 1.0 if po = 1,
    else 0.0. None without judgements."""
    n = tp + fp + tn + fn
    if n == 0:
        return None
    po = (tp + tn) / n
    judge_block = (tp + fp) / n
    label_block = (tp + fn) / n
    pe = judge_block * label_block + (1 - judge_block) * (1 - label_block)
    if 1.0 - pe <= 1e-12:
        return 1.0 if po >= 1.0 - 1e-12 else 0.0
    return (po - pe) / (1.0 - pe)


def kappa_interval(tp: int, fp: int, tn: int, fn: int, z: float = 1.96) -> tuple[float, float] | None:
    """The interval of :func:`cohen_kappa` (module docstring); None without judgements or
    when kappa has no variance to speak of (pe = 1: one class only on both sides)."""
    n = tp + fp + tn + fn
    if n == 0:
        return None
    # p[i][j]: judge said i, label says j (0 = block, 1 = allow)
    p = [[tp / n, fp / n], [fn / n, tn / n]]
    rows = [p[0][0] + p[0][1], p[1][0] + p[1][1]]  # the judge's marginals
    cols = [p[0][0] + p[1][0], p[0][1] + p[1][1]]  # the labels' marginals
    po = p[0][0] + p[1][1]
    pe = rows[0] * cols[0] + rows[1] * cols[1]
    if 1.0 - pe <= 1e-12:
        return None
    kappa = (po - pe) / (1.0 - pe)
    diagonal = sum(p[i][i] * (1.0 - (rows[i] + cols[i]) * (1.0 - kappa)) ** 2 for i in (0, 1))
    off = (1.0 - kappa) ** 2 * sum(
        p[i][j] * (cols[i] + rows[j]) ** 2 for i in (0, 1) for j in (0, 1) if i != j
    )
    chance = (kappa - pe * (1.0 - kappa)) ** 2
    variance = max(0.0, (diagonal + off - chance) / (n * (1.0 - pe) ** 2))
    half = z * math.sqrt(variance)
    return (max(-1.0, kappa - half), min(1.0, kappa + half))


@dataclass(frozen=True)
class CorrectedRate:
    """A block rate corrected for the judge's error (:func:`rogan_gladen`)."""

    raw: float
    raw_interval: tuple[float, float]
    #: None when the judge is no better than chance (sensitivity + specificity <= 1)
    corrected: float | None
    interval: tuple[float, float] | None
    sensitivity: float
    specificity: float


def _adjusted(successes: int, n: int, z: float) -> tuple[float, float]:
    """The Agresti–Coull-adjusted proportion and its n: z²/2 successes and failures added."""
    adjusted_n = n + z * z
    return (successes + z * z / 2) / adjusted_n, adjusted_n


def rogan_gladen(
    blocked: int,
    n: int,
    sensitivity: tuple[int, int],
    specificity: tuple[int, int],
    z: float = 1.96,
) -> CorrectedRate:
    """The block rate of ``blocked`` of ``n`` judgements corrected for the judge's error
    (module docstring). ``sensitivity`` is (blocks, labelled-block cases) and
    ``specificity`` (allows, labelled-allow cases) from the judge's calibration."""
    if n <= 0 or sensitivity[1] <= 0 or specificity[1] <= 0:
        raise ValueError("the raw rate, the sensitivity and the specificity each need at least one case")
    raw = blocked / n
    se = sensitivity[0] / sensitivity[1]
    sp = specificity[0] / specificity[1]
    youden = se + sp - 1.0
    raw_interval = wilson_interval(blocked, n, z)
    if youden <= 1e-12:
        return CorrectedRate(raw, raw_interval, None, None, se, sp)
    corrected = min(1.0, max(0.0, (raw + sp - 1.0) / youden))
    p, n_p = _adjusted(blocked, n, z)
    a_se, n_se = _adjusted(*sensitivity, z)
    a_sp, n_sp = _adjusted(*specificity, z)
    adjusted_youden = a_se + a_sp - 1.0
    if adjusted_youden <= 1e-12:
        return CorrectedRate(raw, raw_interval, corrected, (0.0, 1.0), se, sp)
    centre = (p + a_sp - 1.0) / adjusted_youden
    variance = (
        p * (1 - p) / n_p
        + centre**2 * a_se * (1 - a_se) / n_se
        + (1 - centre) ** 2 * a_sp * (1 - a_sp) / n_sp
    ) / adjusted_youden**2
    half = z * math.sqrt(variance)
    interval = (min(1.0, max(0.0, centre - half)), min(1.0, max(0.0, centre + half)))
    return CorrectedRate(raw, raw_interval, corrected, interval, se, sp)


def balanced_accuracy(
    pairs: Sequence[tuple[str | None, str | None]], both_classes: bool = False
) -> float | None:
    """Mean of recall on block and on allow over (decision, label) pairs; a ``None``
    decision is a miss. Uses whichever classes are present; with ``both_classes``, None
    unless both are."""
    recalls = []
    for cls in ("block", "allow"):
        of_cls = [d for d, label in pairs if label == cls]
        if of_cls:
            recalls.append(sum(1 for d in of_cls if d == cls) / len(of_cls))
    if not recalls or (both_classes and len(recalls) < 2):
        return None
    return sum(recalls) / len(recalls)


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


@dataclass(frozen=True)
class FlipCounts:
    """How the repeats of items disagree: ``flipped`` of the ``eligible`` items (at least two
    decided repeats) have repeats that differ; ``disagreeing_pairs`` of the ``pairs`` of
    decided repeats of one item differ."""

    flipped: int
    eligible: int
    disagreeing_pairs: int
    pairs: int


def flip_counts(per_item: Iterable[Sequence[str | None]]) -> FlipCounts:
    """Flip counts over items, each given as its repeats' decisions (``None``: no decision)."""
    flips = eligible = disagreeing = total = 0
    for decisions in per_item:
        counts = Counter(d for d in decisions if d is not None)
        k = sum(counts.values())
        if k < 2:
            continue
        eligible += 1
        flips += len(counts) > 1
        total += k * (k - 1) // 2
        disagreeing += (k * k - sum(c * c for c in counts.values())) // 2
    return FlipCounts(flips, eligible, disagreeing, total)


def flip_rate(per_item: Iterable[Sequence[str | None]]) -> float | None:
    """Share of items (with at least two decided repeats) whose repeats disagree."""
    counts = flip_counts(per_item)
    return counts.flipped / counts.eligible if counts.eligible else None
