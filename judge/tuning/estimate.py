"""``judge tune --estimate``: what a tuning run would cost, without calling any model.

The baseline's judgements on each split are planned like ``judge eval --estimate``
(:mod:`judge.evaluation.estimate`: the engine with a recording judge, tokens from the
cache where it has them, cache hits free). Candidates are new prompts, so their
judgements are never in the cache: each costs the baseline's mean tokens per judgement
(plus the examples of a demos edit). The optimizer's requests are sized from its request
templates, the prompt and the examples shown.

Two totals: **at least** — the baseline on train, dev and test (a run that finds nothing
to improve); **at most** — every round with ``--beam`` parents, each with its
``--edits`` edits and a demos edit measured on train and dev, a merge per round (asked of
the optimizer), and the winner on test. ``--max-calls`` / ``--max-usd`` cap the real run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, Field

from judge.decision import Usage
from judge.evaluation.estimate import CHARS_PER_TOKEN, Planned, plan_async
from judge.evaluation.spending import config_prices
from judge.evaluation.suite import Suite
from judge.llm.tiers import model_label
from judge.pricing import Price, price_for
from judge.tuning.demos import ANSWER_CHARS, RATIONALE_CHARS, TRANSCRIPT_CHARS
from judge.tuning.measure import DESCRIBE_CHARS, tuned_config
from judge.tuning.plan import TuneOptions, TunePlan, plan_tune
from judge.tuning.reflection import CRITIQUE_TEMPLATE, EDIT_TEMPLATE, MERGE_TEMPLATE

CRITIQUE_TOKENS = 400
#: A proposed prompt is written out in full, usually a little longer than its parent.
GROWTH = 1.5
DEMO_CHARS = ANSWER_CHARS + TRANSCRIPT_CHARS + RATIONALE_CHARS + 60


class Total(BaseModel):
    judgements: int = 0
    free: int = Field(0, description="Judgements served from the cache.")
    requests: int = Field(0, description="Optimizer requests.")
    calls: int = Field(0, description="At least this many model calls.")
    input_tokens: int = Field(0, alias="inputTokens")
    output_tokens: int = Field(0, alias="outputTokens")
    usd: float | None = None


class TuneEstimate(BaseModel):
    name: str
    hook: str
    objective: str
    split: dict[str, int]
    repeats: int
    judge_models: list[str] = Field(alias="judgeModels")
    optimizer_model: str | None = Field(alias="optimizerModel")
    per_judgement: Usage = Field(alias="perJudgement")
    sources: dict[str, int]
    least: Total
    most: Total
    unpriced: list[str] = Field(default_factory=list)
    max_calls: int | None = Field(None, alias="maxCalls")
    max_usd: float | None = Field(None, alias="maxUsd")


@dataclass
class BaselineCosts:
    """What the search's planning starts from (see :mod:`judge.tuning.money`)."""

    planned: dict[str, list[Planned]]
    per_judgement: float
    per_request: float
    baseline_usd: float
    usage: Usage
    optimizer: str | None
    judge_models: list[str]
    unpriced: list[str]


def _mean_usage(planned: list[Planned]) -> Usage:
    if not planned:
        return Usage()
    n = len(planned)
    return Usage(
        inputTokens=sum(p.usage.input_tokens for p in planned) // n,
        outputTokens=sum(p.usage.output_tokens for p in planned) // n,
    )


def _cost(price: Price | None, usage: Usage) -> float:
    return 0.0 if price is None else price.cost(usage)


def _request_usage(prompt: str, options: TuneOptions) -> tuple[Usage, Usage, Usage]:
    """Tokens of a critique, an edit and a merge request of the optimizer."""
    shown = options.examples * (DESCRIBE_CHARS + 400)
    written = int(len(prompt) * GROWTH) // CHARS_PER_TOKEN + 50
    critique_in = (len(CRITIQUE_TEMPLATE) + len(prompt) + shown) // CHARS_PER_TOKEN
    critique = Usage(inputTokens=critique_in, outputTokens=CRITIQUE_TOKENS)
    edit_in = (len(EDIT_TEMPLATE) + len(prompt) + shown) // CHARS_PER_TOKEN + CRITIQUE_TOKENS
    edit = Usage(inputTokens=edit_in, outputTokens=options.edits * written)
    merge = Usage(
        inputTokens=(len(MERGE_TEMPLATE) + 2 * len(prompt)) // CHARS_PER_TOKEN + written, outputTokens=written
    )
    return critique, edit, merge


def _optimizer_label(options: TuneOptions, suite: Suite, env: Mapping[str, str] | None) -> str | None:
    if not options.rounds:
        return None
    try:
        return model_label(options.optimizer_model, suite.config.models, env)
    except ValueError:
        return f"unresolved:{options.optimizer_model}"


async def baseline_costs(
    suite: Suite, options: TuneOptions, plan: TunePlan, env: Mapping[str, str] | None
) -> BaselineCosts:
    """The baseline's planned judgements per split and the unit costs of the search."""
    config = tuned_config(suite.config, plan.event, plan.hook, plan.hook.prompt or "")
    by_id = {c.id: c for c in plan.cases}
    planned = {}
    for name in ("train", "dev", "test"):
        planned[name] = await plan_async(
            config,
            plan.event,
            [by_id[i] for i in plan.split.ids(name)],
            base_dir=suite.base_dir,
            repeats=plan.repeats,
            cache_path=options.cache,
            env=env,
        )
    prices = config_prices(suite.config, env)
    everything = [p for ps in planned.values() for p in ps]
    models = sorted({p.model for p in everything})
    unpriced = [m for m in models if price_for(m, prices) is None]
    usage = _mean_usage(everything)
    judge_price = price_for(models[0], prices) if models else None
    optimizer = _optimizer_label(options, suite, env)
    critique, edit, _ = _request_usage(plan.hook.prompt or "", options)
    opt_price = price_for(optimizer, prices) if optimizer else None
    if optimizer and opt_price is None:
        unpriced.append(optimizer)
    baseline = [p for name in ("train", "dev") for p in planned[name] if not p.free]
    return BaselineCosts(
        planned=planned,
        per_judgement=_cost(judge_price, usage),
        per_request=max(_cost(opt_price, critique), _cost(opt_price, edit)),
        baseline_usd=sum(_cost(price_for(p.model, prices), p.usage) for p in baseline),
        usage=usage,
        optimizer=optimizer,
        judge_models=models,
        unpriced=unpriced,
    )


def _add(total: Total, n: int, usage: Usage, calls: int, price: Price | None, unpriced: bool) -> None:
    total.judgements += n
    total.calls += n * calls
    total.input_tokens += n * usage.input_tokens
    total.output_tokens += n * usage.output_tokens
    if total.usd is not None and not unpriced:
        total.usd += n * _cost(price, usage)


async def estimate_tune(
    suite: Suite, options: TuneOptions, env: Mapping[str, str] | None = None
) -> TuneEstimate:
    """The estimate of ``judge tune`` with ``options`` (module docstring); no model is called."""
    plan = plan_tune(suite, options)
    costs = await baseline_costs(suite, options, plan, env)
    prices = config_prices(suite.config, env)
    least = Total(usd=None if costs.unpriced else 0.0)
    for p in (p for ps in costs.planned.values() for p in ps):
        least.judgements += 1
        if p.free:
            least.free += 1
            continue
        least.calls += p.calls
        least.input_tokens += p.usage.input_tokens
        least.output_tokens += p.usage.output_tokens
        if least.usd is not None:
            least.usd += _cost(price_for(p.model, prices), p.usage)
    most = least.model_copy()
    calls = max(p.calls for ps in costs.planned.values() for p in ps) if costs.planned["train"] else 1
    judge_price = price_for(costs.judge_models[0], prices) if costs.judge_models else None
    train_dev = (len(plan.split.train) + len(plan.split.dev)) * plan.repeats
    parents = options.rounds * options.beam
    demo = Usage(inputTokens=options.demos * DEMO_CHARS // CHARS_PER_TOKEN) if options.demos else Usage()
    unpriced = bool(costs.unpriced)
    _add(most, parents * options.edits * train_dev, costs.usage, calls, judge_price, unpriced)
    if options.demos:
        _add(most, parents * train_dev, costs.usage + demo, calls, judge_price, unpriced)
    merges = 0 if options.search == "beam" else options.rounds if options.merges is None else options.merges
    _add(most, merges * train_dev, costs.usage, calls, judge_price, unpriced)
    _add(most, len(plan.split.test) * plan.repeats, costs.usage + demo, calls, judge_price, unpriced)
    critique, edit, merge = _request_usage(plan.hook.prompt or "", options)
    opt_price = price_for(costs.optimizer, prices) if costs.optimizer else None
    for usage, n in ((critique, parents), (edit, parents), (merge, merges if options.rounds else 0)):
        most.requests += n
        _add(most, n, usage, 1, opt_price, unpriced)
        most.judgements -= n  # (requests, not judgements)
    for total in (least, most):
        total.usd = None if total.usd is None else round(total.usd, 6)
    return TuneEstimate(
        name=suite.name,
        hook=f"{plan.event}:{plan.index}",
        objective=plan.objective.describe(),
        split={name: len(plan.split.ids(name)) for name in ("train", "dev", "test")},
        repeats=plan.repeats,
        judgeModels=costs.judge_models,
        optimizerModel=costs.optimizer,
        perJudgement=costs.usage,
        sources=_sources(costs.planned),
        least=least,
        most=most,
        unpriced=costs.unpriced,
        maxCalls=options.max_calls,
        maxUsd=options.max_usd,
    )


def _sources(planned: dict[str, list[Planned]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in (p for ps in planned.values() for p in ps):
        out[p.source] = out.get(p.source, 0) + 1
    return out


def describe_tune(est: TuneEstimate) -> list[str]:
    """The estimate as lines of text (what ``judge tune --estimate`` prints)."""

    def money(value: float | None) -> str:
        return "unknown" if value is None else f"${value:.4f}"

    def total(t: Total) -> str:
        return (
            f"{t.judgements:,} judgement(s) ({t.free:,} from the cache), {t.requests} optimizer "
            f"request(s), >= {t.calls:,} call(s), ~{t.input_tokens:,} in / ~{t.output_tokens:,} out "
            f"tokens, {money(t.usd)}"
        )

    s = est.split
    lines = [
        f"estimate for judge tune of {est.name} ({est.hook}, {est.objective}): train {s['train']}, "
        f"dev {s['dev']}, test {s['test']} item(s) x {est.repeats} repeat(s)",
        f"  judge {', '.join(est.judge_models) or 'none'}: ~{est.per_judgement.input_tokens:,} in / "
        f"~{est.per_judgement.output_tokens:,} out tokens per judgement ("
        + ", ".join(f"{n} from {k}" for k, n in sorted(est.sources.items()))
        + f"); optimizer {est.optimizer_model or 'none'}",
        f"  at least (the baseline only): {total(est.least)}",
        f"  at most (every round, edit and merge measured): {total(est.most)}",
    ]
    caps = [f"--max-calls {est.max_calls}"] if est.max_calls is not None else []
    caps += [f"--max-usd {est.max_usd:g}"] if est.max_usd is not None else []
    if caps:
        lines.append(f"  the run stops at {' and '.join(caps)}")
    if est.unpriced:
        lines.append(f"  no price for {', '.join(est.unpriced)}: dollars are unknown")
    return lines
