"""Paired statistics for comparing eval variants (pure functions, no scipy).

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
