"""The paired statistics of `judge eval` comparisons, against values worked out by hand."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from judge.evaluation.stats import EXACT_LIMIT, half_tail, holm, log_tail, mcnemar_exact


def exact_two_sided(b: int, c: int) -> tuple[Fraction, Fraction]:
    """The textbook definition, written out independently: (p, mid-p) as fractions."""
    n, k = b + c, min(b, c)
    pmf = [Fraction(math.comb(n, i), 2**n) for i in range(k + 1)]
    p = min(Fraction(1), 2 * sum(pmf))
    return p, min(Fraction(1), 2 * sum(pmf) - pmf[k])


@pytest.mark.parametrize(
    ("b", "c", "p", "mid_p"),
    [
        (0, 5, Fraction(2, 32), Fraction(1, 32)),  # 2 * (1/32); minus P(X=0) = 1/32
        (5, 0, Fraction(2, 32), Fraction(1, 32)),  # two-sided: symmetric in b and c
        (1, 9, Fraction(22, 1024), Fraction(12, 1024)),  # P(X<=1) = 11/1024; P(X=1) = 10/1024
        (2, 5, Fraction(58, 128), Fraction(37, 128)),  # P(X<=2) = 29/128; P(X=2) = 21/128
        (3, 0, Fraction(2, 8), Fraction(1, 8)),
        (3, 3, Fraction(1), Fraction(1)),  # equal discordant counts: nothing to tell apart
        (4, 3, Fraction(1), Fraction(93, 128)),  # 2 * 64/128 capped at 1; 128/128 - 35/128
    ],
)
def test_exact_mcnemar_matches_hand_computed_values(b: int, c: int, p: Fraction, mid_p: Fraction) -> None:
    test = mcnemar_exact(b, c)
    assert (test.b, test.c, test.discordant) == (b, c, b + c)
    assert test.p_value == pytest.approx(float(p), rel=1e-15)
    assert test.mid_p_value == pytest.approx(float(mid_p), rel=1e-15)


def test_no_discordant_pairs_gives_p_one() -> None:
    test = mcnemar_exact(0, 0)
    assert (test.p_value, test.mid_p_value) == (1.0, 1.0)


def test_a_single_discordant_pair_is_never_significant() -> None:
    assert mcnemar_exact(1, 0).p_value == 1.0
    assert mcnemar_exact(0, 1).mid_p_value == 0.5


def test_negative_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        mcnemar_exact(-1, 3)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        half_tail(5, 3)


@pytest.mark.parametrize(("b", "c"), [(30, 70), (480, 520), (EXACT_LIMIT // 2, EXACT_LIMIT // 2 + 40)])
def test_large_counts_agree_with_the_exact_definition(b: int, c: int) -> None:
    p, mid_p = exact_two_sided(b, c)
    test = mcnemar_exact(b, c)
    assert test.p_value == pytest.approx(float(p), rel=1e-9)
    assert test.mid_p_value == pytest.approx(float(mid_p), rel=1e-9)


def test_log_space_tail_agrees_with_the_integer_one_where_both_apply() -> None:
    for k, n in [(0, 10), (3, 20), (450, 1000), (499, 1000), (1000, 1000)]:
        exact_cdf, exact_pmf = half_tail(k, n)
        log_cdf, log_pmf = log_tail(k, n)
        assert log_cdf == pytest.approx(exact_cdf, rel=1e-9)
        assert log_pmf == pytest.approx(exact_pmf, rel=1e-9)


def test_beyond_the_exact_limit_the_tail_is_still_right() -> None:
    b, c = 1450, 1600  # 3050 discordant pairs: 2**-3050 underflows a float
    p, mid_p = exact_two_sided(b, c)
    test = mcnemar_exact(b, c)
    assert 0.0 < test.p_value < 0.01
    assert test.p_value == pytest.approx(float(p), rel=1e-9)
    assert test.mid_p_value == pytest.approx(float(mid_p), rel=1e-9)


def test_holm_adjusts_in_the_given_order_and_stays_monotone() -> None:
    # sorted: 0.01 * 3 = 0.03; 0.03 * 2 = 0.06; 0.04 * 1 = 0.04 -> kept at 0.06 (monotone)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == [1.0, 1.0]  # capped at 1
    assert holm([0.2]) == [0.2]
    assert holm([]) == []


def exact_reference(b: int, c: int) -> float:
    """The two-sided exact McNemar p-value with rational arithmetic."""
    n, k = b + c, min(b, c)
    tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


@pytest.mark.parametrize(("b", "c"), [(600, 600), (500, 700), (512, 512), (0, 1024), (480, 560), (1, 3000)])
def test_mcnemar_with_1024_or_more_discordant_pairs(b: int, c: int) -> None:
    assert mcnemar_exact(b, c).p_value == pytest.approx(exact_reference(b, c), rel=1e-12, abs=1e-300)


def test_mcnemar_with_very_many_pairs_is_quick_and_finite() -> None:
    p = mcnemar_exact(50_000, 50_600).p_value
    assert 0.0 < p < 1.0
