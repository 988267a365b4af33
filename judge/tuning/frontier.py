"""The per-item Pareto frontier of ``judge tune`` (GEPA-style) and its merge step.

A prompt that is best on average can still be worse than a sibling on some items: keeping
only a best-average beam throws away what the sibling learned. The frontier keeps every
measured prompt that is among the best on at least one dev *unit* (an item; a pair for
``--objective pairwise``) not better covered by the others:

1. for each dev unit, its front: the candidates that get it right (a unit no candidate
   gets right has none);
2. from the worst-ranked candidate up, a candidate is dropped when every front it is on
   holds another remaining candidate (what it does, others do too).

Parents for the next round are drawn from the frontier with weights = the number of units
each is best on (seeded, without replacement). The merge step takes the two frontier
members whose right units differ most and that share an ancestor, and combines their
edits: a line-based three-way merge against the nearest common ancestor when their
changes do not overlap (:func:`three_way_merge`), else the optimizer model is asked.
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from judge.tuning.candidates import Candidate

Units = Mapping[str, Mapping[str, bool]]


def pareto_frontier(
    candidates: Sequence[Candidate], units: Units, rank: Callable[[Candidate], tuple[float, ...]]
) -> dict[str, list[str]]:
    """``id -> the dev units it is best on`` for the candidates on the frontier (module doc)."""
    ids = [c.id for c in candidates]
    fronts: dict[str, set[str]] = {}
    for cid in ids:
        for unit, right in units[cid].items():
            if right:
                fronts.setdefault(unit, set()).add(cid)
    remaining = {cid for cid in ids if any(cid in f for f in fronts.values())}
    for cand in sorted(candidates, key=rank, reverse=True):  # the worst first
        mine = [f for f in fronts.values() if cand.id in f]
        if cand.id in remaining and all(len(f & remaining) > 1 for f in mine):
            remaining.discard(cand.id)
    return {cid: sorted(u for u, f in fronts.items() if cid in f) for cid in ids if cid in remaining}


def sample_parents(frontier: Mapping[str, list[str]], k: int, rng: random.Random) -> list[str]:
    """Up to ``k`` distinct frontier members, drawn with weights = units best on."""
    pool = {cid: len(units) for cid, units in frontier.items() if units}
    picked: list[str] = []
    while pool and len(picked) < k:
        ids = list(pool)
        choice = rng.choices(ids, weights=[pool[i] for i in ids])[0]
        picked.append(choice)
        del pool[choice]
    return picked


def _parents(cand: Candidate) -> list[str]:
    return list(cand.merge_of) if cand.merge_of else ([cand.parent] if cand.parent else [])


def ancestors(cid: str, by_id: Mapping[str, Candidate]) -> list[str]:
    """``cid`` and its ancestors, nearest first (breadth first)."""
    order, seen, queue = [], {cid}, [cid]
    while queue:
        current = queue.pop(0)
        order.append(current)
        for parent in _parents(by_id[current]):
            if parent not in seen:
                seen.add(parent)
                queue.append(parent)
    return order


@dataclass(frozen=True)
class MergePlan:
    a: Candidate
    b: Candidate
    ancestor: Candidate


def plan_merge(
    frontier: Mapping[str, list[str]],
    units: Units,
    by_id: Mapping[str, Candidate],
    tried: set[frozenset[str]],
) -> MergePlan | None:
    """The frontier pair to merge next (module docstring), or None."""
    ids = [cid for cid in by_id if cid in frontier]
    best: tuple[int, MergePlan] | None = None
    for n, a in enumerate(ids):
        for b in ids[n + 1 :]:
            line_a, line_b = ancestors(a, by_id), ancestors(b, by_id)
            if frozenset((a, b)) in tried or a in line_b or b in line_a:
                continue
            common = next((x for x in line_a if x in line_b), None)
            right_a = {u for u, ok in units[a].items() if ok}
            right_b = {u for u, ok in units[b].items() if ok}
            if common is None or not right_a - right_b or not right_b - right_a:
                continue
            gain = len(right_a ^ right_b)
            if best is None or gain > best[0]:
                best = (gain, MergePlan(by_id[a], by_id[b], by_id[common]))
    return None if best is None else best[1]


def _lines(text: str) -> list[str]:
    return (text if text.endswith("\n") else text + "\n").splitlines(keepends=True)


def _hunks(base: list[str], other: list[str], side: int) -> list[tuple[int, int, int, int, tuple[str, ...]]]:
    matcher = difflib.SequenceMatcher(a=base, b=other, autojunk=False)
    return [
        (i1, 0 if i1 == i2 else 1, side, i2, tuple(other[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def three_way_merge(base: str, a: str, b: str) -> str | None:
    """``a`` and ``b``'s changes to ``base`` applied together, or None when they overlap.
    Insertions at the same place are both kept (``a``'s first); an identical change once."""
    base_lines = _lines(base)
    hunks = sorted(_hunks(base_lines, _lines(a), 0) + _hunks(base_lines, _lines(b), 1))
    merged: list[str] = []
    pos = 0
    last: tuple[int, int, tuple[str, ...]] | None = None
    for i1, _, _, i2, lines in hunks:
        if last == (i1, i2, lines):
            continue  # both made the same change
        if i1 < pos:
            return None
        merged += base_lines[pos:i1] + list(lines)
        pos, last = i2, (i1, i2, lines)
    return "".join(merged + base_lines[pos:])
