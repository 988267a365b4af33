"""Progress output: plain lines off a terminal, a rich bar on one, nothing with --quiet."""

from __future__ import annotations

import io

from judge.cli.progress import PlainProgress, RichProgress, make_progress
from judge.decision import Usage
from judge.evaluation.progress import Progress
from judge.evaluation.runner import CaseResult


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_show_counts_tokens_and_eta() -> None:
    stream = io.StringIO()
    progress = make_progress(stream=stream)
    assert isinstance(progress, PlainProgress)
    progress.start(4)
    progress.advance(CaseResult(id="a", decision="allow", usage=Usage(inputTokens=10, outputTokens=2)))
    progress.advance(CaseResult(id="b", error="boom"))
    progress.advance(CaseResult(id="c", decision="allow", cached=True, usage=Usage(inputTokens=99)))
    progress.advance(CaseResult(id="d", decision="block"))
    progress.finish()
    last = stream.getvalue().strip().splitlines()[-1]
    assert "[4/4]" in last and "100.0%" in last
    assert "errors 1" in last and "cache hits 1" in last
    assert "tokens 10/2" in last  # cached judgements spent nothing in this run
    assert "eta 0:00:00" in last


def test_resume_counts_done_results() -> None:
    progress = Progress()
    progress.start(10, done=6)
    assert progress.done == 6 and progress.eta() is None
    progress.advance(CaseResult(id="x", decision="allow"))
    assert progress.summary().startswith("[ 7/10]")


def test_quiet_and_tty() -> None:
    stream = io.StringIO()
    quiet = make_progress(quiet=True, stream=stream)
    quiet.start(1)
    quiet.advance(CaseResult(id="a", decision="allow"))
    quiet.finish()
    assert stream.getvalue() == ""
    tty = FakeTTY()
    bar = make_progress(stream=tty)
    assert isinstance(bar, RichProgress)
    bar.start(2)
    bar.advance(CaseResult(id="a", decision="allow"))
    bar.advance(CaseResult(id="b", decision="allow"))
    bar.finish()
    assert "2/2" in tty.getvalue()
