"""Majority vote, flip rate, exact McNemar and flipped items."""

from __future__ import annotations

import math

import pytest

from judge.evaluation.stats import balanced_accuracy, flip_rate, majority_vote, mcnemar_exact
from judge.tuning.stats import ItemPair, compare_paired


def test_mcnemar_matches_the_binomial_tail() -> None:
    assert mcnemar_exact(0, 0).p_value == 1.0
    assert mcnemar_exact(0, 5).p_value == pytest.approx(2 / 32)
    assert mcnemar_exact(9, 1).p_value == pytest.approx(2 * 11 / 1024)
    assert mcnemar_exact(3, 3).p_value == 1.0
    # symmetric in b and c
    assert mcnemar_exact(2, 12).p_value == mcnemar_exact(12, 2).p_value
    n, k = 30, 8
    expected = 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    assert mcnemar_exact(k, n - k).p_value == pytest.approx(expected)


def test_mcnemar_refuses_negative_counts() -> None:
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_majority_vote_ignores_errors_and_has_no_winner_on_ties() -> None:
    assert majority_vote(["block", "allow", "block"]) == "block"
    assert majority_vote(["allow", None, None]) == "allow"
    assert majority_vote(["allow", "block"]) is None
    assert majority_vote([None, None]) is None
    assert majority_vote([]) is None


def test_flip_rate_counts_items_with_disagreeing_repeats() -> None:
    per_item: list[list[str | None]] = [
        ["allow", "allow"],
        ["allow", "block"],
        ["block", None],
        ["block", "block", "allow"],
    ]
    # the third has only one decided repeat and is not eligible
    assert flip_rate(per_item) == pytest.approx(2 / 3)
    assert flip_rate([["allow"], [None, "block"]]) is None


def test_paired_comparison_lists_flips_in_both_directions() -> None:
    items = [
        ItemPair(id="a", label="block", a="allow", b="block"),  # fixed
        ItemPair(id="b", label="allow", a="allow", b="block"),  # broken
        ItemPair(id="c", label="block", a="block", b="block"),  # both right
        ItemPair(id="d", label="allow", a="block", b="block"),  # both wrong
        ItemPair(id="e", label="block", a=None, b="block"),  # no decision counts as wrong: fixed
        ItemPair(id="f", label=None, a="allow", b="block"),  # unlabelled: ignored in the test
    ]
    c = compare_paired(items)
    assert [i.id for i in c.improved] == ["a", "e"]
    assert [i.id for i in c.regressed] == ["b"]
    assert (c.n, c.both_right, c.both_wrong) == (5, 1, 1)
    assert c.accuracy_a == pytest.approx(2 / 5) and c.accuracy_b == pytest.approx(3 / 5)
    assert c.p_value == pytest.approx(mcnemar_exact(2, 1).p_value)
    assert {i.id for i in c.changed} == {"a", "b", "e", "f"}


def test_balanced_accuracy_averages_class_recalls() -> None:
    pairs = [("block", "block"), ("allow", "block"), ("allow", "allow"), (None, "allow")]
    assert balanced_accuracy(pairs) == pytest.approx((0.5 + 0.5) / 2)
    assert balanced_accuracy([("block", "block")]) == 1.0
    assert balanced_accuracy([]) is None
