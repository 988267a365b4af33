"""The search of ``judge tune``: reflective edits, few-shot demos and merges over a per-item
Pareto frontier, under hard call and money budgets.

One round:

1. pick parents: up to ``beam`` prompts drawn from the Pareto frontier of dev
   (:mod:`judge.tuning.frontier`; ``search="beam"``: the ``beam`` best by the objective
   instead), among those that still make train mistakes — none left: converged;
2. for each parent: show the optimizer model up to ``examples`` of its train mistakes
   (label, rationale, the judge's decision and reason), ask for a critique, then for
   ``edits`` edited prompts; then make a demos edit: ``demos`` labelled TRAIN cases as
   few-shot examples (:mod:`judge.tuning.demos`);
3. merge two frontier prompts with complementary strengths (at most ``merges``).

Every new prompt is validated (:mod:`judge.tuning.contract`), measured on train, and
rejected there when it is worse than its parent (the gate saves the dev calls); the rest
are measured on dev and join the pool. The winner is the best measured prompt on dev by
the objective, floors and tie-breakers (:mod:`judge.tuning.objective`). The optimizer
never sees the test split: it only asks for ``train`` and ``dev``.

Every LLM call (each judgement and each optimizer request) is counted by a
:class:`~judge.tuning.call_budget.CallBudget`, and with ``--max-usd`` priced by a money
plan. Work that cannot fit in what is left is not started; the budgets refuse any call
beyond their limits, so the provider never sees more than ``max_calls`` requests.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from judge.tuning.call_budget import BudgetError, BudgetExhausted, CallBudget, OptimizerLLM
from judge.tuning.candidates import Candidate, Evaluator, ItemOutcome, SplitEval
from judge.tuning.contract import check_candidate
from judge.tuning.demos import pick_demos, with_demos
from judge.tuning.frontier import pareto_frontier, plan_merge, sample_parents, three_way_merge
from judge.tuning.objective import Objective
from judge.tuning.reflection import (
    OptimizerTemplate,
    critique_request,
    edit_request,
    examples_text,
    merge_request,
    parse_proposals,
)

Log = Callable[[str], None]


@dataclass
class OptimizerSettings:
    rounds: int = 3
    #: Parents per round (drawn from the frontier, or the best by dev with ``search="beam"``).
    beam: int = 3
    edits: int = 3
    examples: int = 6
    seed: int = 0
    #: Calls kept back for the final test evaluation (baseline and winner); a function is
    #: asked again before each step (what a judgement costs is measured as the run goes).
    reserve: int | Callable[[], int] = 0
    objective: Objective = field(default_factory=Objective)
    search: Literal["pareto", "beam"] = "pareto"
    #: Few-shot examples per demos edit (0: no demos edits).
    demos: int = 4
    #: Most merges in the run (None: one per round; ``beam`` search never merges).
    merges: int | None = None
    template: OptimizerTemplate | None = None


class MoneyPlan(Protocol):
    """What ``--max-usd`` lets the search start (:class:`judge.tuning.money.Money`)."""

    def fits(self, judgements: int, requests: int) -> bool: ...

    def learn(self, ev: SplitEval) -> None: ...


@dataclass
class OptimizeResult:
    candidates: list[Candidate]
    baseline: Candidate
    winner: Candidate
    stopped: str
    outcomes: dict[str, dict[str, SplitEval]] = field(default_factory=dict)
    #: Which limit stopped the search (``--max-calls`` / ``--max-usd``), when one did.
    limit: str | None = None


def pick_errors(outcomes: list[ItemOutcome], k: int, rng: random.Random) -> list[ItemOutcome]:
    """Up to ``k`` misclassified items, alternating false passes and false blocks."""
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


class _Stop(Exception):
    """Ends the search (budget, optimizer failure); ``reason`` is its ``stopped``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Optimizer:
    """Runs the search; see the module docstring.

    ``llm`` must count its own calls against ``budget``: wrap a plain one in
    :class:`~judge.tuning.call_budget.BudgetedLLM`, or use :class:`judge.tuning.llm.ProviderLLM`
    over a metered provider (which counts every request, retries included).
    """

    def __init__(
        self,
        baseline_prompt: str,
        evaluator: Evaluator,
        llm: OptimizerLLM,
        budget: CallBudget,
        settings: OptimizerSettings | None = None,
        log: Log | None = None,
        money: MoneyPlan | None = None,
        refusals: Callable[[], int] | None = None,
    ) -> None:
        self.original = baseline_prompt
        self.evaluator = evaluator
        self.llm = llm
        self.budget = budget
        self.settings = settings or OptimizerSettings()
        self.objective = self.settings.objective
        self.log: Log = log or (lambda _msg: None)
        self.money = money
        self.refusals = refusals or (lambda: budget.refused)
        self.candidates: list[Candidate] = []
        self.outcomes: dict[str, dict[str, SplitEval]] = {}
        self.limit: str | None = None
        self._seen: set[str] = set()
        self._tried_merges: set[frozenset[str]] = set()
        self._merges_left = self.settings.rounds if self.settings.merges is None else self.settings.merges

    # -- budgets ----------------------------------------------------------------

    def _spendable(self, judgements: int, requests: int = 0) -> bool:
        if not self.budget.can_afford(judgements + requests + self._reserve()):
            self.limit = "--max-calls"
            return False
        if self.money is not None and not self.money.fits(judgements, requests):
            self.limit = "--max-usd"
            return False
        return True

    def _eval_cost(self) -> int:
        return self.evaluator.cost("train") + self.evaluator.cost("dev")

    def _reserve(self) -> int:
        reserve = self.settings.reserve
        return reserve() if callable(reserve) else reserve

    # -- candidates -------------------------------------------------------------

    def _new(self, rnd: int, parent: Candidate, prompt: str, **fields: object) -> Candidate:
        cand = Candidate.model_validate(
            {"id": f"c{len(self.candidates)}", "round": rnd, "parent": parent.id, "prompt": prompt}
            | {"status": "invalid"}
            | fields
        )
        self.candidates.append(cand)
        return cand

    def _rank(self, cand: Candidate, split: str = "dev") -> tuple[float, ...]:
        return self.objective.rank(self.outcomes[cand.id][split], self.candidates.index(cand))

    def _quality(self, cand: Candidate, split: str) -> tuple[float, ...]:
        return self._rank(cand, split)[:3]  # feasibility and the objective only

    async def _measure(self, cand: Candidate, split: str) -> None:
        """Measure on ``split``; :class:`_Stop` when the budget cut the evaluation short."""
        result = await self.evaluator.evaluate(cand.prompt, split)
        if not result.complete:
            cand.status = "unevaluated"
            cand.note = "the budget ran out during its evaluation"
            raise _Stop("budget")
        self.outcomes.setdefault(cand.id, {})[split] = result
        cand.scores[split] = result.score
        cand.feasible[split] = self.objective.shortfall(result.items) == 0
        cand.metrics[split] = result.metrics | per_judgement(result, self.objective)
        if self.money is not None:
            self.money.learn(result)

    def _measured(self) -> list[Candidate]:
        return [c for c in self.candidates if "dev" in self.outcomes.get(c.id, {})]

    def _units(self) -> dict[str, dict[str, bool]]:
        return {c.id: self.objective.units(self.outcomes[c.id]["dev"].items) for c in self._measured()}

    # -- the run ----------------------------------------------------------------

    async def run(self) -> OptimizeResult:
        s = self.settings
        baseline = Candidate(id="c0", round=0, parent=None, prompt=self.original, status="baseline")
        baseline.kind = "baseline"
        self.candidates.append(baseline)
        self._seen.add(self.original.strip())
        if not self._spendable(self._eval_cost()):
            what = f"--max-calls {self.budget.limit}" if self.limit == "--max-calls" else "--max-usd"
            raise BudgetError(
                f"{what} is too small: measuring the baseline on train and dev takes at least "
                f"{self._eval_cost()} calls and the final test evaluation {self._reserve()} more"
            )
        try:
            await self._measure(baseline, "train")
            await self._measure(baseline, "dev")
        except _Stop:
            raise BudgetError("the budget ran out while measuring the baseline") from None
        if not self.budget.can_afford(self._reserve()):
            self.log(
                f"the baseline's measurement shows what a judgement costs: the test evaluation needs "
                f"{self._reserve()} calls, {self.budget.remaining()} are left"
            )
        self.log(f"baseline: train {_fmt(baseline.scores['train'])}, dev {_fmt(baseline.scores['dev'])}")
        stopped = "rounds"
        rng = random.Random(s.seed)
        for rnd in range(1, s.rounds + 1):
            parents = self._parents(rng)
            if not parents:
                stopped = "converged: the frontier makes no mistakes on train"
                break
            try:
                for parent in parents:
                    await self._reflect(rnd, parent, rng)
                    await self._demos(rnd, parent, rng)
                await self._merge(rnd)
            except _Stop as stop:
                stopped = stop.reason
            self.log(f"round {rnd}: {len(self.candidates)} prompt(s) tried; dev " + self._board())
            if stopped != "rounds":
                break
        winner = self._finish()
        return OptimizeResult(self.candidates, baseline, winner, stopped, self.outcomes, self._limit(stopped))

    def _limit(self, stopped: str) -> str | None:
        """The budget that stopped the search: the one planning found short, else the one
        that refused a request."""
        if stopped != "budget":
            return None
        return self.limit or ("--max-calls" if self.budget.refused else "--max-usd")

    def _board(self) -> str:
        best = sorted(self._measured(), key=self._rank)[:3]
        return ", ".join(f"{c.id}={_fmt(c.scores.get('dev'))}" for c in best)

    def _parents(self, rng: random.Random) -> list[Candidate]:
        """This round's parents: frontier members (or the best by dev) that still make train
        mistakes; none: the search has converged."""
        measured = self._measured()

        def improvable(cand: Candidate) -> bool:
            return any(i.wrong for i in self.outcomes[cand.id]["train"].items)

        if self.settings.search == "beam":
            return [c for c in sorted(measured, key=self._rank)[: self.settings.beam] if improvable(c)]
        frontier = pareto_frontier(measured, self._units(), self._rank)
        if not frontier:  # nothing right on dev anywhere: the best by the objective
            return [c for c in sorted(measured, key=self._rank)[:1] if improvable(c)]
        by_id = {c.id: c for c in measured}
        pool = {cid: units for cid, units in frontier.items() if improvable(by_id[cid])}
        return [by_id[cid] for cid in sample_parents(pool, self.settings.beam, rng)]

    async def _ask(self, request: str) -> str:
        refused = self.refusals()
        try:
            return await self.llm.propose(request)
        except Exception as exc:  # a provider failure ends the search; what we have stands
            if isinstance(exc, BudgetExhausted) or self.refusals() > refused:
                raise _Stop("budget") from None
            self.log(f"optimizer LLM failed: {exc}")
            raise _Stop(f"optimizer error: {exc}") from None

    async def _reflect(self, rnd: int, parent: Candidate, rng: random.Random) -> None:
        s = self.settings
        errors = pick_errors(self.outcomes[parent.id]["train"].items, s.examples, rng)
        if not errors:
            return
        if not self._spendable(self._eval_cost(), requests=2):
            raise _Stop("budget")
        examples = examples_text(errors, self.evaluator.describe, lambda i: self.evaluator.case(i).rationale)
        critique = await self._ask(critique_request(parent.prompt, examples, s.template))
        answer = await self._ask(edit_request(parent.prompt, examples, critique, s.edits, s.template))
        proposals = parse_proposals(answer)
        if not proposals:
            self.log(f"round {rnd}: the optimizer answered no <PROMPT> block for {parent.id}")
        shown = [e.id for e in errors]
        for text in proposals[: s.edits]:
            cand = self._new(rnd, parent, text, kind="edit", critique=critique, shown=shown)
            await self._try(cand, parent)

    async def _demos(self, rnd: int, parent: Candidate, rng: random.Random) -> None:
        k = self.settings.demos
        if k < 1:
            return
        wrong = {i.id for i in self.outcomes[parent.id]["train"].items if i.wrong}
        picked = pick_demos(self.evaluator.cases("train"), wrong, k, rng, self.objective.pairs)
        if not picked:
            return
        text = with_demos(parent.prompt, picked, getattr(self.evaluator, "base_dir", None))
        cand = self._new(rnd, parent, text, kind="demos", demos=[c.id for c in picked])
        cand.note = f"{len(picked)} train case(s) as examples"
        await self._try(cand, parent)

    async def _merge(self, rnd: int) -> None:
        if self.settings.search != "pareto" or self._merges_left < 1:
            return
        measured = self._measured()
        units = self._units()
        frontier = pareto_frontier(measured, units, self._rank)
        plan = plan_merge(frontier, units, {c.id: c for c in measured}, self._tried_merges)
        if plan is None:
            return
        self._tried_merges.add(frozenset((plan.a.id, plan.b.id)))
        self._merges_left -= 1
        text = three_way_merge(plan.ancestor.prompt, plan.a.prompt, plan.b.prompt)
        how = f"three-way merge of {plan.a.id} and {plan.b.id} (common ancestor {plan.ancestor.id})"
        if text is None:
            if not self._spendable(self._eval_cost(), requests=1):
                raise _Stop("budget")
            proposals = parse_proposals(
                await self._ask(merge_request(plan.a.prompt, plan.b.prompt, self.settings.template))
            )
            if not proposals:
                return
            text, how = proposals[0], f"{plan.a.id} and {plan.b.id} merged by the optimizer model"
        cand = self._new(rnd, plan.a, text, kind="merge", mergeOf=[plan.a.id, plan.b.id])
        cand.note = how
        await self._try(cand, plan.a, gate=False)

    async def _try(self, cand: Candidate, parent: Candidate, gate: bool = True) -> None:
        """Validate, dedupe and measure ``cand`` (train, the gate, dev); :class:`_Stop` on budget."""
        checked = check_candidate(cand.prompt, self.original)
        template = self.settings.template
        if checked.prompt is not None and template is not None and template.pasted(checked.prompt):
            checked.prompt, checked.rejected = None, "pastes the --optimizer-template policy into the prompt"
        if checked.prompt is None:
            cand.note = checked.rejected
            return
        cand.prompt, cand.repairs = checked.prompt, checked.repairs
        if checked.prompt.strip() in self._seen:
            cand.status, cand.note = "duplicate", "same text as an earlier prompt"
            return
        self._seen.add(checked.prompt.strip())
        cand.status = "unevaluated"
        if not self._spendable(self._eval_cost()):
            cand.note = "not evaluated: the budget is spent"
            raise _Stop("budget")
        await self._measure(cand, "train")
        if gate and self._quality(cand, "train") > self._quality(parent, "train"):
            cand.status = "rejected"
            cand.note = (
                f"train {_fmt(cand.scores['train'])} is worse than its parent's "
                f"{_fmt(parent.scores['train'])}; not measured on dev"
            )
            return
        await self._measure(cand, "dev")
        cand.status = "dropped"

    def _finish(self) -> Candidate:
        """Mark the final frontier (``kept``) and return the winner."""
        measured = self._measured()
        units = self._units()
        frontier = pareto_frontier(measured, units, self._rank)
        ranked = sorted(measured, key=self._rank)
        kept = (
            set(frontier)
            if self.settings.search == "pareto"
            else {c.id for c in ranked[: self.settings.beam]}
        )
        for cand in measured:
            cand.frontier = cand.id in frontier
            cand.best_on = frontier.get(cand.id, [])
            if cand.status == "dropped" and cand.id in kept:
                cand.status = "kept"
        return ranked[0]


def per_judgement(ev: SplitEval, objective: Objective) -> dict[str, float | None]:
    """The precisions and the cost tie-breakers of a measurement, for its metrics."""
    costs = {"usdPerJudgement": ev.usd, "tokensPerJudgement": ev.tokens, "latencyMs": ev.latency_ms}
    return objective.precisions(ev.items) | costs


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
