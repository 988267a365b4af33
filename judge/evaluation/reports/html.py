"""A self-contained HTML report (``report.html``): inline CSS and SVG, no external assets.

Headline metrics with their 95% intervals, the confusion matrix, the disagreements with
the judge's reasons, the final answer and the transcript (collapsible), errors, a
latency histogram and a per-tag table; the calibration, samples, probes and corrected
block rate sections (:mod:`judge.evaluation.reports.trust`). Every piece of recorded content is escaped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judge.evaluation.reports.cascade import cascade_html
from judge.evaluation.reports.junit import said
from judge.evaluation.reports.trust import trust_html
from judge.evaluation.runner import CaseResult
from judge.evaluation.suite import Case, resolve_path
from judge.files import open_regular
from judge.redact import html_text

#: Transcript text embedded per disagreement is capped (the file path is shown too).
TRANSCRIPT_CAP = 100_000
MAX_LISTED = 500

PAGE_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#1d2430;padding:0 1rem}
h1{margin-bottom:.2rem}h2{margin-top:2rem;border-bottom:1px solid #dde3ea;padding-bottom:.3rem}
.sub{color:#5b6675}
.cards{display:flex;flex-wrap:wrap;gap:.8rem}
.card{border:1px solid #dde3ea;border-radius:8px;padding:.7rem 1rem;min-width:9rem;background:#f8fafc}
.card .v{font-size:1.5rem;font-weight:600}.card .k{color:#5b6675;font-size:.85rem}
.card .ci{color:#5b6675;font-size:.8rem}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #dde3ea;padding:.35rem .6rem;
text-align:left;vertical-align:top}
th{background:#f1f4f8}.num{text-align:right;font-variant-numeric:tabular-nums}
.cm td{text-align:center;min-width:6rem}.good{background:#e6f4ea}.bad{background:#fce8e6}
.allow{color:#137333;font-weight:600}.block{color:#b3261e;font-weight:600}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:.6rem;border-radius:6px;
max-height:30rem;overflow:auto;font-size:.85rem}
details{margin:.3rem 0}summary{cursor:pointer;color:#1a56c4}
.item{border:1px solid #dde3ea;border-radius:8px;padding:.6rem 1rem;margin:.7rem 0}
"""

_HEADLINE = (
    ("accuracy", "accuracy"),
    ("balancedAccuracy", "balanced accuracy"),
    ("precision", "precision"),
    ("recall", "recall"),
    ("f1", "F1"),
    ("cohenKappa", "Cohen's kappa"),
    ("falseBlockRate", "false block rate"),
    ("falsePassRate", "false pass rate"),
    ("allowRate", "allow rate"),
    ("errorRate", "error rate"),
    ("flipRate", "flip rate"),
    ("impossibleRate", "impossible rate"),
)


def _e(value: Any) -> str:
    return html_text(value)


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _cards(report: dict[str, Any]) -> str:
    ci = report.get("ci95", {})
    out = []
    for key, title in _HEADLINE:
        if key not in report:
            continue
        interval = ci.get(key)
        ci_text = f"95% CI {interval[0]:.3f}–{interval[1]:.3f}" if interval else "&nbsp;"
        out.append(
            f'<div class="card"><div class="k">{_e(title)}</div><div class="v">{_e(_fmt(report[key]))}</div>'
            f'<div class="ci">{ci_text}</div></div>'
        )
    return '<div class="cards">' + "".join(out) + "</div>"


def _outcomes(report: dict[str, Any]) -> str:
    """How the stops ended (Stop suites): one row per outcome seen."""
    outcomes = report.get("outcomes") or {}
    if not outcomes:
        return ""
    rows = "".join(f"<tr><td>{_e(name)}</td><td class=num>{n}</td></tr>" for name, n in outcomes.items())
    return (
        "<h2>Stop outcomes</h2><table><tr><th>outcome</th><th>judgements</th></tr>" + rows + "</table>"
        "<p class=sub>forced and impossible are scored as the block they are: "
        "the work was not done.</p>"
    )


def _confusion(report: dict[str, Any]) -> str:
    cm = report.get("confusion")
    if not cm:
        return "<p>No labelled cases: agreement metrics need labels.</p>"
    return (
        '<table class="cm"><tr><th></th><th>judge: block</th><th>judge: allow</th></tr>'
        f'<tr><th>label: block</th><td class="good">TP {cm["tp"]}</td><td class="bad">FN {cm["fn"]}</td></tr>'
        f'<tr><th>label: allow</th><td class="bad">FP {cm["fp"]}</td><td class="good">TN {cm["tn"]}</td></tr>'
        "</table><p class=sub>block is the positive class; "
        f"{report.get('scored', 0)} scored judgements (labelled, decided, no error).</p>"
    )


def _histogram(durations: list[float], width: int = 640, height: int = 160, bins: int = 20) -> str:
    if not durations:
        return "<p>No judgements.</p>"
    lo, hi = min(durations), max(durations)
    span = hi - lo or 1.0
    counts = [0] * bins
    for d in durations:
        counts[min(int((d - lo) / span * bins), bins - 1)] += 1
    top = max(counts)
    bar_w = width / bins
    bars = []
    for i, c in enumerate(counts):
        h = 0 if top == 0 else (height - 20) * c / top
        x = i * bar_w
        start = lo + span * i / bins
        bars.append(
            f'<rect x="{x + 1:.1f}" y="{height - 20 - h:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
            f'fill="#4f7cc9"><title>{start:.1f} ms: {c}</title></rect>'
        )
    labels = (
        f'<text x="0" y="{height - 4}" font-size="11">{lo:.1f} ms</text>'
        f'<text x="{width}" y="{height - 4}" font-size="11" text-anchor="end">{hi:.1f} ms</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="latency histogram">'
        + "".join(bars)
        + labels
        + "</svg>"
    )


def _transcript_text(case: Case | None, base_dir: Path) -> tuple[str | None, str | None]:
    """(text, where) of a case's transcript, capped."""
    if case is None:
        return None, None
    if case.transcript is not None:
        return case.transcript[:TRANSCRIPT_CAP], "inline"
    raw = case.transcript_path or case.context.get("execution_summary")
    if not isinstance(raw, str) or not raw:
        return None, None
    path = resolve_path(base_dir, raw)
    try:
        with open_regular(path, "transcript") as fh:
            text = fh.read(4 * TRANSCRIPT_CAP + 4).decode("utf-8", "replace")[: TRANSCRIPT_CAP + 1]
    except (OSError, ValueError):  # unreadable, or not a path at all (a NUL byte)
        return None, raw
    if len(text) > TRANSCRIPT_CAP:
        text = text[:TRANSCRIPT_CAP] + f"\n… (truncated; the whole transcript is in {raw})"
    return text, raw


def _item(r: CaseResult, case: Case | None, base_dir: Path, kind: str) -> str:
    parts = [f'<div class="item"><b>{_e(r.id)}</b>']
    if r.repeat:
        parts.append(f" (repeat {r.repeat})")
    if r.group:
        parts.append(f' <span class="sub">group {_e(r.group)}</span>')
    if kind == "blocked":
        parts.append(f"<p><b>Judge's reason:</b> {_e(r.reason)}</p>")
    elif kind == "disagreement":
        parts.append(
            f' — label <span class="{_e(r.label)}">{_e(r.label)}</span>, '
            f'judge <span class="{_e(r.verdict)}">{_e(said(r))}</span>'
        )
        parts.append(f"<p><b>Judge's reason:</b> {_e(r.reason) or '<i>none given</i>'}</p>")
    else:
        parts.append(f"<p><b>Error:</b> {_e(r.error)}</p>")
    final = case.context.get("final_output") if case is not None else None
    if isinstance(final, str) and final:
        parts.append(f"<details><summary>final answer</summary><pre>{_e(final)}</pre></details>")
    text, where = _transcript_text(case, base_dir)
    if text is not None:
        parts.append(f"<details><summary>transcript ({_e(where)})</summary><pre>{_e(text)}</pre></details>")
    elif where:
        parts.append(f'<p class="sub">transcript: {_e(where)} (unreadable)</p>')
    parts.append("</div>")
    return "".join(parts)


def _tags(report: dict[str, Any]) -> str:
    by_tag = report.get("byTag") or {}
    if not by_tag:
        return ""
    rows = []
    for tag, m in by_tag.items():
        rows.append(
            f"<tr><td>{_e(tag)}</td><td class=num>{m['n']}</td><td class=num>{m['errors']}</td>"
            f"<td class=num>{_fmt(m.get('allowRate'))}</td><td class=num>{_fmt(m.get('accuracy'))}</td>"
            f"<td class=num>{_fmt(m.get('precision'))}</td><td class=num>{_fmt(m.get('recall'))}</td></tr>"
        )
    return (
        "<h2>By tag</h2><table><tr><th>tag</th><th>n</th><th>errors</th><th>allow rate</th>"
        "<th>accuracy</th><th>precision</th><th>recall</th></tr>" + "".join(rows) + "</table>"
    )


def _error_groups(report: dict[str, Any]) -> str:
    groups = report.get("errorGroups") or []
    if not groups:
        return ""
    rows = [
        f"<tr><td class=num>{g['count']}</td><td>{_e(g['message'])}</td>"
        f"<td>{_e(', '.join(g['examples']))}{' …' if g['count'] > len(g['examples']) else ''}</td></tr>"
        for g in groups
    ]
    return (
        f"<h3>Errors by message ({len(groups)} kind(s))</h3><table><tr><th>count</th><th>message</th>"
        "<th>examples (case#repeat)</th></tr>" + "".join(rows) + "</table>"
    )


def render_html(report: dict[str, Any], results: list[CaseResult], cases: list[Case], base_dir: Path) -> str:
    """The whole report page."""
    by_id = {c.id: c for c in cases}
    latency = report.get("latencyMs", {})
    tokens = report.get("tokens", {})
    disagreements = [
        r for r in results if r.label is not None and r.error is None and r.verdict not in (None, r.label)
    ]
    errors = [r for r in results if r.error is not None]
    blocked = [r for r in results if r.label is None and r.error is None and r.verdict == "block"]
    body = [
        f"<h1>Eval report: {_e(report.get('name') or 'suite')}</h1>",
        f'<p class="sub">{report["n"]} judgements over {report.get("cases", 0)} cases × '
        f"{report.get('repeats', 1)} repeat(s) · {report['errors']} error(s) · "
        f"{report.get('cachedResults', 0)} served from cache · tokens {tokens.get('inputTokens', 0)} in / "
        f"{tokens.get('outputTokens', 0)} out · cost ${report.get('costUsd', 0):.4f}"
        + (
            f" ({report['unpricedJudgements']} without a known price)"
            if report.get("unpricedJudgements")
            else ""
        )
        + f" · latency p50 {_fmt(latency.get('p50'))} ms, "
        f"p90 {_fmt(latency.get('p90'))} ms, p99 {_fmt(latency.get('p99'))} ms</p>",
        "<h2>Headline</h2>",
        _cards(report),
        _outcomes(report),
        "<h2>Confusion matrix</h2>",
        _confusion(report),
        cascade_html(report),
        trust_html(report),
        f"<h2>Disagreements ({len(disagreements)})</h2>",
    ]
    if not disagreements:
        body.append("<p>None.</p>" if report.get("labelled") else "<p>No labelled cases.</p>")
    for r in disagreements[:MAX_LISTED]:
        body.append(_item(r, by_id.get(r.id), base_dir, "disagreement"))
    if len(disagreements) > MAX_LISTED:
        body.append(f"<p>… and {len(disagreements) - MAX_LISTED} more (see results.jsonl).</p>")
    if blocked:
        body.append(f"<h2>Blocked, unlabelled ({len(blocked)})</h2>")
        for r in blocked[:MAX_LISTED]:
            body.append(_item(r, by_id.get(r.id), base_dir, "blocked"))
    body.append(f"<h2>Errors ({len(errors)})</h2>")
    if not errors:
        body.append("<p>None.</p>")
    body.append(_error_groups(report))
    for r in errors[:MAX_LISTED]:
        body.append(_item(r, by_id.get(r.id), base_dir, "error"))
    body.append("<h2>Latency</h2>")
    body.append(_histogram([r.duration_ms for r in results]))
    body.append(_tags(report))
    title = _e(f"judge eval: {report.get('name') or 'suite'}")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title><style>{PAGE_CSS}</style></head><body>" + "\n".join(body) + "</body></html>\n"
    )


def write_html(
    report: dict[str, Any], results: list[CaseResult], cases: list[Case], base_dir: Path, path: str | Path
) -> None:
    Path(path).write_text(
        render_html(report, results, cases, base_dir), encoding="utf-8", errors="backslashreplace"
    )
