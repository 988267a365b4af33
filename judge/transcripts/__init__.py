"""Agent transcripts, rendered to numbered, readable text for the judge's tools.

* :mod:`judge.transcripts.formats` — what a transcript file is (text, JSON message lists,
  JSONL, Claude Code session logs) and its rendering, streamed;
* :mod:`judge.transcripts.prepared` — the rendered copy the tools read, cached privately;
* :mod:`judge.transcripts.claude_code` (with :mod:`~judge.transcripts.claude_code_text`,
  :mod:`~judge.transcripts.forged_rows` and :mod:`~judge.transcripts.render_cache`) —
  Claude Code's JSONL session logs: subagents, compactions, rows an agent forged, and an
  incremental render cache so a long session is not rendered again at every Stop.
"""

from judge.transcripts.formats import MAX_LINE_BYTES, detect_format, render_json_document, render_lines
from judge.transcripts.prepared import PRIVATE_PREFIX, discard_rendered, prepare_transcript

__all__ = [
    "MAX_LINE_BYTES",
    "PRIVATE_PREFIX",
    "detect_format",
    "discard_rendered",
    "prepare_transcript",
    "render_json_document",
    "render_lines",
]
