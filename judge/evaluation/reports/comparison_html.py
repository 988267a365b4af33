"""``comparison.html``: the variants of one suite side by side, self-contained (inline CSS).

The variant table (each row links to the variant's own ``report.html``), the pairwise
McNemar tests, and the cases the variants decide differently with each one's decision
and reason beside the label. Every piece of recorded content is escaped.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from judge.evaluation.reports.html import PAGE_CSS
from judge.evaluation.suite import Case
from judge.redact import visible_controls

#: Disagreements shown on the page (comparison.json lists them all).
MAX_LISTED = 500

_CSS = (
    PAGE_CSS
    + """
.best{font-weight:700}.why{color:#5b6675;font-size:.85rem;margin-top:.2rem}
.split,.error{color:#8a5a00;font-weight:600}td.good{background:#e6f4ea}td.bad{background:#fce8e6}
"""
)


def _e(value: Any) -> str:
    return html.escape(visible_controls("" if value is None else str(value)), quote=True)


def _num(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _with_ci(row: dict[str, Any], key: str, best: float | None = None) -> str:
    value = row.get(key)
    interval = row["ci95"].get(key)
    text = _num(value)
    if best is not None and value is not None and value == best:
        text = f'<span class="best">{text}</span>'
    if interval:
        text += f'<div class="why">{interval[0]:.3f}–{interval[1]:.3f}</div>'
    return f"<td class=num>{text}</td>"


def _variants(report: dict[str, Any]) -> str:
    rows = report["variants"]
    accuracies = [r["accuracy"] for r in rows if r["accuracy"] is not None]
    best = max(accuracies) if accuracies else None
    out = [
        "<table><tr><th>variant</th><th>n</th><th>accuracy</th><th>Cohen's κ</th><th>F1</th>"
        "<th>precision</th><th>recall</th><th>error rate</th><th>allow rate</th><th>p50 ms</th>"
        "<th>p95 ms</th><th>tokens in / out</th><th>cost $</th></tr>"
    ]
    for r in rows:
        where = f"{r['slug']}/report.html"
        out.append(
            f'<tr><td><a href="{_e(where)}">{_e(r["name"])}</a></td><td class=num>{r["n"]}</td>'
            + _with_ci(r, "accuracy", best)
            + f"<td class=num>{_num(r['cohenKappa'])}</td><td class=num>{_num(r['f1'])}</td>"
            + _with_ci(r, "precision")
            + _with_ci(r, "recall")
            + _with_ci(r, "errorRate")
            + f"<td class=num>{_num(r['allowRate'])}</td>"
            f"<td class=num>{_num(r['latencyMs']['p50'], 1)}</td>"
            f"<td class=num>{_num(r['latencyMs']['p95'], 1)}</td>"
            f"<td class=num>{r['tokens']['inputTokens']} / {r['tokens']['outputTokens']}</td>"
            f"<td class=num>{r['costUsd']:.4f}</td></tr>"
        )
    out.append("</table>")
    out.append(
        '<p class="sub">block is the positive class; intervals are 95% Wilson score intervals; '
        "accuracy, κ, F1, precision and recall over each variant's labelled, decided, "
        "error-free judgements.</p>"
    )
    return "".join(out)


def _pairs(report: dict[str, Any]) -> str:
    if report["mcnemarOmitted"]:
        note = f"<p>McNemar tests omitted: {_e(report['mcnemarOmitted'])}.</p>"
    else:
        note = (
            f'<p class="sub">{_e(report["test"])}, over the labelled cases both variants decided (each '
            "case once: the majority of its repeats). Holm adjusts the exact p-value for testing "
            "every pair.</p>"
        )
    rows = [
        "<table><tr><th>A</th><th>B</th><th>agreement</th><th>paired cases</th><th>only A right</th>"
        "<th>only B right</th><th>accuracy A / B</th><th>p (exact)</th><th>mid-p</th><th>p (Holm)</th></tr>"
    ]
    for p in report["pairs"]:
        head = (
            f"<tr><td>{_e(p['a'])}</td><td>{_e(p['b'])}</td>"
            f"<td class=num>{p['agreed']} of {p['decided']} ({_num(p['agreement'])})</td>"
        )
        test = p["mcnemar"]
        if test is None:
            rows.append(head + f'<td colspan="7">{_e(p["mcnemarOmitted"])}</td></tr>')
            continue
        rows.append(
            head + f"<td class=num>{test['paired']}</td><td class=num>{test['aOnlyCorrect']}</td>"
            f"<td class=num>{test['bOnlyCorrect']}</td>"
            f"<td class=num>{_num(test['aAccuracy'])} / {_num(test['bAccuracy'])}</td>"
            f"<td class=num>{test['pValue']:.4g}</td><td class=num>{test['midPValue']:.4g}</td>"
            f"<td class=num>{test['pValueHolm']:.4g}</td></tr>"
        )
    return note + "".join(rows) + "</table>"


def _disagreements(report: dict[str, Any], cases: list[Case]) -> str:
    items = report["disagreements"]
    if not items:
        return "<p>None: every variant decided every case the same way.</p>"
    by_id = {c.id: c for c in cases}
    names = [v["name"] for v in report["variants"]]
    out = ["<table><tr><th>case</th><th>label</th>" + "".join(f"<th>{_e(n)}</th>" for n in names) + "</tr>"]
    for item in items[:MAX_LISTED]:
        label = item["label"]
        case = by_id.get(item["id"])
        final = case.context.get("final_output") if case is not None else None
        answer = (
            f"<details><summary>final answer</summary><pre>{_e(final)}</pre></details>"
            if isinstance(final, str) and final
            else ""
        )
        cells = [
            f"<td><b>{_e(item['id'])}</b>{answer}</td>",
            f'<td class="{_e(label)}">{_e(label or "—")}</td>',
        ]
        for d in item["decisions"]:
            decision = d["decision"]
            mark = "" if label is None else (' class="good"' if decision == label else ' class="bad"')
            cells.append(
                f'<td{mark}><span class="{_e(decision)}">{_e(decision)}</span>'
                f'<div class="why">{_e(d["reason"])}</div></td>'
            )
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    if len(items) > MAX_LISTED:
        out.append(f"<p>… and {len(items) - MAX_LISTED} more (see comparison.json).</p>")
    return "".join(out)


def render_comparison_html(report: dict[str, Any], cases: list[Case]) -> str:
    """The whole page for a rounded ``comparison.json`` object."""
    title = f"Comparison: {report['name']}"
    body = [
        f"<h1>{_e(title)}</h1>",
        f'<p class="sub">{len(report["variants"])} variants · {report["cases"]} cases × {report["repeats"]} '
        f"repeat(s) · {report['labelled']} labelled</p>",
        "<h2>Variants</h2>",
        _variants(report),
        "<h2>Paired tests</h2>",
        _pairs(report),
        f"<h2>Cases decided differently ({len(report['disagreements'])})</h2>",
        _disagreements(report, cases),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e('judge eval: ' + title)}</title><style>{_CSS}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )


def write_comparison_html(report: dict[str, Any], cases: list[Case], path: Path) -> None:
    path.write_text(render_comparison_html(report, cases), encoding="utf-8", errors="backslashreplace")
