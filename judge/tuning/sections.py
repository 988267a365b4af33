"""HTML pieces of the ``judge tune`` report that show how the search went: the Pareto
frontier of dev, the winner's lineage (the train mistakes and the people's rationales
each edit was made from, the few-shot demos it carries), and every candidate tried.
None of it is evidence of improvement: that is the test section's
(:mod:`judge.tuning.report`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judge.redact import html_text
from judge.tuning.candidates import Candidate


def esc(value: Any) -> str:
    return html_text(value)


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def origin(cand: Candidate) -> str:
    """How a candidate was made, in a few words."""
    if cand.kind == "merge" and cand.merge_of:
        return "merge of " + " + ".join(cand.merge_of)
    if cand.kind == "baseline":
        return "the hook's prompt"
    return f"{cand.kind} of {cand.parent}"


def _cost(cand: Candidate) -> str:
    metrics = cand.metrics.get("dev", {})
    usd, tokens = metrics.get("usdPerJudgement"), metrics.get("tokensPerJudgement")
    if usd:
        return f"${usd:.5f}"
    return "" if tokens is None else f"{tokens:.0f} tokens"


def frontier_html(candidates: Sequence[Candidate], winner: Candidate) -> str:
    """The final Pareto frontier: each member and the dev units it is among the best on."""
    members = [c for c in candidates if c.frontier]
    if not members:
        return "<p class='note'>No prompt got any dev unit right.</p>"
    rows = [
        [
            c.id + (" (winner)" if c.id == winner.id else ""),
            origin(c),
            pct(c.scores.get("train")),
            pct(c.scores.get("dev")),
            len(c.best_on),
            ", ".join(c.best_on[:12]) + (" ..." if len(c.best_on) > 12 else ""),
        ]
        for c in members
    ]
    return (
        "<p class='note'>Every measured prompt that is among the best on some dev unit not better "
        "covered by the others; parents were drawn from it, weighted by the units each is best on.</p>"
        + table(["prompt", "made by", "train", "dev", "dev units best on", "units"], rows)
    )


def _lineage(winner: Candidate, by_id: Mapping[str, Candidate]) -> list[Candidate]:
    line, current = [], winner
    while True:
        line.append(current)
        if current.parent is None or current.parent not in by_id:
            return list(reversed(line))
        current = by_id[current.parent]


def lineage_html(candidates: Sequence[Candidate], winner: Candidate, rationales: Mapping[str, str]) -> str:
    """How the winner came about: per step, the train mistakes (with the people's
    rationales) the optimizer was shown, or the train cases given as demos."""
    by_id = {c.id: c for c in candidates}
    rows = []
    for cand in _lineage(winner, by_id)[1:]:
        used = cand.shown if cand.kind == "edit" else cand.demos
        what = "shown to the optimizer" if cand.kind == "edit" else "few-shot demos"
        for item in used or [""]:
            rows.append([cand.id, origin(cand), what if item else "", item, rationales.get(item, "")])
    if not rows:
        return "<p class='note'>The winner is the baseline.</p>"
    return table(["step", "made by", "train case used as", "case", "people's rationale"], rows)


def candidates_html(candidates: Sequence[Candidate]) -> str:
    rows = [
        [
            c.id,
            c.round,
            origin(c),
            c.status + (" (frontier)" if c.frontier else ""),
            pct(c.scores.get("train")),
            pct(c.scores.get("dev")),
            _cost(c),
            c.note or "",
        ]
        for c in candidates
    ]
    return table(
        ["id", "round", "made by", "status", "train", "dev", "cost per judgement (dev)", "note"], rows
    )
