"""``judge tune``: split a labelled suite, search for a better prompt, report on test.

The flow: check the run (:func:`judge.tuning.plan.plan_tune`: the prompt hook
``EVENT:INDEX``, the split by group, the objective, the optimizer template), run the
search on train and dev only (:mod:`judge.tuning.optimizer`) under the call and money
budgets, then measure the baseline and the winner once on test and write the files of
:mod:`judge.tuning.outputs`. The paired test comparison is over the objective's units:
items, or pairs for ``--objective pairwise``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from judge.evaluation.cache import JudgementCache
from judge.evaluation.runner import CaseResult
from judge.evaluation.spending import UsdLimit, config_prices
from judge.evaluation.suite import Suite
from judge.pricing import price_for
from judge.tuning.call_budget import BudgetError, CallBudget
from judge.tuning.candidates import Candidate, SplitEval
from judge.tuning.llm import ProviderLLM, optimizer_llm
from judge.tuning.measure import SuiteEvaluator, budgeted_judge
from judge.tuning.money import SAFETY, Money
from judge.tuning.objective import Objective
from judge.tuning.optimizer import Optimizer, OptimizeResult, OptimizerSettings, per_judgement
from judge.tuning.plan import TuneError, TuneOptions, TunePlan, plan_tune
from judge.tuning.report import SMALL_TEST
from judge.tuning.splits import Split
from judge.tuning.stats import ItemPair, PairedComparison, compare_paired

Log = Callable[[str], None]


@dataclass
class TuneOutcome:
    suite: str
    event: str
    index: int
    split: Split
    candidates: list[Candidate]
    baseline: Candidate
    winner: Candidate
    stopped: str
    calls: int
    max_calls: int | None
    test: dict[str, SplitEval] = field(default_factory=dict)
    comparison: PairedComparison | None = None
    optimizer_model: str = ""
    files: dict[str, str] = field(default_factory=dict)
    #: LLM calls one judgement took (the most of any measurement)
    calls_per_judgement: float = 1.0
    repeats: int = 1
    objective: str = "balanced accuracy"
    #: What the test comparison counts: ``item`` or ``pair``.
    unit: str = "item"
    #: Which budget stopped the search (``--max-calls`` / ``--max-usd``), when one did.
    limit: str | None = None
    max_usd: float | None = None
    spent_usd: float | None = None
    #: The test judgements per candidate measured there (a calibration record's input).
    test_results: dict[str, list[CaseResult]] = field(default_factory=dict)
    #: The labelled cases' rationales, by id (the report shows them).
    rationales: dict[str, str] = field(default_factory=dict)


def paired_units(a: SplitEval, b: SplitEval, objective: Objective) -> list[ItemPair]:
    """A and B on the objective's units: items (decisions), or pairs (right / wrong)."""
    if objective.name != "pairwise":
        by_id = {i.id: i for i in b.items}
        return [
            ItemPair(id=i.id, label=i.label, a=i.decision, b=by_id[i.id].decision)
            for i in a.items
            if i.id in by_id
        ]
    ua, ub = objective.units(a.items), objective.units(b.items)
    word = {True: "right", False: "wrong"}
    return [ItemPair(id=u, label="right", a=word[ua[u]], b=word[ub[u]]) for u in ua if u in ub]


def _prices_problem(
    plan: TunePlan, suite: Suite, options: TuneOptions, env: Mapping[str, str] | None
) -> None:
    """``--max-usd`` needs a price for every model it limits."""
    from judge.evaluation.spending import unpriced_models
    from judge.llm.tiers import model_label

    prices = config_prices(suite.config, env)
    missing = unpriced_models(suite.config, plan.event, prices, env)
    if options.rounds:
        try:
            label = model_label(options.optimizer_model, suite.config.models, env)
        except ValueError:
            label = None  # reported when the optimizer is made
        if label is not None and price_for(label, prices) is None:
            missing.append(label)
    if missing:
        raise TuneError(
            f"--max-usd: no price for {', '.join(missing)}: set one under prices: in the config "
            "(or JUDGE_PRICES), so what it spends can be limited"
        )


async def _money(
    limit: UsdLimit, suite: Suite, options: TuneOptions, plan: TunePlan, env: Mapping[str, str] | None
) -> Money:
    """The money plan, refused up front when the baseline and the test share cannot fit."""
    from judge.tuning.estimate import baseline_costs

    costs = await baseline_costs(suite, options, plan, env)
    test = len(plan.split.test) * plan.repeats
    plan_money = Money(limit, test, costs.per_judgement, costs.per_request, costs.optimizer)
    need = costs.baseline_usd + 2 * test * costs.per_judgement * SAFETY  # the baseline, then the test share
    if need > limit.max_usd:
        raise BudgetError(
            f"--max-usd {limit.max_usd:g} is too small: measuring the baseline on train and dev and the "
            f"final test evaluation are estimated at ${need:.4f} (see judge tune --estimate)"
        )
    return plan_money


async def _test(
    outcome: TuneOutcome, evaluator: SuiteEvaluator, result: OptimizeResult, plan: TunePlan
) -> None:
    """Measure the baseline and the winner on test (once) and compare them."""
    for cand in {result.baseline.id: result.baseline, result.winner.id: result.winner}.values():
        ev = await evaluator.evaluate(cand.prompt, "test")
        outcome.test[cand.id] = ev
        outcome.test_results[cand.id] = evaluator.results[(cand.prompt, "test")]
        cand.scores["test"] = ev.score if ev.complete else None
        cand.feasible["test"] = plan.objective.shortfall(ev.items) == 0
        cand.metrics["test"] = ev.metrics | per_judgement(ev, plan.objective)
    a = outcome.test[result.baseline.id]
    b = outcome.test[result.winner.id]
    if a.complete and b.complete:
        outcome.comparison = compare_paired(paired_units(a, b, plan.objective))


async def tune(
    suite: Suite,
    options: TuneOptions,
    *,
    judge_make: Any = None,
    optimizer_make: Any = None,
    env: Mapping[str, str] | None = None,
    log: Log | None = None,
) -> TuneOutcome:
    """Run the whole tuning job and write its files (see the module docstring).

    ``judge_make`` / ``optimizer_make`` (``ResolvedModel -> Provider``) replace the
    providers the environment would give (tests). Raises :class:`TuneError` (or a
    :class:`JudgeError`) when the run cannot start.
    """
    from judge.tuning.outputs import write_outputs

    say: Log = log or (lambda _m: None)
    plan = plan_tune(suite, options, say)
    split = plan.split
    say(
        f"split (seed {options.seed}): train {len(split.train)}, dev {len(split.dev)}, test {len(split.test)}"
    )
    if len(split.test) < SMALL_TEST:
        say(
            f"warning: the test split has {len(split.test)} item(s): its intervals will be wide and only "
            "large differences can be significant; label more cases before trusting a change"
        )
    budget = CallBudget(options.max_calls)
    usd = None
    if options.max_usd is not None:
        _prices_problem(plan, suite, options, env)
        usd = UsdLimit(options.max_usd, config_prices(suite.config, env))

    def refusals() -> int:
        return budget.refused + (0 if usd is None else usd.refused)

    cache = JudgementCache(options.cache) if options.cache is not None else None
    evaluator = SuiteEvaluator(
        suite.config,
        plan.event,
        plan.hook,
        plan.cases,
        split,
        base_dir=suite.base_dir,
        judge=budgeted_judge(budget, usd, env, judge_make),
        budget=budget,
        repeats=plan.repeats,
        concurrency=options.concurrency,
        objective=plan.objective,
        cache=cache,
        refusals=refusals,
    )
    llm: ProviderLLM | _NoOptimizer = _NoOptimizer()
    optimizer_label = "none (--rounds 0)"  # a baseline-only run needs no optimizer model or key
    try:
        if options.rounds:
            llm, resolved = optimizer_llm(
                options.optimizer_model,
                budget,
                usd=usd,
                models=suite.config.models,
                base_dir=suite.config.base_dir,
                env=env,
                make=optimizer_make,
            )
            optimizer_label = resolved.label
        money = None if usd is None else await _money(usd, suite, options, plan, env)
        settings = OptimizerSettings(
            rounds=options.rounds,
            beam=options.beam,
            edits=options.edits,
            examples=options.examples,
            seed=options.seed,
            # baseline and winner on test, at what a judgement has been seen to cost
            reserve=lambda: 2 * evaluator.cost("test"),
            objective=plan.objective,
            search="beam" if options.search == "beam" else "pareto",
            demos=options.demos,
            merges=options.merges,
            template=plan.template,
        )
        optimizer = Optimizer(
            plan.hook.prompt or "", evaluator, llm, budget, settings, log=say, money=money, refusals=refusals
        )
        result = await optimizer.run()
        outcome = TuneOutcome(
            suite=suite.name,
            event=plan.event,
            index=plan.index,
            split=split,
            candidates=result.candidates,
            baseline=result.baseline,
            winner=result.winner,
            stopped=result.stopped,
            calls=0,
            max_calls=options.max_calls,
            optimizer_model=optimizer_label,
            repeats=plan.repeats,
            objective=plan.objective.describe(),
            unit="pair" if plan.objective.name == "pairwise" else "item",
            limit=result.limit,
            max_usd=options.max_usd,
            rationales={c.id: c.rationale for c in plan.cases if c.rationale},
        )
        if money is not None:
            money.release()
        if split.test:
            say("measuring the baseline and the winner on the test split (once)")
            await _test(outcome, evaluator, result, plan)
    finally:
        await llm.aclose()
        if cache is not None:
            cache.close()
    outcome.calls = budget.used
    outcome.calls_per_judgement = evaluator.calls_per_judgement()
    outcome.spent_usd = None if usd is None else round(usd.spent, 6)
    write_outputs(outcome, suite, options.out)
    return outcome


class _NoOptimizer:
    """The optimizer of a ``--rounds 0`` run: never asked."""

    async def propose(self, prompt: str) -> str:
        raise TuneError("the optimizer was asked for edits in a run with --rounds 0")

    async def aclose(self) -> None:
        return None


__all__ = ["TuneError", "TuneOptions", "TuneOutcome", "tune"]
