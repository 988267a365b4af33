"""Human reports for ``judge tune``: baseline against winner on the held-out TEST split.

The headline is computed from test numbers only. Dev (the split the winner was selected
on) and train scores are shown in a section that says they are not evidence: a prompt
picked for its dev score looks better on dev by construction. An improvement is claimed
only when the winner fixed more test items than it broke AND the exact McNemar test is
significant at 5 %.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from judge.evaluation.stats import wilson_interval
from judge.tuning.candidates import Candidate, SplitEval
from judge.tuning.sections import candidates_html, frontier_html, lineage_html
from judge.tuning.sections import esc as _e
from judge.tuning.sections import pct as _pct
from judge.tuning.sections import table as _table
from judge.tuning.stats import ItemPair, PairedComparison

if TYPE_CHECKING:
    from judge.tuning.compare import CompareOutcome
    from judge.tuning.tuner import TuneOutcome

#: The only words with which a report claims an improvement (tests look for them).
CLAIM = "is better on the held-out test split"
ALPHA = 0.05
SMALL_TEST = 30


def _ci_text(successes: int, n: int) -> str:
    if n == 0:
        return "n/a"
    lo, hi = wilson_interval(successes, n)
    return f"{_pct(successes / n)} [{_pct(lo)}, {_pct(hi)}]"


def headline(outcome: TuneOutcome) -> str:
    """One sentence on what the run established, from the TEST split only."""
    if outcome.winner.id == outcome.baseline.id:
        return "No edited prompt beat the baseline on the dev split; keep the baseline prompt."
    if not outcome.split.test:
        return (
            "The winner was selected on dev and there is no test split, so no improvement can be "
            "claimed; re-run with a test share (e.g. --split 20/40/40)."
        )
    c = outcome.comparison
    if c is None:
        return "The test evaluation did not complete (the budget is spent); no improvement can be claimed."
    return comparison_sentence(c, "The tuned prompt", "the baseline", unit=outcome.unit)


def comparison_sentence(
    c: PairedComparison,
    b_name: str,
    a_name: str,
    where: str = "on the held-out test split",
    unit: str = "item",
) -> str:
    """What a paired comparison shows, in one sentence (B against A, ``where``); ``unit``:
    what was compared (``item``, or ``pair`` for the pairwise objective)."""
    fixed, broke = len(c.improved), len(c.regressed)
    detail = (
        f"{unit} accuracy {_pct(c.accuracy_a)} → {_pct(c.accuracy_b)} on {c.n} {unit}s; "
        f"fixed {fixed}, broke {broke}; exact McNemar p = {c.p_value:.3g}"
    )
    if fixed > broke and c.p_value < ALPHA:
        return f"{b_name} is better {where} than {a_name} ({detail})."
    if fixed > broke:
        return (
            f"{b_name} scored higher than {a_name} {where}, but the difference is not "
            f"statistically significant ({detail}): no improvement is established."
        )
    if fixed == broke:
        return f"{b_name} is no better than {a_name} {where} ({detail})."
    return f"{b_name} is worse than {a_name} {where} ({detail})."


def unscored_test_reason(outcome: TuneOutcome) -> str | None:
    """Why the winner has no test score (None when it has one), with what would fix it."""
    if outcome.winner.scores.get("test") is not None:
        return None
    if not outcome.split.test:
        return (
            "the test split is empty (too few labelled cases or groups for --split); label more "
            "cases or give test a larger share"
        )
    if all(ev.complete for ev in outcome.test.values()):
        return "every test item errored (see report.html)"
    rate = outcome.calls_per_judgement
    prompts = len({outcome.baseline.id, outcome.winner.id})
    needed = prompts * len(outcome.split.test) * outcome.repeats
    budget = f" of --max-calls {outcome.max_calls}" if outcome.max_calls is not None else ""
    return (
        f"the call budget ran out during the test evaluation ({outcome.calls} calls used{budget}); "
        f"a judgement took {rate:.1f} calls, so scoring the test split takes about "
        f"{round(needed * rate)}: raise --max-calls"
    )


def warnings(outcome: TuneOutcome) -> list[str]:
    out = []
    n_test = len(outcome.split.test)
    if n_test == 0:
        out.append("There is no test split: nothing here is an unbiased estimate of the prompt's quality.")
    elif n_test < SMALL_TEST:
        out.append(
            f"The test split has only {n_test} items: the intervals are wide and only large "
            "differences can be significant. Label more cases before trusting a change."
        )
    if outcome.winner.id != outcome.baseline.id:
        tried = sum(1 for c in outcome.candidates if "dev" in c.scores)
        out.append(
            f"The winner was chosen because it scored best on dev among {tried} measured prompts, so its "
            "dev score is optimistic (selection overfits dev). Judge it by the test numbers only."
        )
    if outcome.stopped == "budget":
        out.append(f"The search stopped early: the budget ({outcome.limit or '--max-calls'}) ran out.")
    elif outcome.stopped.startswith("optimizer error"):
        out.append(f"The search stopped early: {outcome.stopped}.")
    for ev in outcome.test.values():
        if not ev.complete:
            flags = [f for f, v in (("--max-calls", outcome.max_calls), ("--max-usd", outcome.max_usd)) if v]
            out.append(f"The test evaluation was cut short by the budget ({' / '.join(flags)}).")
            break
    out += _floor_warnings(outcome)
    undecided = {cid: sum(1 for i in ev.items if i.decision is None) for cid, ev in outcome.test.items()}
    if any(undecided.values()):
        out.append(
            "Some test items got no decision (errors or tied repeats) and count as misses: "
            + ", ".join(f"{cid}: {n}" for cid, n in undecided.items() if n)
        )
    return out


def _floor_warnings(outcome: TuneOutcome) -> list[str]:
    """Precision floors the winner missed on dev (no prompt met them) or on test."""
    win = outcome.winner
    out = []
    if win.feasible.get("dev") is False:
        out.append(
            "No prompt met the precision floor(s) on dev; the winner is the one closest to them "
            f"({outcome.objective})."
        )
    if win.feasible.get("test") is False:
        test = win.metrics.get("test", {})
        out.append(
            f"On test the winner misses a precision floor ({outcome.objective}): block precision "
            f"{_pct(test.get('blockPrecision'))}, allow precision {_pct(test.get('allowPrecision'))}."
        )
    return out


# ---------------------------------------------------------------------------
# HTML

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; max-width: 70rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; }
th, td { border: 1px solid #ccc; padding: 0.3rem 0.6rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
pre { background: #f7f7f7; padding: 0.8rem; white-space: pre-wrap; border: 1px solid #ddd; }
.headline { font-size: 1.15rem; font-weight: 600; padding: 0.8rem; background: #eef4ff; }
.warn { background: #fff6e0; border-left: 4px solid #e0a000; padding: 0.5rem 0.8rem; margin: 0.4rem 0; }
.note { color: #666; }
"""


def _split_row(name: str, ev: SplitEval) -> list[Any]:
    labelled = [i for i in ev.items if i.label is not None]
    n = len(labelled)
    right = sum(1 for i in labelled if i.decision == i.label)
    allow = [i for i in labelled if i.label == "allow"]
    block = [i for i in labelled if i.label == "block"]
    false_block = sum(1 for i in allow if i.decision != "allow")
    false_pass = sum(1 for i in block if i.decision != "block")
    flip = ev.metrics.get("itemFlipRate")
    blocked = [i for i in labelled if i.decision == "block"]
    return [
        name,
        n,
        _ci_text(right, n),
        _pct(ev.score),
        _ci_text(sum(1 for i in blocked if i.label == "block"), len(blocked)),
        _ci_text(false_block, len(allow)),
        _ci_text(false_pass, len(block)),
        "n/a" if flip is None else _pct(flip),
        sum(1 for i in ev.items if i.decision is None),
    ]


SPLIT_HEADERS = [
    "prompt",
    "items",
    "accuracy [95% Wilson]",
    "objective",
    "block precision [95%]",
    "false blocks (of allow) [95%]",
    "false passes (of block) [95%]",
    "flip rate",
    "undecided",
]


def _flips_html(
    c: PairedComparison, a_name: str, b_name: str, rationales: Mapping[str, str] | None = None
) -> str:
    why = rationales or {}

    def rows(items: list[ItemPair]) -> list[list[Any]]:
        return [[i.id, i.label, i.a or "none", i.b or "none", why.get(i.id, "")] for i in items]

    headers = ["item", "label", a_name, b_name, "people's rationale"]
    out = f"<h3>Fixed by {_e(b_name)} ({len(c.improved)})</h3>"
    out += _table(headers, rows(c.improved)) if c.improved else "<p class='note'>none</p>"
    out += f"<h3>Broken by {_e(b_name)} ({len(c.regressed)})</h3>"
    out += _table(headers, rows(c.regressed)) if c.regressed else "<p class='note'>none</p>"
    return out


def _mcnemar_html(c: PairedComparison) -> str:
    return _table(
        ["items", "both right", "both wrong", "fixed", "broken", "exact McNemar p (two-sided)"],
        [[c.n, c.both_right, c.both_wrong, len(c.improved), len(c.regressed), f"{c.p_value:.4g}"]],
    )


def _page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
        f"<style>{STYLE}</style></head><body><h1>{_e(title)}</h1>{body}</body></html>\n"
    )


def _score(c: Candidate, split: str) -> str:
    return _pct(c.scores.get(split))


def _test_html(outcome: TuneOutcome) -> str:
    base, win = outcome.baseline, outcome.winner
    if not outcome.test:
        return "<p class='note'>No test split.</p>"
    rows = [_split_row(f"baseline ({base.id})", outcome.test[base.id])]
    if win.id != base.id:
        rows.append(_split_row(f"winner ({win.id})", outcome.test[win.id]))
    out = _table(SPLIT_HEADERS, rows)
    if outcome.comparison is not None and win.id != base.id:
        out += f"<h3>Paired comparison on test ({_e(outcome.unit)}s)</h3>" + _mcnemar_html(outcome.comparison)
        out += _flips_html(outcome.comparison, "baseline", "winner", outcome.rationales)
    return out


def _prompts_html(base: Candidate, win: Candidate) -> str:
    out = "<h2>Prompts</h2><h3>Baseline</h3><pre>" + _e(base.prompt) + "</pre>"
    if win.id != base.id:
        diff = "\n".join(
            difflib.unified_diff(
                base.prompt.splitlines(), win.prompt.splitlines(), "baseline", win.id, lineterm=""
            )
        )
        out += f"<h3>Winner ({_e(win.id)})</h3><pre>{_e(win.prompt)}</pre><h3>Diff</h3><pre>{_e(diff)}</pre>"
    return out


def _footer(outcome: TuneOutcome) -> str:
    budget = f" of {outcome.max_calls}" if outcome.max_calls is not None else ""
    money = ""
    if outcome.max_usd is not None:
        money = f" Spent ${outcome.spent_usd or 0:.4f} of --max-usd {outcome.max_usd:g}."
    return (
        f"<p class='note'>Objective: {_e(outcome.objective)}. Split (seed {outcome.split.seed}): train "
        f"{len(outcome.split.train)}, dev {len(outcome.split.dev)}, test {len(outcome.split.test)} items. "
        f"LLM calls: {outcome.calls}{budget}.{money} Optimizer model: {_e(outcome.optimizer_model)}. "
        f"Stopped: {_e(outcome.stopped)}.</p>"
    )


def render_tune_report(outcome: TuneOutcome) -> str:
    base, win = outcome.baseline, outcome.winner
    parts = [f"<p class='headline'>{_e(headline(outcome))}</p>"]
    parts += [f"<div class='warn'>{_e(w)}</div>" for w in warnings(outcome)]
    parts.append(f"<h2>Held-out test split ({len(outcome.split.test)} items, used once)</h2>")
    parts.append(_test_html(outcome))
    parts.append(
        "<h2>Selection splits (not evidence of improvement)</h2><p class='note'>The winner was "
        "selected by its dev score and edits were derived from train mistakes; these numbers are "
        f"optimistic for the winner. Objective: {_e(outcome.objective)}.</p>"
    )
    parts.append(
        _table(
            ["prompt", "train objective", "dev objective"],
            [
                [f"baseline ({base.id})", _score(base, "train"), _score(base, "dev")],
                [f"winner ({win.id})", _score(win, "train"), _score(win, "dev")],
            ],
        )
    )
    parts.append("<h3>The Pareto frontier of dev</h3>" + frontier_html(outcome.candidates, win))
    parts.append(
        "<h3>How the winner came about</h3>" + lineage_html(outcome.candidates, win, outcome.rationales)
    )
    parts.append(_prompts_html(base, win))
    parts.append("<h2>Candidates</h2>" + candidates_html(outcome.candidates))
    parts.append(_footer(outcome))
    return _page(f"judge tune — {outcome.suite} — {outcome.event}:{outcome.index}", "".join(parts))


def format_comparison(outcome: CompareOutcome) -> str:
    """The plain-text comparison ``judge tune --compare`` prints."""
    c = outcome.comparison
    lines = [
        f"suite {outcome.suite}: {c.n} labelled items, {outcome.repeats} repeat(s)",
        f"  {outcome.a}: accuracy {_pct(c.accuracy_a)}; {outcome.b}: accuracy {_pct(c.accuracy_b)}",
        f"  both right {c.both_right}, both wrong {c.both_wrong}, "
        f"fixed by {outcome.b} {len(c.improved)}, broken by {outcome.b} {len(c.regressed)}",
        f"  exact McNemar p = {c.p_value:.4g}",
        "  " + comparison_sentence(c, outcome.b, outcome.a, "on these items"),
    ]
    for title, items in ((f"fixed by {outcome.b}", c.improved), (f"broken by {outcome.b}", c.regressed)):
        for i in items:
            said = f"{outcome.a} {i.a or 'none'}, {outcome.b} {i.b or 'none'}"
            lines.append(f"  {title}: {i.id} (label {i.label}; {said})")
    if c.n < SMALL_TEST:
        lines.append(f"  warning: only {c.n} items; intervals are wide and small differences are noise")
    return "\n".join(lines)


def render_compare_report(outcome: CompareOutcome) -> str:
    c = outcome.comparison
    sentence = comparison_sentence(c, outcome.b, outcome.a, "on these items")
    parts = [f"<p class='headline'>{_e(sentence)}</p>"]
    if c.n < SMALL_TEST:
        parts.append(f"<div class='warn'>Only {c.n} items: intervals are wide.</div>")
    parts.append(
        "<div class='warn'>Compare on items neither prompt was tuned on; otherwise the tuned one is "
        "favoured.</div>"
    )
    rows = [
        [name, _pct(m.get("majorityAccuracy")), _pct(m.get("majorityBalancedAccuracy"))]
        for name, m in outcome.metrics.items()
    ]
    parts.append(_table(["config", "accuracy (majority vote)", "balanced accuracy"], rows))
    parts.append(_mcnemar_html(c))
    parts.append(_flips_html(c, outcome.a, outcome.b))
    return _page(f"judge tune --compare — {outcome.suite}", "".join(parts))
