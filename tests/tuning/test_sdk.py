"""`judge tune` over the real SDK path: the OpenAI client against the local model server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from judge.evaluation.suite import load_suite
from judge.testing import LLMRequest, LLMServer, Reply, fail, say, verdict
from judge.tuning.tuner import TuneOptions, tune
from tests.tuning.test_loop import BASE_PROMPT, GOOD, write_suite

pytestmark = pytest.mark.slow

CONTEXT = re.compile(r"<hook_context[^>]*>\s*(\{.*?\})\s*</hook_context>", re.DOTALL)


def handler(request: LLMRequest) -> Reply:
    if request.model == "optimizer-model":
        user = request.messages[-1]["content"]
        if "Explain concisely" in user:
            return say("The prompt never asks for sources.")
        better = BASE_PROMPT.replace("good enough for the user.", f"good enough: it must {GOOD}.")
        return say(f"<PROMPT>\n{better}\n</PROMPT>")
    user = next(m["content"] for m in request.messages if m.get("role") == "user")
    found = CONTEXT.search(user)
    assert found is not None
    answer = json.loads(found.group(1).replace("<\\/", "</"))["final_output"]
    if GOOD in CONTEXT.sub("", user):
        return verdict(True) if "http" in answer else verdict(False, "Cite a source.")
    return verdict(False, "Too short.") if len(answer) < 40 else verdict(True)


async def test_tune_through_the_openai_sdk(tmp_path: Path) -> None:
    with LLMServer(handler=handler) as server:
        env = server.env("openai", model="judge-model") | {"JUDGE_MODEL_REASONING": "openai:optimizer-model"}
        suite = load_suite(write_suite(tmp_path))
        options = TuneOptions(out=tmp_path / "out", hook="Stop:1", rounds=1, beam=1, max_calls=300)
        outcome = await tune(suite, options, env=env)
        requests = list(server.requests)
    assert GOOD in outcome.winner.prompt
    assert outcome.optimizer_model == "openai:optimizer-model"
    assert outcome.calls == len(requests) <= 300
    optimizer = [r for r in requests if r.model == "optimizer-model"]
    assert len(optimizer) == 2
    # the optimizer asks for free text, not the judge's structured verdict, and a proposed
    # prompt may hold blank lines: no stop sequence (the judge's requests to this local
    # server have one)
    assert all("response_format" not in r.body and "stop" not in r.body for r in optimizer)
    assert all(r.body.get("stop") == ["\n\n\n\n"] for r in requests if r.model == "judge-model")


async def test_requests_sent_again_without_a_rejected_feature_count_against_max_calls(tmp_path: Path) -> None:
    # a server that answers 400 to structured output makes the provider send each judgement
    # again without it: those requests are calls too, and --max-calls is never exceeded
    def no_schema(request: LLMRequest) -> Reply:
        if "response_format" in request.body:
            return fail(400, "response_format is not supported")
        return handler(request)

    with LLMServer(handler=no_schema) as server:
        env = server.env("openai", model="judge-model") | {"JUDGE_MODEL_REASONING": "openai:optimizer-model"}
        env["JUDGE_MAX_OUTPUT_TOKENS"] = "64"
        suite = load_suite(write_suite(tmp_path))
        options = TuneOptions(out=tmp_path / "out", hook="Stop:1", rounds=1, beam=1, max_calls=60)
        outcome = await tune(suite, options, env=env)
        requests = list(server.requests)
    assert any("response_format" in r.body for r in requests)  # the rejected ones were sent
    assert outcome.calls == len(requests) <= 60
