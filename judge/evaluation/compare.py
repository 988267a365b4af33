"""Several variants of one suite side by side (``judge eval --model A --model B [--config C ...]``),
as a library call: :func:`run_comparison` returns a :class:`ComparisonOutcome`.

Each variant (:mod:`judge.evaluation.variants`) is an ordinary run
(:func:`judge.evaluation.run.run_eval`) into ``DIR/<slug>/`` (results.jsonl, report.json,
junit.xml, report.html, run.json: the same files, cache and ``--resume`` as a single run);
then ``DIR/comparison.json`` (:mod:`judge.evaluation.reports.comparison`) and
``DIR/comparison.html`` are written. The comparison stops at a variant that could not
complete (``--resume`` continues); each bound applies to each variant.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from judge.errors import SuiteError
from judge.evaluation.bounds import check_bounds
from judge.evaluation.metrics import compute_metrics, rounded
from judge.evaluation.reports.comparison import build_comparison
from judge.evaluation.reports.comparison_html import write_comparison_html
from judge.evaluation.run import EvalOutcome, EvalSettings, run_eval
from judge.evaluation.runner import CaseResult, order_results, pairs, read_results
from judge.evaluation.suite import Suite
from judge.evaluation.variants import Variant, load_variant_suite


@dataclass
class ComparisonOutcome:
    """``problems``: the comparison could not complete (exit 2); else ``report`` is
    comparison.json's content, ``all_errored`` names variants that measured nothing and
    ``failed`` the violated bounds (``[variant] message``)."""

    problems: list[str] = field(default_factory=list)
    report: dict[str, Any] | None = None
    all_errored: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def _load_all(suite_path: str, variants: list[Variant]) -> list[Suite]:
    """Every variant's suite, before anything is judged (SuiteError naming the variant)."""
    suites = []
    for variant in variants:
        try:
            suites.append(load_variant_suite(suite_path, variant))
        except SuiteError as exc:
            raise SuiteError(
                [f"cannot load suite {suite_path} for variant {variant.name}:", *exc.problems]
            ) from None
    return suites


def variant_settings(settings: EvalSettings, variant: Variant, variants: int = 1) -> EvalSettings:
    """The settings of the ordinary run of one variant (bounds are checked per variant here;
    with ``--max-usd`` each of the ``variants`` gets an equal share, so the whole stays in it)."""
    return dataclasses.replace(
        settings,
        out=settings.out / variant.slug,
        variant=variant,
        bounds=[],
        cache=settings.cache_path(),  # shared with single runs next to DIR
        max_usd=None if settings.max_usd is None else settings.max_usd / variants,
    )


def run_comparison(
    settings: EvalSettings,
    variants: list[Variant],
    before: Callable[[int, Variant], None] = lambda number, variant: None,
    after: Callable[[EvalOutcome], None] = lambda outcome: None,
) -> ComparisonOutcome:
    """Run every variant and compare them; ``before``/``after`` are told of each run."""
    outcome = ComparisonOutcome()
    if settings.recorded:
        outcome.problems = [
            "judge eval: --recorded scores the recorded verdicts; it cannot be combined with several variants"
        ]
        return outcome
    try:
        suites = _load_all(settings.suite, variants)
    except SuiteError as exc:
        outcome.problems = [f"judge eval: {exc.problems[0]}", *(f"  {p}" for p in exc.problems[1:])]
        return outcome
    results: list[list[CaseResult]] = []
    metrics: list[dict[str, Any]] = []
    for number, (variant, suite) in enumerate(zip(variants, suites, strict=True), start=1):
        before(number, variant)
        sub = variant_settings(settings, variant, len(variants))
        ran = run_eval(sub)
        after(ran)
        repeats = settings.repeats if settings.repeats is not None else suite.repeats
        done = order_results(read_results(sub.out / "results.jsonl"), suite.cases, repeats)
        if len(done) < len(pairs(suite.cases, repeats)):
            if not ran.problems:  # not expected: an ordinary run that ended says why when it is incomplete
                outcome.problems.append(
                    f"judge eval: variant {variant.name} left results missing in {sub.out}"
                )
            outcome.problems.append(
                f"judge eval: the comparison stopped at variant {variant.name}; {number - 1} of "
                f"{len(variants)} variant(s) are complete; run the same command with --resume to finish"
            )
            return outcome
        if ran.problems or ran.nothing_judged is not None:
            outcome.all_errored.append(variant.name)
        results.append(done)
        metrics.append(compute_metrics(done, name=f"{suite.name} [{variant.name}]", event=suite.event))
    suite = suites[0]
    repeats = settings.repeats if settings.repeats is not None else suite.repeats
    comparison = build_comparison(suite.name, suite.cases, repeats, variants, metrics, results)
    outcome.report = rounded(comparison)
    (settings.out / "comparison.json").write_text(
        json.dumps(outcome.report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    write_comparison_html(outcome.report, suite.cases, settings.out / "comparison.html")
    outcome.failed = [
        f"[{variant.name}] {message}"
        for variant, exact in zip(variants, metrics, strict=True)
        for message in check_bounds(exact, settings.bounds)
    ]
    return outcome
