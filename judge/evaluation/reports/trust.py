"""report.html's sections on how far the judge can be trusted: each prompt hook's
calibration record, its samples' agreement (with every judgement whose samples
disagreed), the probes (with every flipped case: its id, the verdict before and after,
and the reason given after) and the corrected block rate. Every value is escaped."""

from __future__ import annotations

from typing import Any

from judge.redact import html_text

#: Flipped cases or disagreeing judgements listed per probe or hook.
MAX_LISTED = 200


def _e(value: Any) -> str:
    return html_text(value)


def _n(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}" if isinstance(value, float) else _e(value)


def _calibration(report: dict[str, Any]) -> str:
    records = report.get("calibration") or []
    if not records:
        return ""
    rows = "".join(
        f"<tr><td>{_e(r['place'])}</td><td>{_e(r['model'])}</td><td class=num>{r['cases']}</td>"
        f"<td class=num>{_n(r['kappa'])}</td><td class=num>{_n(r['blockPrecision'])}</td>"
        f"<td class=num>{_n(r['blockRecall'])}</td><td class=num>{_n(r['allowRecall'])}</td></tr>"
        for r in records
    )
    return (
        "<h2>Calibration</h2><p class=sub>Each prompt hook's own verdicts against the labels, as "
        "written to calibration.json (a hook's <code>calibration:</code> block enforces only while "
        "its record meets the floors).</p><table><tr><th>hook</th><th>model</th><th>cases</th>"
        "<th>kappa</th><th>block precision</th><th>block recall</th><th>allow recall</th></tr>"
        + rows
        + "</table>"
    )


def _samples(report: dict[str, Any]) -> str:
    parts = []
    for place, entry in (report.get("samples") or {}).items():
        rows = "".join(
            f"<tr><td>{_e(c['id'])}#{c['repeat']}</td><td class=num>{_n(c['agreement'])}</td>"
            f"<td>{_e(', '.join(c['verdicts']))}</td></tr>"
            for c in entry["byCase"][:MAX_LISTED]
        )
        parts.append(
            f"<h3>{_e(place)}: k = {entry['k']}</h3><p>Flip rate {_n(entry['flipRate'])} "
            f"({entry['flipped']} of {entry['judgements']} judgements had samples that disagree); "
            f"mean agreement {_n(entry['meanAgreement'])}.</p>"
            + (
                "<table><tr><th>case#repeat</th><th>agreement</th><th>samples</th></tr>" + rows + "</table>"
                if rows
                else "<p>Every judgement's samples agreed.</p>"
            )
        )
    return "<h2>Samples</h2>" + "".join(parts) if parts else ""


def _probes(report: dict[str, Any]) -> str:
    probes = report.get("probes") or {}
    if not probes:
        return ""
    summary = "".join(
        f"<tr><td>{_e(name)}</td><td class=num>{e['n']}</td><td class=num>{e['flips']}</td>"
        f"<td class=num>{_n(e['flipRate'])}</td><td class=num>{e['blockToAllow']}</td>"
        f"<td class=num>{e['allowToBlock']}</td><td class=num>{e['unchanged']}</td>"
        f"<td class=num>{e['errors']}</td></tr>"
        for name, e in probes.items()
    )
    parts = [
        "<h2>Probes</h2><p class=sub>Every case judged again with its input perturbed; a flip is "
        "a verdict that changed. Compare with the flip rate over repeats (what chance alone flips).</p>"
        "<table><tr><th>probe</th><th>compared</th><th>flips</th><th>flip rate</th>"
        "<th>block→allow</th><th>allow→block</th><th>unchanged</th><th>errors</th></tr>"
        + summary
        + "</table>"
    ]
    for name, entry in probes.items():
        flipped = entry.get("flipped") or []
        if not flipped:
            continue
        rows = "".join(
            f"<tr><td>{_e(f['id'])}#{f['repeat']}</td><td class={_e(f['from'])}>{_e(f['from'])}</td>"
            f"<td class={_e(f['to'])}>{_e(f['to'])}</td><td>{_e(f.get('reason'))}</td></tr>"
            for f in flipped[:MAX_LISTED]
        )
        more = f"<p>… and {len(flipped) - MAX_LISTED} more.</p>" if len(flipped) > MAX_LISTED else ""
        parts.append(
            f"<h3>Flipped by {_e(name)} ({len(flipped)})</h3><table><tr><th>case#repeat</th>"
            "<th>before</th><th>after</th><th>reason after</th></tr>" + rows + "</table>" + more
        )
    return "".join(parts)


def _corrected(report: dict[str, Any]) -> str:
    found = report.get("correctedBlockRate")
    if not found:
        return ""
    if "error" in found:
        return f"<h2>Corrected block rate</h2><p>Not computed: {_e(found['error'])}</p>"
    ci = found.get("ci95")
    interval = f" [{_n(ci[0])}, {_n(ci[1])}]" if ci else ""
    raw_ci = found["rawCi95"]
    return (
        "<h2>Corrected block rate</h2>"
        f"<p>Raw block rate {_n(found['raw'])} [{_n(raw_ci[0])}, {_n(raw_ci[1])}] over {found['n']} "
        f"recorded verdicts; corrected for the judge's measured error (sensitivity "
        f"{_n(found['sensitivity'])}, specificity {_n(found['specificity'])}, from {_e(found['file'])}): "
        f"<b>{_n(found['corrected'])}</b>{interval} ({_e(found['method'])}).</p>"
    )


def trust_html(report: dict[str, Any]) -> str:
    """The sections ("" when the run measured none of it)."""
    return _calibration(report) + _samples(report) + _probes(report) + _corrected(report)
