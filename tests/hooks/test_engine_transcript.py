"""The transcript the engine hands a prompt hook: the one given beside the context, when the
context's ``execution_summary`` is empty."""

from __future__ import annotations

from pathlib import Path

from judge.config import config_from_data
from judge.hooks.engine import Engine
from judge.hooks.judging import PromptRequest, PromptVerdict


async def test_transcript_is_used_when_execution_summary_is_empty(tmp_path: Path) -> None:
    seen: list[Path | None] = []

    class Recorder:
        async def evaluate(self, request: PromptRequest) -> PromptVerdict:
            seen.append(request.transcript_path)
            return PromptVerdict(ok=True)

    transcript = tmp_path / "t.txt"
    transcript.write_text("USER: hi\n", encoding="utf-8")
    config = config_from_data({"hooks": {"Stop": [{"type": "prompt", "prompt": "judge"}]}})
    engine = Engine(config, judge=Recorder())
    await engine.evaluate("Stop", {"final_output": "x", "execution_summary": ""}, transcript)
    assert seen == [transcript]
