"""What the search of ``judge tune`` works with: items judged under a prompt, a prompt measured
on a split, a candidate prompt (a line of ``candidates.jsonl``), and the evaluator that
measures prompts (train and dev only: the optimizer never asks for test).
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from judge.evaluation.suite import Case

#: ``kept``: measured and on the final Pareto frontier (or in the final beam); ``dropped``:
#: measured and dominated; ``rejected``: worse than its parent on train (not measured on dev).
Status = Literal["baseline", "kept", "dropped", "rejected", "invalid", "unevaluated", "duplicate"]
#: How a candidate was made: the hook's own prompt, an edit the optimizer model wrote,
#: few-shot examples from train added, or two candidates merged.
Kind = Literal["baseline", "edit", "demos", "merge"]


class ItemOutcome(BaseModel):
    """One item under one prompt: its label and the judge's majority decision."""

    id: str
    label: str | None
    decision: str | None
    decisions: list[str | None] = Field(default_factory=list)
    reason: str | None = None
    error: str | None = None

    @property
    def wrong(self) -> bool:
        return self.label is not None and self.decision != self.label


class SplitEval(BaseModel):
    """A prompt measured on one split. ``complete`` is false when the budget ran out.

    ``usd`` and ``tokens`` are per judgement (``usd`` None when a model has no price);
    ``latency_ms`` is the mean of the judgements not served from the cache (None when all
    were) — the tie-breakers after the objective.
    """

    split: str
    items: list[ItemOutcome]
    score: float | None
    metrics: dict[str, Any] = Field(default_factory=dict)
    complete: bool = True
    usd: float | None = None
    tokens: float | None = None
    latency_ms: float | None = None


class Evaluator(Protocol):
    """Measures a prompt on ``train`` or ``dev`` (the optimizer never asks for test)."""

    async def evaluate(self, prompt: str, split: str) -> SplitEval: ...

    def cost(self, split: str) -> int:
        """The fewest LLM calls one evaluation of ``split`` takes."""
        ...

    def describe(self, item_id: str) -> str:
        """A short text of the item for the optimizer (what the judge looked at)."""
        ...

    def case(self, item_id: str) -> Case:
        """The suite case behind an item (its rationale, its group, its text)."""
        ...

    def cases(self, split: str) -> list[Case]:
        """The cases of ``split`` (the optimizer only asks for ``train``)."""
        ...


class Candidate(BaseModel):
    """One prompt tried (a line of ``candidates.jsonl``)."""

    model_config = ConfigDict(populate_by_name=True)

    id: str
    round: int
    parent: str | None
    prompt: str
    status: Status
    kind: Kind = "edit"
    merge_of: list[str] | None = Field(None, alias="mergeOf")
    note: str | None = None
    repairs: list[str] = Field(default_factory=list)
    scores: dict[str, float | None] = Field(default_factory=dict)
    #: Whether the precision floors held on a split (always true without floors).
    feasible: dict[str, bool] = Field(default_factory=dict)
    metrics: dict[str, dict[str, Any]] = Field(default_factory=dict)
    critique: str | None = None
    #: The train items the optimizer was shown (mistakes of the parent, with rationales).
    shown: list[str] = Field(default_factory=list)
    #: The train items given to the judge as few-shot examples (``kind: demos``).
    demos: list[str] = Field(default_factory=list)
    #: On the final Pareto frontier of dev; ``best_on``: the dev units where it is among the best.
    frontier: bool = False
    best_on: list[str] = Field(default_factory=list, alias="bestOn")

    def score(self, split: str) -> float:
        value = self.scores.get(split)
        return -1.0 if value is None else value
