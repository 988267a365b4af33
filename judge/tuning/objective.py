"""What ``judge tune`` optimises (``--objective``), its precision floors, and its tie-breakers.

* ``balanced`` — balanced accuracy of the majority decisions (the mean of block recall and
  allow recall; an item without a decision is a miss). The units of the Pareto frontier
  are the items.
* ``pairwise`` — for suites of paired cases (LLMBar: one instruction, a good and a bad
  answer): the share of pairs where the judge allows the good answer AND blocks the bad
  one. A pair is a ``group`` with exactly one labelled ``allow`` and one labelled
  ``block`` case; the units are the pairs, and cases outside pairs do not count.
* ``precision`` — block recall (catch as many bad answers as possible) subject to block
  precision >= the floor (``--min-block-precision``, default 0.8): when the judge
  blocks, it must be right.

The floors ``--min-block-precision`` and ``--min-allow-precision`` apply to any objective:
a prompt below a floor on dev is infeasible and ranks below every feasible one (among the
infeasible, the smaller shortfall ranks first). A class the judge never chose has no
precision and meets its floor.

Ranking (:meth:`Objective.rank`): feasibility, the objective, then the cost per judgement
(USD, or tokens where a model has no price), then its latency (mean of judgements not
served from the cache, in steps of :data:`LATENCY_STEP_MS` so noise cannot decide), then
the earlier candidate.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from judge.errors import JudgeError
from judge.evaluation.stats import balanced_accuracy
from judge.evaluation.suite import Case
from judge.tuning.candidates import ItemOutcome, SplitEval

ObjectiveName = Literal["balanced", "pairwise", "precision"]
OBJECTIVES: tuple[str, ...] = ("balanced", "pairwise", "precision")
DEFAULT_PRECISION_FLOOR = 0.8
LATENCY_STEP_MS = 100.0


class ObjectiveError(JudgeError):
    """The objective cannot be used with this suite or these floors."""


def _precision(items: Sequence[ItemOutcome], cls: str) -> float | None:
    chosen = [i for i in items if i.label is not None and i.decision == cls]
    if not chosen:
        return None
    return sum(1 for i in chosen if i.label == cls) / len(chosen)


def _recall(items: Sequence[ItemOutcome], cls: str) -> float | None:
    of_cls = [i for i in items if i.label == cls]
    if not of_cls:
        return None
    return sum(1 for i in of_cls if i.decision == cls) / len(of_cls)


def find_pairs(cases: Sequence[Case]) -> dict[str, tuple[str, str]]:
    """``group -> (allow id, block id)`` for the groups of exactly one allow and one block case."""
    by_group: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        if case.group is not None and case.label is not None:
            by_group[case.group].append(case)
    pairs = {}
    for group, members in by_group.items():
        labels = sorted(c.label or "" for c in members)
        if labels == ["allow", "block"]:
            good = next(c.id for c in members if c.label == "allow")
            bad = next(c.id for c in members if c.label == "block")
            pairs[group] = (good, bad)
    return pairs


@dataclass(frozen=True)
class Objective:
    """An objective with its floors; ``pairs`` for ``pairwise`` (:func:`find_pairs`)."""

    name: ObjectiveName = "balanced"
    min_block_precision: float | None = None
    min_allow_precision: float | None = None
    pairs: dict[str, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        name: str,
        cases: Sequence[Case],
        min_block_precision: float | None = None,
        min_allow_precision: float | None = None,
    ) -> Objective:
        """The objective for ``cases``; :class:`ObjectiveError` for what cannot work."""
        if name not in OBJECTIVES:
            raise ObjectiveError(f"--objective must be one of {', '.join(OBJECTIVES)}, got {name!r}")
        for flag, value in (
            ("--min-block-precision", min_block_precision),
            ("--min-allow-precision", min_allow_precision),
        ):
            if value is not None and not 0.0 < value <= 1.0:
                raise ObjectiveError(f"{flag} must be above 0 and at most 1, got {value:g}")
        if name == "precision" and min_block_precision is None:
            min_block_precision = DEFAULT_PRECISION_FLOOR
        pairs = find_pairs(cases) if name == "pairwise" else {}
        if name == "pairwise" and not pairs:
            raise ObjectiveError(
                "--objective pairwise needs paired cases: groups with one allow and one block case "
                "(`judge datasets convert llmbar` writes them)"
            )
        return cls(name, min_block_precision, min_allow_precision, pairs)  # type: ignore[arg-type]

    def describe(self) -> str:
        floors = [
            f"block precision >= {v:g}" if n == "block" else f"allow precision >= {v:g}"
            for n, v in (("block", self.min_block_precision), ("allow", self.min_allow_precision))
            if v is not None
        ]
        what = {
            "balanced": "balanced accuracy",
            "pairwise": "pair accuracy (good answer allowed and bad answer blocked)",
            "precision": "block recall",
        }[self.name]
        return what + (f" subject to {' and '.join(floors)}" if floors else "")

    # -- scores ---------------------------------------------------------------

    def units(self, items: Sequence[ItemOutcome]) -> dict[str, bool]:
        """Per unit (item, or pair for ``pairwise``): whether the judge got it right."""
        if self.name != "pairwise":
            return {i.id: not i.wrong for i in items if i.label is not None}
        by_id = {i.id: i for i in items}
        return {
            group: not by_id[good].wrong and not by_id[bad].wrong
            for group, (good, bad) in self.pairs.items()
            if good in by_id and bad in by_id
        }

    def score(self, items: Sequence[ItemOutcome]) -> float | None:
        """The objective's value on ``items`` (None when it is undefined there)."""
        if self.name == "balanced":
            return balanced_accuracy([(i.decision, i.label) for i in items if i.label is not None])
        if self.name == "pairwise":
            units = self.units(items)
            return sum(units.values()) / len(units) if units else None
        return _recall(items, "block")

    def shortfall(self, items: Sequence[ItemOutcome]) -> float:
        """How far the precisions fall below their floors (0.0: every floor holds)."""
        short = 0.0
        for cls, floor in (("block", self.min_block_precision), ("allow", self.min_allow_precision)):
            value = _precision(items, cls)
            if floor is not None and value is not None and value < floor:
                short += floor - value
        return short

    def precisions(self, items: Sequence[ItemOutcome]) -> dict[str, float | None]:
        return {"blockPrecision": _precision(items, "block"), "allowPrecision": _precision(items, "allow")}

    def rank(self, ev: SplitEval, order: int) -> tuple[float, ...]:
        """A sort key, smallest first = best (see the module docstring)."""
        short = self.shortfall(ev.items)
        cost = (ev.usd or 0.0, ev.tokens or 0.0)
        latency = round((ev.latency_ms or 0.0) / LATENCY_STEP_MS)
        value = ev.score if ev.score is not None else -1.0
        return (float(short > 0), short, -value, cost[0], cost[1], float(latency), float(order))
