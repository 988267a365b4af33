"""``judge tune``: split a labelled suite, search for a better prompt, report on test.

The flow: pick the prompt hook (``EVENT:INDEX``), split the labelled cases into
train/dev/test by group, run the optimizer on train and dev only, then measure the
baseline and the winner once on test and write:

* ``DIR/candidates.jsonl`` — every prompt tried: round, parent, status, metrics per split
  (test only for the baseline and the winner);
* ``DIR/best.yaml`` — the suite's config with the winning prompt in place;
* ``DIR/report.html`` — baseline against winner on test (Wilson intervals, McNemar);
* ``DIR/splits.json`` and ``DIR/summary.json`` — the split and the outcome, for scripts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from judge.config import Config, Hook, parse_document
from judge.errors import JudgeError
from judge.evaluation.runner import CaseResult, run_cases
from judge.evaluation.suite import Case, Suite, resolve_path
from judge.files import read_text
from judge.hooks.judging import PromptJudge
from judge.tuning.call_budget import CallBudget
from judge.tuning.llm import ProviderLLM, optimizer_llm
from judge.tuning.measure import (
    BudgetedProviders,
    SuiteEvaluator,
    budgeted_judge,
    outcomes,
    require_a_verdict,
)
from judge.tuning.optimizer import Candidate, ItemOutcome, Optimizer, OptimizerSettings, SplitEval
from judge.tuning.report import SMALL_TEST
from judge.tuning.splits import Split, parse_split, split_items
from judge.tuning.stats import ItemPair, PairedComparison, compare_paired

Log = Callable[[str], None]
_HOOK_REF = re.compile(r"^([A-Za-z]+):(\d+)$")


class TuneError(JudgeError):
    """The tuning run cannot start (bad hook reference, no labels, too small a budget...)."""


@dataclass
class TuneOptions:
    out: Path
    hook: str | None = None
    rounds: int = 3
    beam: int = 3
    edits: int = 3
    examples: int = 6
    max_calls: int | None = None
    repeats: int | None = None
    seed: int = 0
    split: str = "20/40/40"
    optimizer_model: str = "Reasoning"
    concurrency: int = 8


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


def pick_hook(suite: Suite, ref: str | None) -> tuple[str, int, Hook]:
    """The prompt hook to tune: ``EVENT:INDEX`` (agent level), or the only prompt hook."""
    if ref is None:
        prompts = [
            (i, h) for i, h in enumerate(suite.config.hooks.for_event(suite.event)) if h.type == "prompt"
        ]
        if len(prompts) != 1:
            raise TuneError(
                f"--hook EVENT:INDEX is required: the config has {len(prompts)} prompt hook(s) "
                f"for {suite.event}"
            )
        return suite.event, prompts[0][0], prompts[0][1]
    match = _HOOK_REF.match(ref.strip())
    if not match:
        raise TuneError(f"--hook must look like EVENT:INDEX (e.g. Stop:0), got {ref!r}")
    event, index = match.group(1), int(match.group(2))
    if event != suite.event:
        raise TuneError(f"--hook {ref}: the suite's cases are {suite.event} events, not {event}")
    hooks = suite.config.hooks.for_event(event)
    if index >= len(hooks):
        raise TuneError(f"--hook {ref}: the config has {len(hooks)} agent-level {event} hook(s)")
    hook = hooks[index]
    if hook.type != "prompt":
        raise TuneError(f"--hook {ref}: hooks.{event}[{index}] is a command hook; only prompts can be tuned")
    return event, index, hook


def suite_config_path(suite: Suite) -> Path:
    """The hook config file the suite names."""
    data = yaml.safe_load(read_text(suite.path, "suite file"))
    return resolve_path(suite.base_dir, str(data["config"]))


def config_with_prompt(path: Path, event: str, index: int, prompt: str) -> dict[str, Any]:
    """The config document at ``path`` (either form) with ``hooks.EVENT[INDEX].prompt`` replaced."""
    data = parse_document(read_text(path, "config file"), str(path))
    hooks = data["spec"]["hooks"] if isinstance(data.get("spec"), dict) else data["hooks"]
    hooks[event][index]["prompt"] = prompt
    assert isinstance(data, dict)
    return data


class _BlockDumper(yaml.SafeDumper):
    pass


def _str_presenter(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str_presenter)


def dump_yaml(data: Any) -> str:
    """YAML with multi-line strings (prompts) as literal blocks."""
    return yaml.dump(data, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=110)


def labelled_cases(suite: Suite) -> list[Case]:
    return [c for c in suite.cases if c.label is not None]


def _pairs(a: SplitEval, b: SplitEval) -> list[ItemPair]:
    by_id = {i.id: i for i in b.items}
    return [
        ItemPair(id=i.id, label=i.label, a=i.decision, b=by_id[i.id].decision)
        for i in a.items
        if i.id in by_id
    ]


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
    say: Log = log or (lambda _m: None)
    event, index, hook = pick_hook(suite, options.hook)
    if options.rounds < 0 or options.beam < 1 or options.edits < 1:
        raise TuneError("--rounds must be >= 0 and --beam >= 1")
    if options.concurrency < 1:
        raise TuneError("--concurrency must be at least 1")
    repeats = options.repeats or suite.repeats
    if repeats < 1:
        raise TuneError("--repeats must be at least 1")
    cases = labelled_cases(suite)
    if len(cases) < len(suite.cases):
        say(f"{len(suite.cases) - len(cases)} unlabelled case(s) are left out")
    if not cases:
        raise TuneError(f"{suite.path}: no labelled cases; tuning needs cases with label allow/block")
    split = split_items(cases, parse_split(options.split), options.seed)
    for name in ("train", "dev"):
        if not split.ids(name):
            raise TuneError(
                f"the {name} split is empty ({len(cases)} labelled case(s) in "
                f"{len({c.group or c.id for c in cases})} group(s)); label more cases"
            )
    say(
        f"split (seed {options.seed}): train {len(split.train)}, dev {len(split.dev)}, test {len(split.test)}"
    )
    if len(split.test) < SMALL_TEST:
        say(
            f"warning: the test split has {len(split.test)} item(s): its intervals will be wide and only "
            "large differences can be significant; label more cases before trusting a change"
        )
    budget = CallBudget(options.max_calls)
    providers = BudgetedProviders(budget, suite.config.base_dir, env, judge_make)
    judge: PromptJudge = budgeted_judge(providers, env)
    evaluator = SuiteEvaluator(
        suite.config,
        event,
        hook,
        cases,
        split,
        base_dir=suite.base_dir,
        judge=judge,
        budget=budget,
        repeats=repeats,
        concurrency=options.concurrency,
    )
    llm: ProviderLLM | _NoOptimizer
    if options.rounds == 0:
        # A baseline-only run never asks the optimizer: it needs no optimizer model or key.
        llm, optimizer_label = _NoOptimizer(), "none (--rounds 0)"
    else:
        llm, resolved = optimizer_llm(
            options.optimizer_model,
            budget,
            models=suite.config.models,
            base_dir=suite.config.base_dir,
            env=env,
            make=optimizer_make,
        )
        optimizer_label = resolved.label
    try:
        settings = OptimizerSettings(
            rounds=options.rounds,
            beam=options.beam,
            edits=options.edits,
            examples=options.examples,
            seed=options.seed,
            # baseline and winner on test, at what a judgement has been seen to cost
            reserve=lambda: 2 * evaluator.cost("test"),
        )
        optimizer = Optimizer(hook.prompt or "", evaluator, llm, budget, settings, log=say)
        result = await optimizer.run()
        outcome = TuneOutcome(
            suite=suite.name,
            event=event,
            index=index,
            split=split,
            candidates=result.candidates,
            baseline=result.baseline,
            winner=result.winner,
            stopped=result.stopped,
            calls=0,
            max_calls=options.max_calls,
            optimizer_model=optimizer_label,
            repeats=repeats,
        )
        if split.test:
            say("measuring the baseline and the winner on the test split (once)")
            for cand in {result.baseline.id: result.baseline, result.winner.id: result.winner}.values():
                ev = await evaluator.evaluate(cand.prompt, "test")
                outcome.test[cand.id] = ev
                cand.scores["test"] = ev.score if ev.complete else None
                cand.metrics["test"] = ev.metrics
            a = outcome.test[result.baseline.id]
            b = outcome.test[result.winner.id]
            if a.complete and b.complete:
                outcome.comparison = compare_paired(_pairs(a, b))
    finally:
        await providers.aclose()
        await llm.aclose()
    outcome.calls = budget.used
    outcome.calls_per_judgement = evaluator.calls_per_judgement()
    write_outputs(outcome, suite, options.out)
    return outcome


class _NoOptimizer:
    """The optimizer of a ``--rounds 0`` run: never asked."""

    async def propose(self, prompt: str) -> str:
        raise TuneError("the optimizer was asked for edits in a run with --rounds 0")

    async def aclose(self) -> None:
        return None


def write_outputs(outcome: TuneOutcome, suite: Suite, out: Path) -> None:
    from judge.tuning.report import render_tune_report

    out.mkdir(parents=True, exist_ok=True)
    winner_id = outcome.winner.id
    with (out / "candidates.jsonl").open("w", encoding="utf-8") as fh:
        for cand in outcome.candidates:
            line = cand.model_dump()
            line["winner"] = cand.id == winner_id
            for metrics in line["metrics"].values():
                metrics.pop("disagreements", None)
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    best = config_with_prompt(suite_config_path(suite), outcome.event, outcome.index, outcome.winner.prompt)
    (out / "best.yaml").write_text(dump_yaml(best), encoding="utf-8")
    (out / "splits.json").write_text(outcome.split.model_dump_json(indent=2) + "\n", encoding="utf-8")
    (out / "report.html").write_text(render_tune_report(outcome), encoding="utf-8")
    (out / "summary.json").write_text(json.dumps(summary(outcome), indent=2) + "\n", encoding="utf-8")
    outcome.files = {name: str(out / name) for name in ("candidates.jsonl", "best.yaml", "report.html")}


def summary(outcome: TuneOutcome) -> dict[str, Any]:
    """The outcome as JSON (``summary.json``)."""
    from judge.tuning.report import headline

    comparison = outcome.comparison
    return {
        "suite": outcome.suite,
        "hook": f"{outcome.event}:{outcome.index}",
        "baseline": outcome.baseline.id,
        "winner": outcome.winner.id,
        "stopped": outcome.stopped,
        "calls": outcome.calls,
        "maxCalls": outcome.max_calls,
        "optimizerModel": outcome.optimizer_model,
        "split": {name: len(outcome.split.ids(name)) for name in ("train", "dev", "test")},
        "scores": {
            "baseline": outcome.baseline.scores,
            "winner": outcome.winner.scores,
        },
        "test": None
        if comparison is None
        else {
            "n": comparison.n,
            "accuracyBaseline": comparison.accuracy_a,
            "accuracyWinner": comparison.accuracy_b,
            "improved": [p.id for p in comparison.improved],
            "regressed": [p.id for p in comparison.regressed],
            "mcnemarP": comparison.p_value,
        },
        "headline": headline(outcome),
    }


# ---------------------------------------------------------------------------
# judge tune --compare A B SUITE


@dataclass
class CompareOutcome:
    suite: str
    a: str
    b: str
    n: int
    comparison: PairedComparison
    metrics: dict[str, dict[str, Any]]
    repeats: int


async def compare_configs(
    a: Config,
    b: Config,
    suite: Suite,
    *,
    names: tuple[str, str] = ("A", "B"),
    repeats: int | None = None,
    concurrency: int = 8,
    judge: PromptJudge | None = None,
) -> CompareOutcome:
    """Judge the suite's labelled cases with both configs; the paired comparison."""
    from judge.tuning.measure import summary_metrics

    cases = labelled_cases(suite)
    if not cases:
        raise TuneError(f"{suite.path}: no labelled cases to compare on")
    k = repeats or suite.repeats
    labels = {c.id: c.label for c in cases}
    evaluated: list[tuple[list[CaseResult], list[ItemOutcome]]] = []
    for config in (a, b):
        results = await run_cases(
            config,
            suite.event,
            cases,
            base_dir=suite.base_dir,
            repeats=k,
            concurrency=concurrency,
            judge=judge,
        )
        require_a_verdict(results, f"{names[len(evaluated)]} on {suite.path}")
        evaluated.append((results, outcomes(results, labels)))
    (ra, ia), (rb, ib) = evaluated
    by_b = {i.id: i for i in ib}
    pairs = [ItemPair(id=i.id, label=i.label, a=i.decision, b=by_b[i.id].decision) for i in ia]
    return CompareOutcome(
        suite=suite.name,
        a=names[0],
        b=names[1],
        n=len(cases),
        comparison=compare_paired(pairs),
        metrics={names[0]: summary_metrics(ra, ia), names[1]: summary_metrics(rb, ib)},
        repeats=k,
    )


__all__ = [
    "CompareOutcome",
    "TuneError",
    "TuneOptions",
    "TuneOutcome",
    "compare_configs",
    "pick_hook",
    "tune",
]
