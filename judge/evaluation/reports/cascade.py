"""The ``cascade`` section of an eval report: each cascade hook, stage by stage.

For every hook whose ``model`` is a cascade, from the stages each judgement called:

* ``stages[k]``: the stage's model(s), how often it was called (``calls``, ``callRate``),
  its verdicts (allow / block / error), ``costUsd``, latency (``latencyMs`` p50 / mean),
  and for later stages how often it agreed with the stage before (``agreement`` = agreed /
  both had a verdict; ``overrides`` = disagreed);
* ``firstAlone``: what the first (cheap) model alone would have decided - its verdict on
  every judgement - with accuracy against the labels and its cost;
* ``cascade``: the cascade's verdict (the last stage called), accuracy and total cost;
* ``escalated``: the judgements that went past the first stage, with the first and the
  final stage's accuracy on them (does the stronger model fix what the cheap one got wrong?).

Accuracy counts labelled judgements with a verdict (``scored``), as the report's own
accuracy does; an error is not scored. The hook's verdict is scored as if it were the
suite's only hook (true of most suites, where it then equals the report's accuracy).
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Sequence
from typing import Any

from judge.config import STOP_EVENTS
from judge.decision import CascadeStage
from judge.evaluation.runner import CaseResult
from judge.redact import visible_controls


def _verdict(stage: CascadeStage | None, event: str | None) -> str | None:
    """The stage's verdict as the hook reads it: on Stop and SubagentStop a rejection
    without a reason is an approval (the engine's rule), so a model is scored as if it
    were the hook's only one."""
    if stage is None or stage.verdict == "error":
        return None
    if stage.verdict == "block" and not stage.reason and event in STOP_EVENTS:
        return "allow"
    return stage.verdict


def _scored(pairs: Sequence[tuple[str | None, str | None]]) -> dict[str, Any]:
    """Accuracy of (label, verdict) pairs: labelled pairs with a verdict are scored."""
    scored = [(label, verdict) for label, verdict in pairs if label is not None and verdict is not None]
    correct = sum(1 for label, verdict in scored if label == verdict)
    return {"scored": len(scored), "correct": correct, "accuracy": correct / len(scored) if scored else None}


def _cost(stages: Sequence[CascadeStage]) -> float:
    return round(sum(s.cost_usd or 0.0 for s in stages), 8)


def _stage_row(index: int, called: list[tuple[CaseResult, list[CascadeStage]]], n: int) -> dict[str, Any]:
    mine = [stages[index] for _, stages in called]
    durations = [s.duration_ms for s in mine]
    row: dict[str, Any] = {
        "stage": index + 1,
        "models": sorted({s.model for s in mine}),
        "calls": len(mine),
        "callRate": len(mine) / n if n else None,
        "verdicts": {v: sum(1 for s in mine if s.verdict == v) for v in ("allow", "block", "error")},
        "costUsd": _cost(mine),
        "unpriced": sum(1 for s in mine if s.cost_usd is None and s.usage.input_tokens),
        "tokens": {
            "inputTokens": sum(s.usage.input_tokens for s in mine),
            "outputTokens": sum(s.usage.output_tokens for s in mine),
        },
        "latencyMs": {
            "p50": statistics.median(durations) if durations else None,
            "mean": sum(durations) / len(durations) if durations else None,
        },
    }
    if index > 0:
        compared = [s for s in mine if s.agreed is not None]
        agreed = sum(1 for s in compared if s.agreed)
        row["agreement"] = agreed / len(compared) if compared else None
        row["overrides"] = len(compared) - agreed
    return row


def _hook_section(runs: list[tuple[CaseResult, list[CascadeStage]]], event: str | None) -> dict[str, Any]:
    n = len(runs)
    depth = max(len(stages) for _, stages in runs)
    escalated = [(r, stages) for r, stages in runs if len(stages) > 1]
    first_cost = _cost([stages[0] for _, stages in runs])
    total_cost = _cost([s for _, stages in runs for s in stages])
    return {
        "judgements": n,
        "stages": [_stage_row(k, [(r, s) for r, s in runs if len(s) > k], n) for k in range(depth)],
        "firstAlone": {
            **_scored([(r.label, _verdict(stages[0], event)) for r, stages in runs]),
            "costUsd": first_cost,
        },
        "cascade": {
            **_scored([(r.label, _verdict(stages[-1], event)) for r, stages in runs]),
            "costUsd": total_cost,
            "escalationRate": len(escalated) / n if n else None,
        },
        "escalated": {
            "judgements": len(escalated),
            "first": _scored([(r.label, _verdict(stages[0], event)) for r, stages in escalated]),
            "final": _scored([(r.label, _verdict(stages[-1], event)) for r, stages in escalated]),
        },
    }


def cascade_section(results: Sequence[CaseResult], event: str | None = None) -> dict[str, Any] | None:
    """``{hook: section}`` for every cascade hook in ``results`` (None without any)."""
    hooks = sorted({key for r in results for key in r.cascades or {}})
    if not hooks:
        return None
    out: dict[str, Any] = {}
    for hook in hooks:
        runs = [(r, (r.cascades or {})[hook]) for r in results if (r.cascades or {}).get(hook)]
        out[hook] = _hook_section(runs, event)
    return out


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def cascade_summary(report: dict[str, Any]) -> list[str]:
    """The CLI summary's lines about cascades (none without any)."""
    lines: list[str] = []
    for hook, section in (report.get("cascade") or {}).items():
        first, final = section["firstAlone"], section["cascade"]
        lines.append(
            f"  cascade {hook}: first stage alone accuracy {_pct(first['accuracy'])} "
            f"(${first['costUsd']:.4f}), cascade {_pct(final['accuracy'])} (${final['costUsd']:.4f}), "
            f"escalated {_pct(final['escalationRate'])}"
        )
        for row in section["stages"]:
            agreement = f", agreement {_pct(row['agreement'])}" if "agreement" in row else ""
            lines.append(
                f"    stage {row['stage']} {', '.join(row['models'])}: {row['calls']} call(s), "
                f"${row['costUsd']:.4f}, latency p50 {_pct(row['latencyMs']['p50'])} ms{agreement}"
            )
    return lines


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" if isinstance(value, float) else html.escape(visible_controls(str(value)))


def cascade_html(report: dict[str, Any]) -> str:
    """report.html's cascade section: per hook, first stage alone vs the cascade, then each
    stage's calls, cost, latency and agreement ("" without cascades)."""
    parts: list[str] = []
    for hook, section in (report.get("cascade") or {}).items():
        first, final, escalated = section["firstAlone"], section["cascade"], section["escalated"]
        parts.append(
            f"<h3>{html.escape(visible_controls(hook))}</h3><table><tr><th></th><th>accuracy</th><th>scored</th>"
            "<th>cost (USD)</th></tr>"
            f"<tr><td>first stage alone</td><td>{_cell(first['accuracy'])}</td><td>{first['scored']}</td>"
            f"<td>{first['costUsd']:.4f}</td></tr>"
            f"<tr><td>cascade</td><td>{_cell(final['accuracy'])}</td><td>{final['scored']}</td>"
            f"<td>{final['costUsd']:.4f}</td></tr></table>"
            f"<p>Escalated: {escalated['judgements']} of {section['judgements']} judgements; on them the "
            f"first stage scored {_cell(escalated['first']['accuracy'])}, the final "
            f"{_cell(escalated['final']['accuracy'])}.</p>"
        )
        rows = [
            f"<tr><td>{row['stage']}</td><td>{_cell(', '.join(row['models']))}</td><td>{row['calls']}</td>"
            f"<td>{_cell(row['callRate'])}</td><td>{row['verdicts']['allow']} / {row['verdicts']['block']} / "
            f"{row['verdicts']['error']}</td><td>{row['costUsd']:.4f}</td>"
            f"<td>{_cell(row['latencyMs']['p50'])}</td><td>{_cell(row.get('agreement'))}</td>"
            f"<td>{_cell(row.get('overrides'))}</td></tr>"
            for row in section["stages"]
        ]
        parts.append(
            "<table><tr><th>stage</th><th>model</th><th>calls</th><th>call rate</th>"
            "<th>allow / block / error</th><th>cost (USD)</th><th>latency p50 (ms)</th>"
            "<th>agreement</th><th>overrides</th></tr>" + "".join(rows) + "</table>"
        )
    return "<h2>Cascades</h2>" + "".join(parts) if parts else ""
