"""Small defects, each pinned: the dispatcher's BLOCKED prefix, McNemar with many
discordant pairs, identical cases judged independently with the cache on, a stop forced
by maxRejections scored as block (eval and tune alike), and the flip rate per pair."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from judge.config import config_from_data
from judge.evaluation.cache import JudgementCache
from judge.evaluation.metrics import compute_report
from judge.evaluation.runner import CaseResult, run_cases
from judge.evaluation.stats import mcnemar_exact
from judge.evaluation.suite import Case
from judge.hooks.engine import Engine
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.integrations import wrap_dispatcher
from judge.tuning.measure import hook_verdict
from tests.integrations.test_agent_loops import FREE_USER, Dispatcher, tool_use

# --------------------------------------------------------------------------- dispatcher


@pytest.mark.parametrize(
    ("stderr", "content"),
    [
        ("BLOCKED: no rm -rf", "BLOCKED: no rm -rf"),
        ("blocked: lower case too", "blocked: lower case too"),
        ("rm -rf is not allowed", "BLOCKED: rm -rf is not allowed"),
    ],
)
def test_a_reason_that_already_says_blocked_is_not_prefixed_twice(stderr: str, content: str) -> None:
    hook = {"type": "command", "matcher": "*", "command": f"echo '{stderr}' >&2; exit 2"}
    engine = Engine(config_from_data({"hooks": {"PreToolUse": [hook]}}))
    dispatcher = Dispatcher()
    wrapped = wrap_dispatcher(dispatcher.call_tool, engine, FREE_USER)
    result = wrapped(tool_use("toolu_1", "Bash", command="rm -rf /"))
    assert result == {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True, "content": content}
    assert dispatcher.calls == []


# --------------------------------------------------------------------------- McNemar


def exact_reference(b: int, c: int) -> float:
    """The two-sided exact McNemar p-value with rational arithmetic."""
    n, k = b + c, min(b, c)
    tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


@pytest.mark.parametrize(("b", "c"), [(600, 600), (500, 700), (512, 512), (0, 1024), (480, 560), (1, 3000)])
def test_mcnemar_with_1024_or_more_discordant_pairs(b: int, c: int) -> None:
    assert mcnemar_exact(b, c).p_value == pytest.approx(exact_reference(b, c), rel=1e-12, abs=1e-300)


def test_mcnemar_with_very_many_pairs_is_quick_and_finite() -> None:
    p = mcnemar_exact(50_000, 50_600).p_value
    assert 0.0 < p < 1.0


# --------------------------------------------------------------------------- cache and flips


class CoinJudge:
    """Blocks on odd calls, allows on even ones: every call is a fresh sample."""

    def __init__(self) -> None:
        self.calls = 0

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        self.calls += 1
        return PromptVerdict(ok=self.calls % 2 == 0, reason="odd call", model="coin")


PROMPT = {"hooks": {"Stop": [{"type": "prompt", "prompt": "Complete? $ARGUMENTS", "model": "fake:allow"}]}}


async def test_cases_with_identical_content_are_judged_independently_with_the_cache(tmp_path: Path) -> None:
    cases = [
        Case.model_validate({"id": cid, "context": {"final_output": "same answer"}}) for cid in ("a", "b")
    ]
    judge = CoinJudge()
    cache = JudgementCache(tmp_path / "cache.sqlite")
    try:
        first = await run_cases(
            config_from_data(PROMPT), "Stop", cases, base_dir=tmp_path, repeats=2, judge=judge, cache=cache
        )
        assert judge.calls == 4  # a#0, a#1, b#0, b#1: none answered from another case's entry
        again = await run_cases(
            config_from_data(PROMPT), "Stop", cases, base_dir=tmp_path, repeats=2, judge=judge, cache=cache
        )
    finally:
        cache.close()
    assert judge.calls == 4 and all(r.cached for r in again)  # the cache still works per case
    assert [r.decision for r in again] == [r.decision for r in first]


def test_forced_stops_score_as_block_in_eval_and_in_tuning() -> None:
    forced = CaseResult(id="f", decision="allow", forcedStop=True, label="block", reason="still missing")
    allowed = CaseResult(id="a", decision="allow", label="allow")
    report = compute_report([forced, allowed])
    assert report["confusion"] == {"tp": 1, "fp": 0, "tn": 1, "fn": 0}
    assert (report["allowRate"], report["forcedStops"]) == (0.5, 1)
    assert hook_verdict(forced) == "block" == forced.verdict


async def test_forced_stop_end_to_end_counts_as_block(tmp_path: Path) -> None:
    config = {
        "hooks": {
            "Stop": [
                {
                    "type": "prompt",
                    "prompt": "Done? $ARGUMENTS",
                    "model": "fake:block:more",
                    "maxRejections": 1,
                }
            ]
        }
    }
    case = Case.model_validate({"id": "x", "context": {"final_output": "half"}, "label": "block"})
    [result] = await run_cases(config_from_data(config), "Stop", [case], base_dir=tmp_path)
    assert (result.decision, result.forced_stop) == ("allow", True)  # results.jsonl: the gate's decision
    report = compute_report([result])
    assert (report["recall"], report["forcedStops"]) == (1.0, 1)  # metrics: the judge's block


def flip_results(decisions: dict[str, list[str]]) -> list[CaseResult]:
    out: list[Any] = []
    for cid, ds in decisions.items():
        out += [CaseResult(id=cid, repeat=i, decision=d) for i, d in enumerate(ds)]  # type: ignore[arg-type]
    return out


def test_flip_rate_per_case_grows_with_repeats_and_per_pair_is_reported_too() -> None:
    # A judge that blocks about half the time, seen with 2 and with 4 repeats: flipRate
    # (share of cases with any disagreement) doubles; pairFlipRate stays near 2p(1-p).
    two = compute_report(flip_results({"a": ["block", "allow"], "b": ["block", "block"]}))
    four = compute_report(
        flip_results({"a": ["block", "allow", "block", "allow"], "b": ["block", "allow", "block", "allow"]})
    )
    assert (two["flipRate"], four["flipRate"]) == (0.5, 1.0)
    assert two["pairFlipRate"] == 0.5  # 1 of 2 pairs disagree
    assert four["pairFlipRate"] == pytest.approx(8 / 12, abs=1e-6)  # 2x2 of the 6 pairs per case
    assert four["flips"] == {"flipped": 2, "eligible": 2, "disagreeingPairs": 8, "pairs": 12, "repeats": 4}
