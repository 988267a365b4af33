"""The objectives of judge tune, their floors and tie-breakers."""

from __future__ import annotations

import pytest

from judge.evaluation.suite import Case
from judge.tuning.candidates import ItemOutcome, SplitEval
from judge.tuning.objective import Objective, ObjectiveError, find_pairs


def item(i: str, label: str, decision: str | None) -> ItemOutcome:
    return ItemOutcome(id=i, label=label, decision=decision, decisions=[decision])


def case(i: str, label: str, group: str | None) -> Case:
    return Case(id=i, context={}, label=label, group=group)  # type: ignore[arg-type]


PAIRED = [
    case("p1-good", "allow", "p1"),
    case("p1-bad", "block", "p1"),
    case("p2-good", "allow", "p2"),
    case("p2-bad", "block", "p2"),
    case("lonely", "block", "p3"),
    case("twins-a", "allow", "p4"),
    case("twins-b", "allow", "p4"),
]


def test_pairs_are_groups_of_one_allow_and_one_block_case() -> None:
    assert find_pairs(PAIRED) == {"p1": ("p1-good", "p1-bad"), "p2": ("p2-good", "p2-bad")}


def test_pairwise_counts_a_pair_only_when_both_answers_are_judged_right() -> None:
    objective = Objective.build("pairwise", PAIRED)
    items = [
        item("p1-good", "allow", "allow"),
        item("p1-bad", "block", "block"),
        item("p2-good", "allow", "allow"),
        item("p2-bad", "block", "allow"),  # the bad answer passed: the pair is lost
        item("lonely", "block", "allow"),  # not in a pair: does not count
    ]
    assert objective.units(items) == {"p1": True, "p2": False}
    assert objective.score(items) == 0.5
    balanced = Objective.build("balanced", PAIRED)
    assert balanced.score(items) == pytest.approx((1 / 3 + 1) / 2)
    with pytest.raises(ObjectiveError, match="needs paired cases"):
        Objective.build("pairwise", [case("a", "allow", None), case("b", "block", None)])


def test_precision_maximises_block_recall_above_its_floor() -> None:
    objective = Objective.build("precision", PAIRED)
    assert objective.min_block_precision == 0.8 and "block recall" in objective.describe()
    careful = [item("a", "block", "block"), item("b", "block", "allow"), item("c", "allow", "allow")]
    eager = [item("a", "block", "block"), item("b", "block", "block"), item("c", "allow", "block")]
    assert objective.score(careful) == 0.5 and objective.shortfall(careful) == 0.0
    assert objective.score(eager) == 1.0 and objective.shortfall(eager) == pytest.approx(0.8 - 2 / 3)
    # the infeasible one ranks below, whatever its recall
    ranked = sorted(
        [SplitEval(split="dev", items=eager, score=1.0), SplitEval(split="dev", items=careful, score=0.5)],
        key=lambda ev: objective.rank(ev, 0),
    )
    assert ranked[0].score == 0.5


def test_floors_apply_to_any_objective_and_are_checked() -> None:
    objective = Objective.build("balanced", PAIRED, min_block_precision=0.9, min_allow_precision=0.5)
    items = [item("a", "block", "block"), item("b", "allow", "block"), item("c", "allow", "allow")]
    assert objective.shortfall(items) == pytest.approx(0.9 - 0.5)
    assert objective.precisions(items) == {"blockPrecision": 0.5, "allowPrecision": 1.0}
    # a class the judge never chose has no precision, and meets its floor
    assert objective.shortfall([item("a", "block", "block")]) == 0.0
    for bad in (0.0, 1.5, -1.0):
        with pytest.raises(ObjectiveError, match="--min-block-precision must be above 0"):
            Objective.build("balanced", PAIRED, min_block_precision=bad)
    with pytest.raises(ObjectiveError, match="--objective must be one of"):
        Objective.build("accuracy", PAIRED)


def test_ties_are_broken_by_cost_then_by_latency_in_steps_then_by_age() -> None:
    objective = Objective()
    items = [item("a", "block", "block"), item("b", "allow", "allow")]

    def ev(usd: float | None, tokens: float, latency: float) -> SplitEval:
        return SplitEval(split="dev", items=items, score=1.0, usd=usd, tokens=tokens, latency_ms=latency)

    assert objective.rank(ev(0.001, 900, 900), 5) < objective.rank(ev(0.002, 100, 100), 1)
    assert objective.rank(ev(None, 100, 900), 5) < objective.rank(ev(None, 200, 100), 1)
    assert objective.rank(ev(None, 100, 200), 5) < objective.rank(ev(None, 100, 900), 1)
    # latency within one step of 100 ms is noise: the earlier candidate wins
    assert objective.rank(ev(None, 100, 245), 1) < objective.rank(ev(None, 100, 205), 5)
