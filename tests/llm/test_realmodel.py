"""The real-model tier: the judge against a real model on an OpenAI-compatible server.

Not part of the default run (deselected in pyproject.toml, and skipped without an
endpoint). Start a local model and run it with::

    export OPENAI_BASE_URL=http://127.0.0.1:8089/v1 OPENAI_API_KEY=local
    export JUDGE_MODEL_REASONINGFAST=openai:qwen2.5-coder-1.5b-instruct
    .venv/bin/python -m pytest -m realmodel

Every case of ``evals/realmodel`` can only be judged by reading the transcript: the final
answer claims what the transcript contradicts, or is right where only the transcript
shows it. Each test asserts that the model called a tool before answering (the read the
judge makes itself for a model that will not read does not count), that its verdict
parsed, and the decision.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from judge.config import load_config
from judge.hooks.judging import PromptRequest
from judge.llm import JudgementTrace, LLMJudge

SUITE = Path(__file__).resolve().parents[2] / "evals" / "realmodel"
CASES = [json.loads(line) for line in (SUITE / "cases.jsonl").read_text().splitlines() if line.strip()]
ENDPOINT = ("OPENAI_BASE_URL", "JUDGE_MODEL_REASONINGFAST")

pytestmark = [
    pytest.mark.realmodel,
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        not all(os.environ.get(name) for name in ENDPOINT),
        reason="needs a model endpoint: set OPENAI_BASE_URL, OPENAI_API_KEY and JUDGE_MODEL_REASONINGFAST",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
async def test_the_judge_reads_the_transcript_and_decides(case: dict[str, Any], tmp_path: Path) -> None:
    transcript = tmp_path / "transcript.txt"
    transcript.write_text(case["transcript"], encoding="utf-8")
    (hook,) = load_config(SUITE / "agent.yaml").hooks.for_event("Stop")
    context = {**case["context"], "execution_summary": str(transcript)}
    traces: list[JudgementTrace] = []
    judge = LLMJudge(observer=lambda _request, trace: traces.append(trace))
    request = PromptRequest(hook=hook, context=context, transcript_path=transcript, base_dir=SUITE)
    verdict = await judge.evaluate(request)  # a HookError here: the verdict did not parse
    (trace,) = traces
    model_calls = [c for c in trace.tool_calls if not c.startswith("judge:")]  # not the judge's own read
    assert model_calls, f"the model answered without calling a tool (tools run: {trace.tool_calls})"
    assert trace.verdict is not None
    assert ("allow" if verdict.ok else "block") == case["label"], verdict.reason
