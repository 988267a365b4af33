"""The tuning report claims an improvement only from the held-out test split."""

from __future__ import annotations

from judge.tuning.optimizer import Candidate, ItemOutcome, SplitEval
from judge.tuning.report import CLAIM, headline, render_tune_report, warnings
from judge.tuning.splits import Split
from judge.tuning.stats import ItemPair, compare_paired
from judge.tuning.tuner import TuneOutcome


def items(decisions: list[str], labels: list[str]) -> list[ItemOutcome]:
    return [
        ItemOutcome(id=f"t{i}", label=label, decision=d, decisions=[d])
        for i, (d, label) in enumerate(zip(decisions, labels, strict=True))
    ]


def make_outcome(n_test: int, fixed: int, broke: int, dev_gain: float = 0.4) -> TuneOutcome:
    labels = ["block" if i % 2 else "allow" for i in range(n_test)]
    wrong = {"allow": "block", "block": "allow"}
    # baseline wrong on the first `fixed` items, winner wrong on the next `broke` items
    base = [wrong[lab] if i < fixed else lab for i, lab in enumerate(labels)]
    win = [wrong[lab] if fixed <= i < fixed + broke else lab for i, lab in enumerate(labels)]
    a = SplitEval(split="test", items=items(base, labels), score=None)
    b = SplitEval(split="test", items=items(win, labels), score=None)
    baseline = Candidate(id="c0", round=0, parent=None, prompt="p0 $ARGUMENTS", status="baseline")
    winner = Candidate(id="c3", round=1, parent="c0", prompt="p3 $ARGUMENTS", status="kept")
    baseline.scores = {"train": 0.5, "dev": 0.5}
    winner.scores = {"train": 0.9, "dev": 0.5 + dev_gain}
    ids = [i.id for i in a.items]
    pairs = [
        ItemPair(id=x.id, label=x.label, a=x.decision, b=y.decision)
        for x, y in zip(a.items, b.items, strict=True)
    ]
    return TuneOutcome(
        suite="s",
        event="Stop",
        index=0,
        split=Split(train=["x"], dev=["y"], test=ids, seed=0, ratios=(0.2, 0.4, 0.4)),
        candidates=[baseline, winner],
        baseline=baseline,
        winner=winner,
        stopped="rounds",
        calls=10,
        max_calls=None,
        test={"c0": a, "c3": b} if n_test else {},
        comparison=compare_paired(pairs) if n_test else None,
    )


def test_dev_gain_without_test_gain_is_not_claimed() -> None:
    outcome = make_outcome(n_test=60, fixed=3, broke=3, dev_gain=0.45)
    assert CLAIM not in headline(outcome)
    assert "no better than the baseline" in headline(outcome)
    report = render_tune_report(outcome)
    assert CLAIM not in report
    assert "not evidence of improvement" in report


def test_insignificant_test_gain_is_not_claimed() -> None:
    outcome = make_outcome(n_test=60, fixed=4, broke=1)
    text = headline(outcome)
    assert CLAIM not in text and "not statistically significant" in text


def test_significant_test_gain_is_claimed_with_its_p_value() -> None:
    outcome = make_outcome(n_test=60, fixed=10, broke=0)
    text = headline(outcome)
    assert CLAIM in text and "p = 0.00195" in text
    report = render_tune_report(outcome)
    assert CLAIM in report and "t0" in report  # the fixed items are listed


def test_worse_on_test_says_so() -> None:
    outcome = make_outcome(n_test=60, fixed=0, broke=8)
    assert "worse than the baseline" in headline(outcome)


def test_no_test_split_never_claims() -> None:
    outcome = make_outcome(n_test=0, fixed=0, broke=0, dev_gain=0.5)
    assert CLAIM not in headline(outcome) and "no improvement can be claimed" in headline(outcome)
    assert any("no test split" in w for w in warnings(outcome))
    assert CLAIM not in render_tune_report(outcome)


def test_small_test_sets_are_warned_about() -> None:
    small = make_outcome(n_test=12, fixed=6, broke=0)
    assert any("only 12 items" in w for w in warnings(small))
    assert not any("only" in w and "items" in w for w in warnings(make_outcome(n_test=60, fixed=6, broke=0)))


def test_the_report_escapes_prompts() -> None:
    outcome = make_outcome(n_test=10, fixed=1, broke=0)
    outcome.winner.prompt = "<script>alert(1)</script> $ARGUMENTS"
    report = render_tune_report(outcome)
    assert "<script>alert" not in report and "&lt;script&gt;" in report
