"""The lines of ``judge eval``'s summary about how far the judge can be trusted: each prompt
hook's calibration record, its samples' agreement, the probes' flips and the corrected
block rate (the sections of :mod:`judge.evaluation.trust` and
:mod:`judge.evaluation.consistency`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _num(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _interval(found: Any) -> str:
    return f" [{found[0]:.3f}, {found[1]:.3f}]" if isinstance(found, list) and len(found) == 2 else ""


def calibration_lines(report: dict[str, Any], out: Path) -> list[str]:
    records = report.get("calibration") or []
    lines = [f"  calibration: {out / 'calibration.json'} ({len(records)} record(s))"] if records else []
    for r in records:
        lines.append(
            f"    {r['place']} ({r['model']}): {r['cases']} cases, kappa {_num(r['kappa'])}, "
            f"block precision {_num(r['blockPrecision'])}, block recall {_num(r['blockRecall'])}"
        )
    return lines


def sample_lines(report: dict[str, Any]) -> list[str]:
    lines = []
    for place, entry in (report.get("samples") or {}).items():
        lines.append(
            f"  samples {place}: k={entry['k']}, flip rate {_num(entry['flipRate'])} "
            f"({entry['flipped']} of {entry['judgements']} judgements had samples disagree), "
            f"mean agreement {_num(entry['meanAgreement'])}"
        )
    return lines


def probe_lines(report: dict[str, Any]) -> list[str]:
    lines = []
    for name, entry in (report.get("probes") or {}).items():
        lines.append(
            f"  probe {name}: flip rate {_num(entry['flipRate'])} ({entry['flips']} of {entry['n']}: "
            f"{entry['blockToAllow']} block->allow, {entry['allowToBlock']} allow->block)"
            + (f", {entry['errors']} error(s)" if entry.get("errors") else "")
        )
    return lines


def corrected_lines(report: dict[str, Any]) -> list[str]:
    found = report.get("correctedBlockRate")
    if not found:
        return []
    if "error" in found:
        return [f"  corrected block rate: not computed: {found['error']}"]
    corrected = (
        f"corrected {_num(found['corrected'])}{_interval(found['ci95'])}"
        if found["corrected"] is not None
        else "no correction (the judge is no better than chance on its calibration)"
    )
    return [
        f"  block rate: raw {_num(found['raw'])}{_interval(found['rawCi95'])} over {found['n']}, "
        f"{corrected} (sensitivity {_num(found['sensitivity'])}, specificity {_num(found['specificity'])})"
    ]


def trust_summary(report: dict[str, Any], out: Path) -> list[str]:
    """Every such line of the summary (none when the run measured none of it)."""
    return (
        calibration_lines(report, out) + sample_lines(report) + probe_lines(report) + corrected_lines(report)
    )
