"""comparison.json from results: case decisions over repeats, pairs, variant names and folders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from judge.errors import UsageError
from judge.evaluation.metrics import compute_metrics
from judge.evaluation.reports.comparison import build_comparison, case_decisions
from judge.evaluation.runner import CaseResult
from judge.evaluation.suite import Case
from judge.evaluation.variants import plan_variants


def result(case_id: str, repeat: int, decision: str | None, **extra: Any) -> CaseResult:
    return CaseResult.model_validate({"id": case_id, "repeat": repeat, "decision": decision, **extra})


def test_a_cases_decision_is_the_majority_of_its_decided_error_free_repeats() -> None:
    decisions = case_decisions(
        [
            result("maj", 0, "block", reason="r0"),
            result("maj", 1, "allow"),
            result("maj", 2, "block", reason="r2"),
            result("tie", 0, "block", reason="x"),
            result("tie", 1, "allow"),
            result("err", 0, None, error="timeout"),
            result("err", 1, "allow", error="hook failed; failMode allow"),
            result("forced", 0, "allow", forcedStop=True, reason="still missing tests"),
            result("skip-error", 0, None, error="boom"),
            result("skip-error", 1, "allow"),
        ]
    )
    assert (decisions["maj"].decision, decisions["maj"].reason) == ("block", "r0")
    assert (decisions["tie"].decision, decisions["tie"].reason) == ("split", "1 of 2 repeats blocked")
    assert (decisions["err"].decision, decisions["err"].reason) == ("error", "timeout")
    assert decisions["forced"].decision == "block"  # a forced stop is the judge's block, as in report.json
    assert decisions["skip-error"].decision == "allow"


def test_pairs_skip_cases_either_variant_could_not_decide() -> None:
    cases = [Case(id=f"c{i}", context={"final_output": "x"}, label="block") for i in range(4)]
    a = [
        result("c0", 0, "block"),
        result("c1", 0, "block"),
        result("c2", 0, None, error="e"),
        result("c3", 0, "allow"),
    ]
    b = [
        result("c0", 0, "allow"),
        result("c1", 0, "block"),
        result("c2", 0, "block"),
        result("c3", 0, "allow"),
    ]
    variants = plan_variants(["fake:a.json", "fake:b.json"], None)
    report = build_comparison("t", cases, 1, variants, [compute_metrics(a), compute_metrics(b)], [a, b])
    (pair,) = report["pairs"]
    assert (pair["decided"], pair["agreed"]) == (3, 2)
    test = pair["mcnemar"]
    assert (test["paired"], test["excluded"], test["aOnlyCorrect"], test["bOnlyCorrect"]) == (3, 1, 1, 0)
    assert [d["id"] for d in report["disagreements"]] == ["c0", "c2"]
    assert report["disagreements"][1]["decisions"][0] == {
        "variant": "fake:a.json",
        "decision": "error",
        "reason": "e",
    }


def test_variant_names_and_folders() -> None:
    variants = plan_variants(["openai:gpt-5.4-mini", "Fast"], ["a/agent.yaml", "b/agent.yml"])
    assert [v.slug for v in variants] == [
        "agent--openai-gpt-5.4-mini",
        "agent--fast",
        "agent--openai-gpt-5.4-mini-2",  # the same file name elsewhere: numbered
        "agent--fast-2",
    ]
    assert variants[2].name == "b/agent.yml + openai:gpt-5.4-mini"
    assert (variants[2].config, variants[2].model) == ("b/agent.yml", "openai:gpt-5.4-mini")
    assert [v.slug for v in plan_variants("fake:allow", None)] == ["fake-allow"]
    assert [(v.name, v.model, v.config) for v in plan_variants(None, None)] == [("suite", None, None)]


def test_the_same_config_twice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="given twice"):
        plan_variants(None, [str(tmp_path / "x.yaml"), str(tmp_path / "." / "x.yaml")])
