"""Measuring a prompt on a split of a labelled suite, with every LLM call budgeted.

The tuned hook is measured alone: the evaluated config holds only that hook (its prompt
replaced by the candidate), so other hooks of the config neither run nor cost calls.
A result's decision is the hook's verdict: a stop forced through by ``maxRejections``
still counts as the block the judge gave (as in ``judge eval``'s metrics), and a result
with an error (timeout, provider failure) has no decision, which scores as a miss.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from judge.config import Config, Hook, HookSet
from judge.errors import JudgeError
from judge.evaluation.cache import JudgementCache
from judge.evaluation.runner import CaseResult, run_cases
from judge.evaluation.spending import Metered, UsdLimit
from judge.evaluation.stats import balanced_accuracy, flip_rate, majority_vote
from judge.evaluation.suite import Case
from judge.hooks.judging import PromptJudge
from judge.llm.providers.base import Provider
from judge.llm.tiers import ResolvedModel
from judge.tuning.call_budget import CallBudget
from judge.tuning.candidates import ItemOutcome, SplitEval
from judge.tuning.objective import Objective
from judge.tuning.splits import Split

DESCRIBE_CHARS = 1500


def budgeted_judge(
    budget: CallBudget,
    usd: UsdLimit | None = None,
    env: Mapping[str, str] | None = None,
    make: Callable[[ResolvedModel], Provider] | None = None,
) -> PromptJudge:
    """The LLM judge with every provider request counted against ``budget`` (and priced
    against ``usd``). ``make`` replaces the providers the environment would give (tests);
    otherwise each judgement leases its own provider on the shared clients, so the
    per-request hooks of one judgement are never another's."""
    from judge.llm.judge import LLMJudge

    judge: PromptJudge = LLMJudge(
        provider_for=make, env=env, wrap=lambda provider: Metered(provider, usd, budget.take)
    )
    return judge


def hook_verdict(result: CaseResult) -> str | None:
    """The tuned hook's verdict in one result (see the module docstring)."""
    if result.error is not None:
        return None
    return result.verdict


def outcomes(results: Sequence[CaseResult], labels: Mapping[str, str | None]) -> list[ItemOutcome]:
    """Per-item majority decisions (first-seen item order)."""
    by_id: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        by_id[r.id].append(r)
    out = []
    for item_id, rs in by_id.items():
        rs.sort(key=lambda r: r.repeat)
        decisions = [hook_verdict(r) for r in rs]
        decision = majority_vote(decisions)
        reason = next((r.reason for r in rs if hook_verdict(r) == decision and r.reason), None)
        error = next((r.error for r in rs if r.error), None)
        out.append(
            ItemOutcome(
                id=item_id,
                label=labels.get(item_id),
                decision=decision,
                decisions=decisions,
                reason=reason,
                error=error,
            )
        )
    return out


class NothingMeasured(JudgeError):
    """Every judgement of a measurement errored: its score would say nothing."""


def require_a_verdict(results: Sequence[CaseResult], what: str) -> None:
    """Raise :class:`NothingMeasured` when every result errored (a missing API key, a
    model name the server does not know): the run would report a score of 0 and go on."""
    if not results or any(r.error is None for r in results):
        return
    common = Counter(r.error for r in results).most_common(1)[0][0]
    raise NothingMeasured(
        f"every judgement of {what} errored ({len(results)} of {len(results)}); most common: {common}"
    )


def score(items: Sequence[ItemOutcome]) -> float | None:
    """The selection metric: balanced accuracy of the majority decisions (misses count)."""
    return balanced_accuracy([(i.decision, i.label) for i in items if i.label is not None])


def summary_metrics(results: Sequence[CaseResult], items: Sequence[ItemOutcome]) -> dict[str, Any]:
    """The eval report of the results plus the item-level (majority vote) numbers."""
    from judge.evaluation.metrics import compute_report

    report: dict[str, Any] = dict(compute_report(list(results)))
    labelled = [i for i in items if i.label is not None]
    report["items"] = len(items)
    report["majorityAccuracy"] = (
        sum(1 for i in labelled if i.decision == i.label) / len(labelled) if labelled else None
    )
    report["majorityBalancedAccuracy"] = score(items)
    report["itemFlipRate"] = flip_rate([i.decisions for i in items])
    report["undecided"] = sum(1 for i in items if i.decision is None)
    return report


def tuned_config(config: Config, event: str, hook: Hook, prompt: str) -> Config:
    """A config holding only ``hook`` (for ``event``) with ``prompt`` in place."""
    hooks = HookSet.model_validate({event: [hook.model_copy(update={"prompt": prompt})]})
    return Config(
        name=config.name, hooks=hooks, models=config.models, prices=config.prices, base_dir=config.base_dir
    )


def describe_case(case: Case, limit: int = DESCRIBE_CHARS) -> str:
    """A short rendering of what the judge saw for ``case`` (for the optimizer's examples)."""
    ctx = dict(case.context)
    ctx.pop("execution_summary", None)
    text = json.dumps(ctx, ensure_ascii=False, indent=1, default=str)
    if len(text) > limit:
        text = text[:limit] + " ...[truncated]"
    out = f"Context: {text}"
    if case.transcript:
        excerpt = case.transcript[: limit // 2]
        more = " ...[truncated]" if len(case.transcript) > len(excerpt) else ""
        out += f"\nTranscript excerpt: {excerpt}{more}"
    return out


def spend(results: Sequence[CaseResult]) -> dict[str, float | None]:
    """Per judgement: ``usd`` (None unless every answered judgement is priced), ``tokens``,
    and ``latency_ms`` over the judgements not served from the cache (None when all were)."""
    answered = [r for r in results if r.error is None]
    if not answered:
        return {"usd": None, "tokens": None, "latency_ms": None}
    costs = [r.cost_usd for r in answered]
    usd = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs) / len(costs)
    tokens = sum(r.usage.input_tokens + r.usage.output_tokens for r in answered) / len(answered)
    fresh = [r.duration_ms for r in answered if not r.cached]
    return {"usd": usd, "tokens": tokens, "latency_ms": sum(fresh) / len(fresh) if fresh else None}


class SuiteEvaluator:
    """Measures prompts for one hook on the splits of a labelled suite.

    ``refusals`` counts the requests the budgets refused (a measurement during which it
    grew is incomplete); ``cache`` serves judgements already made (``--cache``).
    """

    def __init__(
        self,
        config: Config,
        event: str,
        hook: Hook,
        cases: Sequence[Case],
        split: Split,
        *,
        base_dir: Path,
        judge: PromptJudge,
        budget: CallBudget,
        repeats: int = 1,
        concurrency: int = 8,
        objective: Objective | None = None,
        cache: JudgementCache | None = None,
        refusals: Callable[[], int] | None = None,
    ) -> None:
        self.config = config
        self.event = event
        self.hook = hook
        self.by_id = {c.id: c for c in cases}
        self.split = split
        self.base_dir = base_dir
        self.judge = judge
        self.budget = budget
        self.repeats = repeats
        self.concurrency = concurrency
        self.objective = objective or Objective()
        self.cache = cache
        self.refusals = refusals or (lambda: budget.refused)
        self.labels = {c.id: c.label for c in cases}
        self.results: dict[tuple[str, str], list[CaseResult]] = {}
        self._baseline_checked = False
        #: Calls per judgement of each finished measurement (a judgement that reads the
        #: transcript takes several: tool rounds, a repaired verdict)
        self.rates: list[float] = []

    def cases(self, split: str) -> list[Case]:
        return [self.by_id[i] for i in self.split.ids(split)]

    def calls_per_judgement(self) -> float:
        """What one judgement has cost (the most of any measurement so far: prompts differ
        in how much of the transcript they make the judge read); 1 before any."""
        return max(self.rates, default=1.0)

    def case(self, item_id: str) -> Case:
        return self.by_id[item_id]

    def cost(self, split: str) -> int:
        """The calls measuring a prompt on ``split`` takes, at :meth:`calls_per_judgement`."""
        return math.ceil(len(self.split.ids(split)) * self.repeats * self.calls_per_judgement())

    def describe(self, item_id: str) -> str:
        return describe_case(self.by_id[item_id])

    async def run(self, prompt: str, split: str) -> tuple[list[CaseResult], bool]:
        """Raw results of ``prompt`` on ``split`` and whether the budgets let it finish."""
        refused, used = self.refusals(), self.budget.used
        results = await run_cases(
            tuned_config(self.config, self.event, self.hook, prompt),
            self.event,
            self.cases(split),
            base_dir=self.base_dir,
            repeats=self.repeats,
            concurrency=self.concurrency,
            judge=self.judge,
            cache=self.cache,
        )
        complete = self.refusals() == refused
        if complete and results:
            self.rates.append(max(1.0, (self.budget.used - used) / len(results)))
        return results, complete

    async def evaluate(self, prompt: str, split: str) -> SplitEval:
        results, complete = await self.run(prompt, split)
        if complete and prompt == self.hook.prompt and not self._baseline_checked:
            # once, on the first measurement (a candidate may just be bad; a later failure,
            # on the test split, must not throw away a finished run)
            require_a_verdict(results, f"the hook's own prompt on the {split} split")
            self._baseline_checked = True
        self.results[(prompt, split)] = results
        items = outcomes(results, self.labels)
        costs = spend(results)
        return SplitEval(
            split=split,
            items=items,
            score=self.objective.score(items),
            metrics=summary_metrics(results, items) if complete else {},
            complete=complete,
            usd=costs["usd"],
            tokens=costs["tokens"],
            latency_ms=costs["latency_ms"],
        )
