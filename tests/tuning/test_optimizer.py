"""The optimizer against an abstract evaluator: it never asks for test, and counts calls."""

from __future__ import annotations

import pytest

from judge.evaluation.stats import balanced_accuracy
from judge.evaluation.suite import Case
from judge.tuning.call_budget import BudgetedLLM, CallBudget
from judge.tuning.optimizer import (
    ItemOutcome,
    Optimizer,
    OptimizerSettings,
    SplitEval,
    parse_proposals,
)

PROMPT = 'Judge it.\n$ARGUMENTS\n{"ok": true} / {"ok": false, "reason": "..."}'


class SpyEvaluator:
    """Items i0..i9 per split; label block for odd i. A prompt mentioning "odd" gets all right."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def cost(self, split: str) -> int:
        return 10

    def describe(self, item_id: str) -> str:
        return f"item {item_id}"

    def case(self, item_id: str) -> Case:
        rationale = "odd items are blocked" if int(item_id[-1]) % 2 else None
        label = "block" if int(item_id[-1]) % 2 else "allow"
        return Case(id=item_id, context={}, label=label, rationale=rationale)

    def cases(self, split: str) -> list[Case]:
        return [self.case(f"{split}{i}") for i in range(10)]

    async def evaluate(self, prompt: str, split: str) -> SplitEval:
        self.asked.append(split)
        items = []
        for i in range(10):
            label = "block" if i % 2 else "allow"
            decision = label if "odd" in prompt or i < 6 else "allow"
            items.append(ItemOutcome(id=f"{split}{i}", label=label, decision=decision, decisions=[decision]))
        score = balanced_accuracy([(x.decision, x.label) for x in items])
        return SplitEval(split=split, items=items, score=score)


class ScriptedLLM:
    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.requests: list[str] = []

    async def propose(self, prompt: str) -> str:
        self.requests.append(prompt)
        return self.answers[min(len(self.requests) - 1, len(self.answers) - 1)]


async def test_optimizer_selects_on_dev_and_never_asks_for_test() -> None:
    better = PROMPT.replace("Judge it.", "Block odd items.")
    llm = ScriptedLLM(["critique", f"<PROMPT>{better}</PROMPT>"])
    evaluator = SpyEvaluator()
    budget = CallBudget(None)
    result = await Optimizer(
        PROMPT, evaluator, BudgetedLLM(llm, budget), budget, OptimizerSettings(rounds=3, beam=1)
    ).run()
    assert "test" not in evaluator.asked and set(evaluator.asked) == {"train", "dev"}
    assert result.winner.prompt.strip() == better
    assert result.stopped.startswith("converged")
    assert budget.used == len(llm.requests) == 2
    # the critique request shows the mistakes with the people's labels, their rationales and
    # the judge's decisions
    assert "People said: block, because: odd items are blocked\nThe judge said: allow" in llm.requests[0]
    assert "item train7" in llm.requests[0]


async def test_optimizer_error_keeps_what_was_found() -> None:
    class Failing:
        async def propose(self, prompt: str) -> str:
            raise RuntimeError("provider down")

    budget = CallBudget(None)
    result = await Optimizer(PROMPT, SpyEvaluator(), Failing(), budget, OptimizerSettings(rounds=2)).run()
    assert result.winner is result.baseline
    assert result.stopped == "optimizer error: provider down"


def test_parse_proposals_handles_fences_and_case() -> None:
    text = "intro\n<PROMPT>\n```\nA $ARGUMENTS\n```\n</PROMPT>\n<prompt>B</prompt>\nno tags here"
    assert parse_proposals(text) == ["A $ARGUMENTS", "B"]
    assert parse_proposals("nothing") == []


def test_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError):
        CallBudget(-1)
