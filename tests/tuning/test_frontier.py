"""The per-item Pareto frontier, parent sampling and the merge step."""

from __future__ import annotations

import random

from judge.tuning.candidates import Candidate
from judge.tuning.frontier import pareto_frontier, plan_merge, sample_parents, three_way_merge


def cand(cid: str, parent: str | None = "c0", merge_of: list[str] | None = None) -> Candidate:
    return Candidate(id=cid, round=1, parent=parent, prompt=cid, status="dropped", mergeOf=merge_of)


def rank_by(order: list[str]):  # best first
    return lambda c: (float(order.index(c.id)),)


def test_the_frontier_keeps_every_prompt_that_is_best_somewhere_and_drops_covered_ones() -> None:
    cands = [cand("c0", None), cand("c1"), cand("c2"), cand("c3")]
    units = {
        "c0": {"a": True, "b": False, "c": False, "d": False},
        "c1": {"a": True, "b": True, "c": False, "d": False},  # covers c0
        "c2": {"a": False, "b": False, "c": True, "d": True},  # alone on d
        "c3": {"a": True, "b": False, "c": True, "d": False},  # covered by c1 + c2 together
    }
    frontier = pareto_frontier(cands, units, rank_by(["c1", "c2", "c3", "c0"]))
    assert frontier == {"c1": ["a", "b"], "c2": ["c", "d"]}
    # whatever the ranking, c2 is alone on d and c3 adds nothing c1 and c2 do not
    assert set(pareto_frontier(cands, units, rank_by(["c3", "c2", "c1", "c0"]))) == {"c1", "c2"}
    # a better-ranked candidate survives a tie of coverage
    same = {"c0": {"a": True}, "c1": {"a": True}}
    assert list(pareto_frontier(cands[:2], same, rank_by(["c0", "c1"]))) == ["c0"]
    assert pareto_frontier(cands[:1], {"c0": {"a": False}}, rank_by(["c0"])) == {}


def test_parents_are_drawn_by_weight_without_repeats_and_deterministically() -> None:
    frontier = {"c1": ["a", "b", "c", "d"], "c2": ["e"], "c3": []}
    first = sample_parents(frontier, 2, random.Random(7))
    assert sorted(first) == ["c1", "c2"] and first == sample_parents(frontier, 2, random.Random(7))
    assert sample_parents(frontier, 5, random.Random(1)).count("c1") == 1
    draws = [sample_parents(frontier, 1, random.Random(seed))[0] for seed in range(200)]
    assert draws.count("c1") > 3 * draws.count("c2")


def test_the_merge_pairs_complementary_members_with_a_common_ancestor() -> None:
    by_id = {c.id: c for c in (cand("c0", None), cand("c1"), cand("c2"), cand("c3", "c1"))}
    units = {
        "c1": {"a": True, "b": False},
        "c2": {"a": False, "b": True},
        "c3": {"a": True, "b": True},
    }
    plan = plan_merge({"c1": ["a"], "c2": ["b"]}, units, by_id, set())
    assert plan is not None and (plan.a.id, plan.b.id, plan.ancestor.id) == ("c1", "c2", "c0")
    assert plan_merge({"c1": ["a"], "c2": ["b"]}, units, by_id, {frozenset(("c1", "c2"))}) is None
    # an ancestor and its descendant are never merged; nor two that add nothing to each other
    assert plan_merge({"c1": ["a"], "c3": ["a", "b"]}, units, by_id, set()) is None
    assert plan_merge({"c2": ["b"], "c3": ["a", "b"]}, units, by_id, set()) is None


def test_three_way_merge_applies_both_edits_or_declines() -> None:
    base = "intro\n$ARGUMENTS\nformat\n"
    a = "intro\nrule A\n$ARGUMENTS\nformat\n"
    b = "intro\n$ARGUMENTS\nformat\nrule B\n"
    assert three_way_merge(base, a, b) == "intro\nrule A\n$ARGUMENTS\nformat\nrule B\n"
    # both added at the same place: both kept, A's first; the same change once
    a2, b2 = base + "rule A\n", base + "rule B\n"
    assert three_way_merge(base, a2, b2) == base + "rule A\nrule B\n"
    assert three_way_merge(base, a2, a2) == a2
    # both rewrote the same line: no mechanical merge
    assert three_way_merge(base, "INTRO A\n$ARGUMENTS\nformat\n", "INTRO B\n$ARGUMENTS\nformat\n") is None
