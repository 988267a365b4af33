"""``judge eval SUITE --out DIR --model A --model B [--config C ...]``: variants side by side
(:func:`judge.evaluation.compare.run_comparison`), each variant's summary and the table printed.

Exit codes: 2 when a variant could not complete (the comparison stops there; ``--resume``
continues) or when every judgement of some variant errored (the comparison is still
written); 1 when a ``--fail-under`` / ``--fail-over`` bound is violated by any variant
(each bound applies to each variant); else 0.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from judge.evaluation.compare import run_comparison, variant_settings
from judge.evaluation.run import EvalOutcome, EvalSettings
from judge.evaluation.variants import Variant


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def compare_main(settings: EvalSettings, variants: list[Variant], as_json: bool = False) -> int:
    """Run every variant and compare them (exit codes: module docstring); ``as_json``:
    comparison.json's content and the exit code on stdout instead of the table."""
    code = _compare(settings, variants)
    if as_json:
        from judge.cli.report_view import print_json

        path = settings.out / "comparison.json"
        report = json.loads(path.read_text(encoding="utf-8")) if code != 2 and path.is_file() else None
        print_json({"exitCode": code, "out": str(settings.out), "comparison": report})
    return code


def _compare(settings: EvalSettings, variants: list[Variant]) -> int:
    from judge.cli.eval import print_outcome

    def before(number: int, variant: Variant) -> None:
        if not settings.quiet:
            folder = settings.out / variant.slug
            print(f"== variant {number}/{len(variants)}: {variant.name} -> {folder}", flush=True)

    def after(outcome: EvalOutcome) -> None:
        print_outcome(outcome, variant_settings(settings, variants[0]))

    outcome = run_comparison(settings, variants, before, after)
    for line in outcome.problems:
        _err(line)
    if outcome.problems or outcome.report is None:
        return 2
    if not settings.quiet:
        print(comparison_table(outcome.report, settings.out))
    if outcome.all_errored:
        _err(
            f"judge eval: every judgement of {', '.join(outcome.all_errored)} errored: "
            "the comparison measured nothing there"
        )
        return 2
    for line in outcome.failed:
        _err(f"FAIL {line}")
    return 1 if outcome.failed else 0


def _num(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _ci(row: dict[str, Any], key: str) -> str:
    interval = row["ci95"].get(key)
    value = _num(row.get(key))
    return value if not interval else f"{value} [{interval[0]:.2f}, {interval[1]:.2f}]"


def comparison_table(report: dict[str, Any], out: Path) -> str:
    """The comparison as plain text: the variant table, the pairwise tests, the files."""
    header = [
        "variant",
        "accuracy [95% CI]",
        "kappa",
        "F1",
        "precision",
        "recall",
        "errors",
        "p50 ms",
        "p95 ms",
        "tokens in/out",
        "cost $",
    ]
    rows = [header]
    for v in report["variants"]:
        rows.append(
            [
                v["name"],
                _ci(v, "accuracy"),
                _num(v["cohenKappa"]),
                _num(v["f1"]),
                _ci(v, "precision"),
                _ci(v, "recall"),
                f"{v['errors']}/{v['n']}",
                _num(v["latencyMs"]["p50"], 0),
                _num(v["latencyMs"]["p95"], 0),
                f"{v['tokens']['inputTokens']}/{v['tokens']['outputTokens']}",
                _num(v["costUsd"], 4),
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = [
        f"comparison of {len(report['variants'])} variants on {report['name']} "
        f"({report['cases']} cases, {report['labelled']} labelled)"
    ]
    lines += [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    if report["mcnemarOmitted"]:
        lines.append(f"  McNemar tests omitted: {report['mcnemarOmitted']}")
    for p in report["pairs"]:
        test = p["mcnemar"]
        agreement = f"agree on {p['agreed']} of {p['decided']} cases both decided"
        if test is None:
            detail = f"no test: {p['mcnemarOmitted']}" if not report["mcnemarOmitted"] else ""
        else:
            detail = (
                f"only A right {test['aOnlyCorrect']}, only B right {test['bOnlyCorrect']}, "
                f"p = {test['pValue']:.4g} (mid-p {test['midPValue']:.4g}, Holm {test['pValueHolm']:.4g})"
            )
        lines.append(f"  {p['a']} (A) vs {p['b']} (B): {agreement}" + (f"; {detail}" if detail else ""))
    lines.append(f"  {len(report['disagreements'])} case(s) decided differently")
    lines.append(f"  comparison: {out / 'comparison.html'}, {out / 'comparison.json'}")
    return "\n".join(lines)
