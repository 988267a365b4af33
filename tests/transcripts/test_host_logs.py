"""Other hosts' session logs rendered for the judge: readable lines, the last answer, and
whatever else a file holds survived."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from judge.transcripts.host_logs import render_host_log
from tests.hosts import payloads


def rendered(fmt: str, path: Path) -> tuple[str, str | None]:
    out = io.StringIO()
    last = render_host_log(fmt, path, out)
    return out.getvalue(), last


def test_each_hosts_log_gives_its_calls_results_and_last_answer(tmp_path: Path) -> None:
    codex, last = rendered("codex", payloads.codex_rollout(tmp_path / "r.jsonl", "Done: 3 passed."))
    assert last == "Done: 3 passed." and "TOOL RESULT [call_5]: Process exited with code 0" in codex
    gemini, last = rendered("gemini", payloads.gemini_chat(tmp_path / "g.jsonl", ("One.", "Two.")))
    assert last == "Two." and gemini.index("ASSISTANT: One.") < gemini.index("USER: Check it again.")
    copilot, last = rendered("copilot", payloads.copilot_events(tmp_path / "e.jsonl", "Built."))
    assert last == "Built." and copilot.startswith("USER: create a.txt")


@pytest.mark.parametrize("fmt", ["codex", "gemini", "copilot", "jsonl"])
def test_lines_that_are_not_the_format_do_not_stop_the_rendering(tmp_path: Path, fmt: str) -> None:
    log = tmp_path / "log.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    log.write_text(
        f'not json\n{deep}\n[1, 2]\n{{"type": 7}}\n\n\xff\n{{"role": "assistant", "content": "hi"}}\n'
    )
    text, last = rendered(fmt, log)
    assert isinstance(text, str)
    assert last in (None, "hi")


def test_a_log_that_is_not_a_regular_file_is_an_error_not_a_hang(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError):
        rendered("codex", fifo)
