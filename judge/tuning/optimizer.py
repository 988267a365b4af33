"""A ProTeGi-style prompt optimizer with a dev-selected beam and hard call budgets.

One round, for each prompt in the beam:

1. take the train items it gets wrong (human label, the judge's decision and reason);
2. ask the optimizer LLM for a critique of the prompt on those items (the "gradient");
3. ask it for edited prompts that address the critique;
4. validate each edit (``$ARGUMENTS`` and the answer schema must survive; see
   :mod:`judge.tuning.contract`) and evaluate the valid ones on train and dev.

An edit that scores worse on dev than its parent is rejected (the parent stays); the
beam keeps the best ``beam`` prompts by dev score, parents winning ties. The winner is
the best prompt on dev, so it differs from the baseline only when it is strictly better
there. The optimizer never sees the test split: it only asks for ``train`` and ``dev``.

Every LLM call (each judgement and each optimizer request) is counted by a
:class:`~judge.tuning.call_budget.CallBudget`. Work that cannot fit in what is left is not
started, and the budget refuses any call beyond the limit, so the provider never sees more than ``max_calls``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from judge.tuning.call_budget import BudgetError, BudgetExhausted, CallBudget, OptimizerLLM
from judge.tuning.contract import check_candidate

Status = Literal["baseline", "kept", "dropped", "rejected", "invalid", "unevaluated", "duplicate"]


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
    """A prompt measured on one split. ``complete`` is false when the budget ran out."""

    split: str
    items: list[ItemOutcome]
    score: float | None
    metrics: dict[str, Any] = Field(default_factory=dict)
    complete: bool = True


class Evaluator(Protocol):
    """Measures a prompt on ``train`` or ``dev`` (the optimizer never asks for test)."""

    async def evaluate(self, prompt: str, split: str) -> SplitEval: ...

    def cost(self, split: str) -> int:
        """The fewest LLM calls one evaluation of ``split`` takes."""
        ...

    def describe(self, item_id: str) -> str:
        """A short text of the item for the optimizer (what the judge looked at)."""
        ...


class Candidate(BaseModel):
    """One prompt tried (a line of ``candidates.jsonl``)."""

    id: str
    round: int
    parent: str | None
    prompt: str
    status: Status
    note: str | None = None
    repairs: list[str] = Field(default_factory=list)
    scores: dict[str, float | None] = Field(default_factory=dict)
    metrics: dict[str, dict[str, Any]] = Field(default_factory=dict)
    critique: str | None = None

    def score(self, split: str) -> float:
        value = self.scores.get(split)
        return -1.0 if value is None else value


@dataclass
class OptimizerSettings:
    rounds: int = 3
    beam: int = 3
    edits: int = 3
    examples: int = 6
    seed: int = 0
    #: Calls kept back for the final test evaluation (baseline and winner); a function is
    #: asked again before each step (what a judgement costs is measured as the run goes).
    reserve: int | Callable[[], int] = 0


@dataclass
class OptimizeResult:
    candidates: list[Candidate]
    baseline: Candidate
    winner: Candidate
    stopped: str
    outcomes: dict[str, dict[str, SplitEval]] = field(default_factory=dict)


Log = Callable[[str], None]


# ---------------------------------------------------------------------------
# The optimizer's prompts

CRITIQUE_TEMPLATE = """\
You are improving the prompt of an LLM judge. The judge reads an AI agent's context \
(inserted where the prompt says $ARGUMENTS) and answers {{"ok": true}} to allow or \
{{"ok": false, "reason": "..."}} to block. People labelled each case allow or block.

The current prompt:
<CURRENT_PROMPT>
{prompt}
</CURRENT_PROMPT>

The judge disagreed with the people on these cases:
{examples}

Explain concisely why the prompt leads the judge to these mistakes: what the prompt \
fails to say, says ambiguously, or says wrongly. Do not write a new prompt yet."""

EDIT_TEMPLATE = """\
You are improving the prompt of an LLM judge.

The current prompt:
<CURRENT_PROMPT>
{prompt}
</CURRENT_PROMPT>

The judge disagreed with the people on these cases:
{examples}

A critique of the prompt:
<CRITIQUE>
{critique}
</CRITIQUE>

Write {n} different improved versions of the prompt that fix these problems without \
overfitting to the examples (state general rules, not facts about these cases). Every \
version MUST keep the placeholder $ARGUMENTS exactly once and MUST keep the answer format: \
{{"ok": true}} to allow, {{"ok": false, "reason": "..."}} to block.
Return each version between <PROMPT> and </PROMPT> tags and nothing else."""

_PROMPT_BLOCK = re.compile(r"<PROMPT>\s*\n?(.*?)\n?\s*</PROMPT>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```[a-zA-Z]*\n(.*)\n```$", re.DOTALL)


def parse_proposals(text: str) -> list[str]:
    """The prompts between ``<PROMPT>`` tags (a surrounding code fence is removed)."""
    out = []
    for block in _PROMPT_BLOCK.findall(text):
        body = block.strip()
        fenced = _FENCE.match(body)
        out.append(fenced.group(1) if fenced else body)
    return out


def _examples_text(errors: list[ItemOutcome], evaluator: Evaluator) -> str:
    parts = []
    for n, item in enumerate(errors, 1):
        said = item.decision or "no decision"
        why = f"; its reason: {item.reason}" if item.reason else ""
        if item.error:
            why += f"; error: {item.error}"
        parts.append(
            f"<CASE {n}>\nPeople said: {item.label}. The judge said: {said}{why}.\n"
            f"{evaluator.describe(item.id)}\n</CASE {n}>"
        )
    return "\n".join(parts)


def pick_errors(outcomes: list[ItemOutcome], k: int, rng: random.Random) -> list[ItemOutcome]:
    """Up to ``k`` misclassified items, alternating false blocks and false passes."""
    wrong_block = [o for o in outcomes if o.wrong and o.label == "allow"]
    wrong_allow = [o for o in outcomes if o.wrong and o.label == "block"]
    rng.shuffle(wrong_block)
    rng.shuffle(wrong_allow)
    picked: list[ItemOutcome] = []
    while len(picked) < k and (wrong_block or wrong_allow):
        for pool in (wrong_allow, wrong_block):
            if pool and len(picked) < k:
                picked.append(pool.pop())
    return picked


# ---------------------------------------------------------------------------


class Optimizer:
    """Runs the search; see the module docstring.

    ``llm`` must count its own calls against ``budget``: wrap a plain one in
    :class:`~judge.tuning.call_budget.BudgetedLLM`, or use :class:`judge.tuning.llm.ProviderLLM`
    over a budgeted provider (which counts every request, retries included).
    """

    def __init__(
        self,
        baseline_prompt: str,
        evaluator: Evaluator,
        llm: OptimizerLLM,
        budget: CallBudget,
        settings: OptimizerSettings | None = None,
        log: Log | None = None,
    ) -> None:
        self.original = baseline_prompt
        self.evaluator = evaluator
        self.llm = llm
        self.budget = budget
        self.settings = settings or OptimizerSettings()
        self.log: Log = log or (lambda _msg: None)
        self.candidates: list[Candidate] = []
        self.outcomes: dict[str, dict[str, SplitEval]] = {}
        self._seen: set[str] = set()

    def _eval_cost(self) -> int:
        return self.evaluator.cost("train") + self.evaluator.cost("dev")

    def _reserve(self) -> int:
        reserve = self.settings.reserve
        return reserve() if callable(reserve) else reserve

    def _spendable(self, calls: int) -> bool:
        return self.budget.can_afford(calls + self._reserve())

    def _add(self, candidate: Candidate) -> Candidate:
        self.candidates.append(candidate)
        return candidate

    async def _measure(self, cand: Candidate) -> bool:
        """Evaluate on train then dev; False when the budget cut the evaluation short."""
        self.outcomes[cand.id] = {}
        for split in ("train", "dev"):
            result = await self.evaluator.evaluate(cand.prompt, split)
            if not result.complete:
                cand.status = "unevaluated"
                cand.note = "the call budget ran out during its evaluation"
                return False
            self.outcomes[cand.id][split] = result
            cand.scores[split] = result.score
            cand.metrics[split] = result.metrics
        return True

    async def run(self) -> OptimizeResult:
        s = self.settings
        baseline = self._add(
            Candidate(id="c0", round=0, parent=None, prompt=self.original, status="baseline")
        )
        self._seen.add(self.original.strip())
        if not self._spendable(self._eval_cost()):
            raise BudgetError(
                f"--max-calls {self.budget.limit} is too small: measuring the baseline on train and dev "
                f"takes at least {self._eval_cost()} calls and the final test evaluation "
                f"{self._reserve()} more"
            )
        if not await self._measure(baseline):
            raise BudgetError("the call budget ran out while measuring the baseline")
        if not self._spendable(0):
            self.log(
                f"the baseline's measurement shows what a judgement costs: the test evaluation needs "
                f"{self._reserve()} calls, {self.budget.remaining()} are left"
            )
        self.log(f"baseline: train {_fmt(baseline.scores['train'])}, dev {_fmt(baseline.scores['dev'])}")
        beam = [baseline]
        stopped = "rounds"
        rng = random.Random(s.seed)
        for rnd in range(1, s.rounds + 1):
            children: list[Candidate] = []
            reason = await self._expand(rnd, beam, children, rng)
            beam = self._select(beam, children)
            self.log(
                f"round {rnd}: {len(children)} new prompt(s); beam dev "
                + ", ".join(f"{c.id}={_fmt(c.scores.get('dev'))}" for c in beam)
            )
            if reason is not None:
                stopped = reason
                break
        winner = self._winner()
        return OptimizeResult(
            candidates=self.candidates,
            baseline=baseline,
            winner=winner,
            stopped=stopped,
            outcomes=self.outcomes,
        )

    async def _expand(
        self, rnd: int, beam: list[Candidate], children: list[Candidate], rng: random.Random
    ) -> str | None:
        """Propose and measure children of every beam member; a stop reason or None."""
        s = self.settings
        any_errors = False
        for parent in beam:
            errors = pick_errors(self.outcomes[parent.id]["train"].items, s.examples, rng)
            if not errors:
                continue
            any_errors = True
            if not self._spendable(2 + self._eval_cost()):
                return "budget"
            examples = _examples_text(errors, self.evaluator)
            refused = self.budget.refused
            try:
                critique = await self.llm.propose(
                    CRITIQUE_TEMPLATE.format(prompt=parent.prompt, examples=examples)
                )
                answer = await self.llm.propose(
                    EDIT_TEMPLATE.format(
                        prompt=parent.prompt, examples=examples, critique=critique, n=s.edits
                    )
                )
            except Exception as exc:  # a provider failure ends the search; what we have stands
                if isinstance(exc, BudgetExhausted) or self.budget.refused > refused:
                    return "budget"
                self.log(f"optimizer LLM failed: {exc}")
                return f"optimizer error: {exc}"
            proposals = parse_proposals(answer)
            if not proposals:
                self.log(f"round {rnd}: the optimizer answered no <PROMPT> block for {parent.id}")
            for text in proposals[: s.edits]:
                cand = Candidate(
                    id=f"c{len(self.candidates)}",
                    round=rnd,
                    parent=parent.id,
                    prompt=text,
                    status="invalid",
                    critique=critique,
                )
                checked = check_candidate(text, self.original)
                if checked.prompt is None:
                    cand.note = checked.rejected
                    self._add(cand)
                    continue
                cand.prompt = checked.prompt
                cand.repairs = checked.repairs
                if checked.prompt.strip() in self._seen:
                    cand.status = "duplicate"
                    cand.note = "same text as an earlier prompt"
                    self._add(cand)
                    continue
                self._seen.add(checked.prompt.strip())
                cand.status = "unevaluated"
                self._add(cand)
                if not self._spendable(self._eval_cost()):
                    cand.note = "not evaluated: the call budget is spent"
                    return "budget"
                if not await self._measure(cand):
                    return "budget"
                if cand.score("dev") < parent.score("dev"):
                    cand.status = "rejected"
                    cand.note = (
                        f"dev {_fmt(cand.scores['dev'])} is worse than its parent's "
                        f"{_fmt(parent.scores['dev'])}; the parent is kept"
                    )
                else:
                    cand.status = "dropped"
                children.append(cand)
        if not any_errors:
            return "converged: the beam makes no mistakes on train"
        return None

    def _select(self, beam: list[Candidate], children: list[Candidate]) -> list[Candidate]:
        eligible = beam + [c for c in children if c.status != "rejected"]
        order = {c.id: n for n, c in enumerate(self.candidates)}
        ranked = sorted(eligible, key=lambda c: (-c.score("dev"), order[c.id]))
        kept = ranked[: max(1, self.settings.beam)]
        for c in children:
            if c in kept:
                c.status = "kept"
        return kept

    def _winner(self) -> Candidate:
        measured = [c for c in self.candidates if c.status in ("baseline", "kept", "dropped")]
        order = {c.id: n for n, c in enumerate(self.candidates)}
        return sorted(measured, key=lambda c: (-c.score("dev"), order[c.id]))[0]


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
