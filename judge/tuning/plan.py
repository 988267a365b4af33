"""What a ``judge tune`` run is asked to do, checked before anything is spent: the options,
the prompt hook (``EVENT:INDEX``), the labelled cases and their split, the objective and
the optimizer template. :func:`plan_tune` is shared by the run and by ``--estimate``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from judge.config import Hook
from judge.errors import JudgeError
from judge.evaluation.suite import Case, Suite
from judge.tuning.objective import Objective
from judge.tuning.reflection import OptimizerTemplate, load_optimizer_template
from judge.tuning.splits import Split, parse_split, split_items

_HOOK_REF = re.compile(r"^([A-Za-z]+):(\d+)$")
SEARCHES = ("pareto", "beam")


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
    objective: str = "balanced"
    min_block_precision: float | None = None
    min_allow_precision: float | None = None
    optimizer_template: Path | None = None
    max_usd: float | None = None
    #: Few-shot examples per demos edit (0: none).
    demos: int = 4
    search: str = "pareto"
    #: Most merges (None: one per round).
    merges: int | None = None
    #: The judgement cache (``judge eval``'s); None: no cache.
    cache: Path | None = None


@dataclass
class TunePlan:
    event: str
    index: int
    hook: Hook
    cases: list[Case]
    split: Split
    objective: Objective
    template: OptimizerTemplate | None
    repeats: int


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


def labelled_cases(suite: Suite) -> list[Case]:
    return [c for c in suite.cases if c.label is not None]


def _check_numbers(options: TuneOptions) -> None:
    if options.rounds < 0 or options.beam < 1 or options.edits < 1:
        raise TuneError("--rounds must be >= 0 and --beam >= 1")
    if options.concurrency < 1:
        raise TuneError("--concurrency must be at least 1")
    if options.demos < 0 or (options.merges is not None and options.merges < 0):
        raise TuneError("--demos and --merges must not be negative")
    if options.search not in SEARCHES:
        raise TuneError(f"--search must be one of {', '.join(SEARCHES)}, got {options.search!r}")
    if options.max_usd is not None and not options.max_usd > 0:
        raise TuneError(f"--max-usd must be above 0, got {options.max_usd:g}")


def _check_pairs(objective: Objective, split: Split) -> None:
    if objective.name != "pairwise":
        return
    paired = {i for pair in objective.pairs.values() for i in pair}
    for name in ("train", "dev"):
        if not paired & set(split.ids(name)):
            raise TuneError(f"--objective pairwise: the {name} split has no complete pair; label more pairs")


def plan_tune(suite: Suite, options: TuneOptions, say: Callable[[str], None] | None = None) -> TunePlan:
    """Check the options against the suite and split its labelled cases (:class:`TuneError`,
    or a :class:`JudgeError` of the objective or the template, for what cannot run)."""
    note = say or (lambda _m: None)
    event, index, hook = pick_hook(suite, options.hook)
    _check_numbers(options)
    repeats = options.repeats or suite.repeats
    if repeats < 1:
        raise TuneError("--repeats must be at least 1")
    cases = labelled_cases(suite)
    if len(cases) < len(suite.cases):
        note(f"{len(suite.cases) - len(cases)} unlabelled case(s) are left out")
    if not cases:
        raise TuneError(f"{suite.path}: no labelled cases; tuning needs cases with label allow/block")
    objective = Objective.build(
        options.objective, cases, options.min_block_precision, options.min_allow_precision
    )
    template = (
        None if options.optimizer_template is None else load_optimizer_template(options.optimizer_template)
    )
    split = split_items(cases, parse_split(options.split), options.seed)
    for name in ("train", "dev"):
        if not split.ids(name):
            raise TuneError(
                f"the {name} split is empty ({len(cases)} labelled case(s) in "
                f"{len({c.group or c.id for c in cases})} group(s)); label more cases"
            )
    _check_pairs(objective, split)
    return TunePlan(event, index, hook, cases, split, objective, template, repeats)
