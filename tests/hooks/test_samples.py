"""`samples: k` on prompt hooks: k independent judgements in parallel within the hook's one
timeout, voted by `aggregate`, each sample and the agreement in the hook's result; in a
cascade, a stage whose samples disagree escalates."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from judge.config import config_from_data
from judge.decision import Usage
from judge.errors import ConfigError, HookError
from judge.hooks.engine import Engine
from judge.hooks.judging import PromptRequest, PromptVerdict


class SampleJudge:
    """Answers by (model, sample index): True/False, "error", "hang"; records every request."""

    def __init__(self, answers: dict[str, list[Any]]) -> None:
        self.answers = answers
        self.requests: list[PromptRequest] = []
        self.running = 0
        self.most_at_once = 0

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        self.requests.append(request)
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        try:
            await asyncio.sleep(0)  # let the other samples start: they run side by side
            model = request.hook.model
            assert isinstance(model, str)
            answer = self.answers[model][request.sample]
            if answer == "error":
                raise HookError("provider down", model=model, usage=Usage(inputTokens=5))
            if answer == "hang":
                await asyncio.Event().wait()
            reason = None if answer else f"sample {request.sample} says no"
            return PromptVerdict(ok=answer, reason=reason, model=model, usage=Usage(inputTokens=10))
        finally:
            self.running -= 1


def stop_engine(judge: SampleJudge, **hook: Any) -> Engine:
    entry = {"prompt": "done? $ARGUMENTS", "model": "m:a", "maxRejections": 25, **hook}
    return Engine(config_from_data({"hooks": {"Stop": [entry]}}), judge=judge)


STOP = {"hook_event_name": "Stop", "final_output": "done"}


@pytest.mark.parametrize(
    ("aggregate", "answers", "decision", "agreement"),
    [
        ("majority", [True, False, True], "allow", 2 / 3),
        ("majority", [False, False, True], "block", 2 / 3),
        ("any", [True, False, True], "block", 1 / 3),
        ("any", [True, True, True], "allow", 1.0),
        ("all", [False, False, True], "allow", 1 / 3),
        ("all", [False, False, False], "block", 1.0),
    ],
)
async def test_the_samples_vote_by_the_hook_rule_and_the_result_lists_each(
    aggregate: str, answers: list[bool], decision: str, agreement: float
) -> None:
    judge = SampleJudge({"m:a": answers})
    out = (await stop_engine(judge, samples=3, aggregate=aggregate).evaluate("Stop", STOP)).to_json()
    [hook] = out["hooks"]
    assert (out["decision"], hook["decision"]) == (decision, decision)
    assert hook["agreement"] == pytest.approx(agreement)
    assert [s["verdict"] for s in hook["samples"]] == ["allow" if a else "block" for a in answers]
    assert [r.sample for r in judge.requests] == [0, 1, 2]
    assert judge.most_at_once == 3  # in parallel, not one after another
    assert hook["usage"]["inputTokens"] == 30  # every sample's tokens are the hook's
    if decision == "block":  # the reason of the first sample that blocked
        first = answers.index(False)
        assert out["reason"] == f"sample {first} says no"


async def test_failed_samples_are_left_out_of_the_vote_and_all_failing_is_a_hook_error() -> None:
    judge = SampleJudge({"m:a": ["error", False, False]})
    out = (await stop_engine(judge, samples=3).evaluate("Stop", STOP)).to_json()
    [hook] = out["hooks"]
    assert out["decision"] == "block" and hook["agreement"] == 1.0
    assert hook["samples"][0] == {"verdict": "error", "reason": None, "error": "provider down"}
    assert hook["usage"]["inputTokens"] == 25  # the failed sample's tokens are paid for too
    judge = SampleJudge({"m:a": ["error", "error", "error"]})
    out = (await stop_engine(judge, samples=3, failMode="block").evaluate("Stop", STOP)).to_json()
    assert out["decision"] == "block"
    assert out["hooks"][0]["error"] == "all 3 samples failed; the first: provider down"


async def test_a_tie_left_by_a_failed_sample_decides_nothing_and_the_failmode_applies() -> None:
    judge = SampleJudge({"m:a": [True, "error", False]})
    out = (await stop_engine(judge, samples=3).evaluate("Stop", STOP)).to_json()
    assert out["decision"] == "allow"  # Stop's default failMode
    assert out["hooks"][0]["error"] == "the samples tied (1 allow, 1 block): no majority"


async def test_samples_share_the_hook_timeout_and_a_late_one_counts_as_failed() -> None:
    judge = SampleJudge({"m:a": [False, "hang", False]})
    engine = stop_engine(judge, samples=3, timeout=1)
    out = (await engine.evaluate("Stop", STOP)).to_json()
    [hook] = out["hooks"]
    assert out["decision"] == "block" and hook["agreement"] == 1.0
    assert hook["samples"][1] == {"verdict": "error", "reason": None, "error": "timed out after 1s"}
    deadlines = {r.deadline for r in judge.requests}
    assert len(deadlines) == 1  # one deadline: the hook's, for every sample


async def test_one_sample_is_the_plain_judgement_without_samples_in_the_result() -> None:
    judge = SampleJudge({"m:a": [False]})
    out = (await stop_engine(judge).evaluate("Stop", STOP)).to_json()
    assert "samples" not in out["hooks"][0] and "agreement" not in out["hooks"][0]
    assert [r.sample for r in judge.requests] == [0]


async def test_a_cascade_stage_whose_samples_disagree_escalates_even_when_it_approves() -> None:
    judge = SampleJudge({"m:fast": [True, False, True], "m:strong": [False, False, False]})
    out = (await stop_engine(judge, model=["m:fast", "m:strong"], samples=3).evaluate("Stop", STOP)).to_json()
    [hook] = out["hooks"]
    assert out["decision"] == "block"
    fast, strong = hook["stages"]
    assert (fast["verdict"], fast["agreement"]) == ("allow", pytest.approx(2 / 3))
    assert (strong["verdict"], strong["agreement"]) == ("block", 1.0)
    assert [s["verdict"] for s in fast["samples"]] == ["allow", "block", "allow"]


async def test_escalate_below_lets_a_stage_that_agrees_enough_settle_it() -> None:
    judge = SampleJudge({"m:fast": [True, False, True], "m:strong": [False, False, False]})
    engine = stop_engine(judge, model=["m:fast", "m:strong"], samples=3, escalateBelow=0.6)
    out = (await engine.evaluate("Stop", STOP)).to_json()
    assert out["decision"] == "allow" and len(out["hooks"][0]["stages"]) == 1
    assert {r.hook.model for r in judge.requests} == {"m:fast"}


@pytest.mark.parametrize(
    ("hook", "problem"),
    [
        ({"samples": 0}, "hooks.Stop[0].samples: must be between 1 and 9, got 0"),
        ({"samples": 10}, "hooks.Stop[0].samples: must be between 1 and 9, got 10"),
        ({"samples": True}, "hooks.Stop[0].samples: must be an integer, got True"),
        (
            {"samples": 4},
            "hooks.Stop[0].samples: 4 samples can tie under aggregate: majority; use an odd number "
            "(3, 5, ...) or aggregate: any / all",
        ),
        (
            {"samples": 3, "aggregate": "most"},
            "hooks.Stop[0].aggregate: Input should be 'majority', 'any' or 'all'",
        ),
        (
            {"samples": 3, "escalateBelow": 0.8},
            "hooks.Stop[0].escalateBelow: only for cascades (a list of 2 or more models)",
        ),
        (
            {"model": ["a", "b"], "escalateBelow": 0.8},
            "hooks.Stop[0].escalateBelow: needs samples of 2 or more (it bounds their agreement)",
        ),
        (
            {"model": ["a", "b"], "samples": 3, "escalateBelow": 0.5},
            "hooks.Stop[0].escalateBelow: Input should be greater than 0.5",
        ),
        (
            {"type": "command", "command": "true", "prompt": None, "samples": 3},
            "hooks.Stop[0].samples: only for prompt hooks",
        ),
    ],
)
def test_bad_sampling_options_get_located_errors(hook: dict[str, Any], problem: str) -> None:
    entry = {"prompt": "done?", **hook}
    entry = {k: v for k, v in entry.items() if v is not None}
    with pytest.raises(ConfigError) as caught:
        config_from_data({"hooks": {"Stop": [entry]}})
    assert caught.value.problems == [problem]
