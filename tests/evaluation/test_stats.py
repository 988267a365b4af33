"""The paired statistics of `judge eval` comparisons, against values worked out by hand."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from judge.evaluation.stats import (
    EXACT_LIMIT,
    cohen_kappa,
    half_tail,
    holm,
    kappa_interval,
    log_tail,
    mcnemar_exact,
    rogan_gladen,
    wilson_interval,
)


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


# ---------------------------------------------------------------------------
# kappa's interval and the Rogan-Gladen correction


def test_the_kappa_interval_is_the_fleiss_cohen_everitt_standard_error_worked_out_by_hand() -> None:
    # tp=35 fp=10 tn=45 fn=10 (n=100): po = 0.8, judge and labels each block 45 %,
    # pe = 0.45² + 0.55² = 0.505, kappa = 0.295 / 0.495.
    kappa = cohen_kappa(35, 10, 45, 10)
    assert kappa == pytest.approx(0.295 / 0.495)
    # Fleiss, Cohen & Everitt (1969): var = (A + B - C) / (n (1 - pe)²) with
    # A = sum p_ii (1 - (p_i. + p_.i)(1 - k))², B = (1 - k)² sum_{i!=j} p_ij (p_.i + p_j.)²,
    # C = (k - pe (1 - k))²; here p_i. = p_.i, so both off-diagonal cells weigh (0.45 + 0.55)² = 1.
    k = 0.295 / 0.495
    a = 0.35 * (1 - 0.9 * (1 - k)) ** 2 + 0.45 * (1 - 1.1 * (1 - k)) ** 2
    b = (1 - k) ** 2 * (0.10 + 0.10)
    c = (k - 0.505 * (1 - k)) ** 2
    half = 1.96 * math.sqrt((a + b - c) / (100 * 0.495**2))
    low, high = kappa_interval(35, 10, 45, 10) or (0.0, 0.0)
    assert (low, high) == (pytest.approx(k - half), pytest.approx(k + half))


def test_the_kappa_interval_is_clipped_and_undefined_without_variance() -> None:
    assert kappa_interval(10, 0, 10, 0) == (pytest.approx(1.0), 1.0)  # perfect: nothing to widen
    low, high = kappa_interval(3, 0, 2, 0) or (0.0, 0.0)
    assert -1.0 <= low <= high <= 1.0
    assert kappa_interval(0, 0, 0, 0) is None
    assert kappa_interval(5, 0, 0, 0) is None  # one class on both sides: pe = 1


def test_rogan_gladen_corrects_the_raw_rate_for_the_judges_error() -> None:
    # true rate 0.2, sensitivity 0.8, specificity 0.9: observed 0.2*0.8 + 0.8*0.1 = 0.24
    rate = rogan_gladen(240, 1000, (80, 100), (90, 100))
    assert rate.raw == pytest.approx(0.24)
    assert rate.corrected == pytest.approx((0.24 + 0.9 - 1) / (0.8 + 0.9 - 1))  # 0.2
    assert rate.interval is not None and rate.interval[0] < 0.2 < rate.interval[1]
    assert rate.raw_interval == wilson_interval(240, 1000)


def test_rogan_gladen_is_clipped_and_refuses_a_judge_no_better_than_chance() -> None:
    assert rogan_gladen(1, 100, (90, 100), (90, 100)).corrected == 0.0  # fewer blocks than false alarms
    assert rogan_gladen(99, 100, (90, 100), (90, 100)).corrected == 1.0
    chance = rogan_gladen(50, 100, (50, 100), (50, 100))
    assert (chance.corrected, chance.interval) == (None, None)
    with pytest.raises(ValueError, match="at least one case"):
        rogan_gladen(1, 10, (0, 0), (5, 5))


def test_the_rogan_gladen_interval_covers_the_true_rate_about_95_percent_of_the_time() -> None:
    rnd = random.Random(7)
    true, se, sp, n, n_se, n_sp = 0.3, 0.8, 0.9, 200, 40, 60
    covered, runs = 0, 2000
    observed = true * se + (1 - true) * (1 - sp)
    for _ in range(runs):
        blocked = sum(rnd.random() < observed for _ in range(n))
        tp = sum(rnd.random() < se for _ in range(n_se))
        tn = sum(rnd.random() < sp for _ in range(n_sp))
        interval = rogan_gladen(blocked, n, (tp, n_se), (tn, n_sp)).interval
        covered += interval is not None and interval[0] <= true <= interval[1]
    assert 0.93 <= covered / runs <= 0.99
