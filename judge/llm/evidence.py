"""Rejections that cite evidence (a prompt hook's ``evidence: required``).

With evidence required, a rejection (``ok: false``) must carry citations of the
transcript::

    {"ok": false, "reason": "...", "citations": [{"line": 42, "quote": "deploy failed"}]}

``line`` is a line number as the judge's ReadFile / GrepSearch show it (1-based, in the
same rendered transcript the tools read); ``quote`` is text copied from that line. Each
citation is verified here:

* the quote and the transcript are compared after whitespace normalisation (runs of
  spaces, tabs and line breaks count as one space; case and everything else must match);
* the quote must occur within lines ``line - WINDOW`` .. ``line + WINDOW`` (WINDOW = 2),
  and may run across line breaks inside that window; a line number or a ReadFile prefix
  (``"    42<TAB>"``) copied at the start of the quote is ignored;
* a quote has 4 to :data:`MAX_QUOTE_CHARS` characters, a rejection at most
  :data:`MAX_CITATIONS` citations; only the first :data:`MAX_LINE_BYTES` of a line are
  compared.

Policy: a rejection whose citations are missing or do not all check out is sent back to
the judge ONCE, with what failed and why; the second answer is checked again, and if it
is still a rejection without verified evidence the judgement is a hook error (so the
hook's ``failMode`` decides, and the error says why). Allows need no citations, nor
does a reasonless Stop rejection (an approval there). The
verified citations are appended to the reason the agent receives (:func:`with_evidence`,
bounded) and kept as structured data (``citations`` in the hook result).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.decision import Citation, Usage
from judge.errors import HookError
from judge.files import open_regular
from judge.llm.tools import TranscriptTools
from judge.llm.tools.deadline import ToolCancelled, ToolDeadline
from judge.llm.tools.reader import line_index, seek_line

#: Lines either side of the cited one where the quote may be.
WINDOW = 2
MAX_CITATIONS = 10
MAX_QUOTE_CHARS = 500
MIN_QUOTE_CHARS = 4
#: Bytes of one transcript line compared with a quote.
MAX_LINE_BYTES = 1 << 20
#: Characters of one quote shown in the agent's reason, and of the whole evidence part.
REASON_QUOTE_CHARS = 160
REASON_EVIDENCE_CHARS = 800
#: Problems listed in a re-ask or an error message.
MAX_LISTED = 5

INSTRUCTIONS = f"""\

## Evidence is required for a rejection
When you reject (ok: false), your verdict object must also carry "citations": the \
transcript lines that prove the problem, e.g. \
{{"ok": false, "reason": "...", "citations": [{{"line": 42, "quote": "exact text from line 42"}}]}}.
- "line" is the line number exactly as ReadFile or GrepSearch showed it.
- "quote" is copied verbatim from that line ({MIN_QUOTE_CHARS}-{MAX_QUOTE_CHARS} \
characters; no ellipses, no paraphrase, without the line-number prefix).
- Cite 1 to 3 lines, at most {MAX_CITATIONS}. Every citation is checked against the \
transcript; a rejection whose citations do not check out is not accepted.
An approval (ok: true) needs no citations."""

NO_TRANSCRIPT = (
    "evidence: required, but this judgement has no transcript to cite, so a rejection cannot be verified"
)

_SPACE = re.compile(r"\s+")
_PREFIX = re.compile(r"^\s*(?:line\s*)?(\d+)\s*(?:\t|:\s|\|\s?)")


def normalise(text: str) -> str:
    """Whitespace runs as one space, ends stripped."""
    return _SPACE.sub(" ", text).strip()


def _strip_prefix(quote: str, line: int) -> str:
    """The quote without a copied line-number prefix of the cited line (``42\\t``, ``42: ``)."""
    found = _PREFIX.match(quote)
    if found and abs(int(found.group(1)) - line) <= WINDOW:
        return quote[found.end() :]
    return quote


def parse_citations(value: Any) -> tuple[list[Citation], list[str]]:
    """The well-formed citations of a verdict's ``citations`` value, and the problems.

    Any problem makes the evidence unverified; messages are short and name the citation.
    """
    if value is None:
        return [], ["no citations: a rejection must cite the transcript lines that prove it"]
    if not isinstance(value, list):
        return [], [
            f'\'citations\' must be a list of {{"line": N, "quote": "..."}}, got {type(value).__name__}'
        ]
    if not value:
        return [], ["'citations' is empty: cite at least one transcript line"]
    if len(value) > MAX_CITATIONS:
        return [], [f"too many citations ({len(value)}); cite at most {MAX_CITATIONS}"]
    found: list[Citation] = []
    problems: list[str] = []
    for number, item in enumerate(value, 1):
        where = f"citation {number}"
        if not isinstance(item, dict):
            problems.append(f'{where}: must be an object {{"line": N, "quote": "..."}}')
            continue
        line, quote = item.get("line"), item.get("quote")
        if isinstance(line, bool) or not isinstance(line, int):
            problems.append(f"{where}: 'line' must be an integer line number, got {_show(line)}")
            continue
        if line < 1:
            problems.append(f"{where}: line {line} does not exist (lines start at 1)")
            continue
        if not isinstance(quote, str):
            problems.append(f"{where} (line {line}): 'quote' must be a string, got {_show(quote)}")
            continue
        if len(quote) > MAX_QUOTE_CHARS:
            problems.append(
                f"{where} (line {line}): the quote is {len(quote)} characters; at most {MAX_QUOTE_CHARS}"
            )
            continue
        text = normalise(_strip_prefix(quote, line))
        if len(text) < MIN_QUOTE_CHARS:
            problems.append(
                f"{where} (line {line}): the quote is too short (at least {MIN_QUOTE_CHARS} characters)"
            )
            continue
        found.append(Citation(line=line, quote=text))
    return found, problems


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def read_lines(path: Path, first: int, last: int, budget: ToolDeadline, block: int = 1 << 18) -> list[str]:
    """Lines ``first``..``last`` of ``path`` (1-based; fewer past the end), each at most
    :data:`MAX_LINE_BYTES` long, through the tools' line index."""
    index = line_index(path, block, budget)
    last = min(last, index.lines)
    out: list[str] = []
    if first > last:
        return out
    with open_regular(path, "transcript") as handle:
        seek_line(handle, index, first, block, budget)
        for number in range(first, last + 1):
            data = handle.readline(MAX_LINE_BYTES)
            if not data:
                break
            if not data.endswith(b"\n") and len(data) == MAX_LINE_BYTES and number < last:
                seek_line(handle, index, number + 1, block, budget)  # skip the rest of a huge line
            out.append(data.decode("utf-8", "replace"))
    return out


def check_citation(citation: Citation, path: Path, budget: ToolDeadline, total: int) -> str | None:
    """Why ``citation`` does not check out, or None when its quote is on (or near) its line."""
    if citation.line > total:
        return f"line {citation.line}: the transcript has only {total} lines"
    first = max(1, citation.line - WINDOW)
    lines = read_lines(path, first, citation.line + WINDOW, budget)
    if citation.quote in normalise(" ".join(lines)):
        return None
    last = first + len(lines) - 1
    return (
        f"line {citation.line}: the quote {_clip(citation.quote, 80)!r} is not on lines {first}-{last} "
        "(quote the line exactly as ReadFile shows it)"
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Review:
    """The check of one rejection: the verified citations, or what failed."""

    citations: list[Citation] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return bool(self.citations) and not self.problems

    def summary(self) -> str:
        listed = self.problems[:MAX_LISTED]
        more = len(self.problems) - len(listed)
        return "; ".join(listed) + (f"; and {more} more" if more > 0 else "")


def review_rejection(verdict: dict[str, Any], path: Path, budget: ToolDeadline) -> Review:
    """Check the ``citations`` of a rejection against the rendered transcript at ``path``."""
    citations, problems = parse_citations(verdict.get("citations"))
    if problems:
        return Review(citations, problems)
    total = line_index(path, budget=budget).lines
    for citation in citations:
        problem = check_citation(citation, path, budget, total)
        if problem is not None:
            problems.append(problem)
    return Review(citations, problems)


def reask_message(review: Review) -> str:
    """The one re-ask: what failed, and what a valid answer looks like."""
    return (
        f"Your rejection's evidence did not check out: {review.summary()}. Evidence is required for a "
        "rejection. Check the transcript again (ReadFile shows line numbers) and reply with only "
        'the verdict JSON: {"ok": false, "reason": "...", "citations": [{"line": N, "quote": '
        '"text copied exactly from line N"}]}, or {"ok": true} if the check passes after all.'
    )


def unverified_error(review: Review, usage: Usage | None = None) -> HookError:
    """The hook error after the re-ask (the hook's failMode decides); ``usage``: what the
    judgement's calls cost, so the hook result still reports it."""
    return HookError(
        "evidence: required, and the judge's rejection cites no verified evidence even after "
        f"a re-ask ({review.summary()}); the hook's failMode applies",
        usage=usage,
    )


def with_evidence(reason: str | None, citations: list[Citation]) -> str | None:
    """``reason`` followed by ``Evidence: line 42: "..."; ...`` (bounded in size)."""
    if not citations:
        return reason
    parts: list[str] = []
    size = 0
    for number, citation in enumerate(citations):
        part = f'line {citation.line}: "{_clip(citation.quote, REASON_QUOTE_CHARS)}"'
        if parts and size + len(part) > REASON_EVIDENCE_CHARS:
            parts.append(f"(+{len(citations) - number} more)")
            break
        parts.append(part)
        size += len(part) + 2
    evidence = "Evidence: " + "; ".join(parts)
    return f"{reason}\n{evidence}" if reason else evidence


class EvidenceCheck:
    """The evidence policy of one judgement: review rejections, allow one re-ask.

    ``tools`` are the judgement's transcript tools (None: no transcript);
    ``reasonless_allows``: a rejection without a reason is an approval (Stop events), so it
    needs no citations. ``reasked`` and
    ``failed`` (citation problems seen) are kept for traces and benchmarks.
    """

    instructions = INSTRUCTIONS

    def __init__(self, tools: TranscriptTools | None, *, reasonless_allows: bool = False) -> None:
        self.reasonless_allows = reasonless_allows
        self.path = tools.path if tools is not None else None
        self.budget = tools.budget if tools is not None else ToolDeadline()
        self.reasked = False
        self.failed = 0

    def needed(self, ok: bool, reason: str | None) -> bool:
        """Whether a verdict must be backed by citations: a rejection, except a reasonless
        one where that is an approval (Stop events, ``reasonless_allows``)."""
        return not ok and (reason is not None or not self.reasonless_allows)

    def review(self, verdict: dict[str, Any]) -> Review:
        """Check a rejection (runs on the judgement's tool threads: it reads the transcript).

        Without a transcript nothing can be verified: a hook error at once (no re-ask)."""
        if self.path is None:
            raise HookError(NO_TRANSCRIPT)
        try:
            result = review_rejection(verdict, self.path, self.budget)
        except ToolCancelled:
            raise HookError("the evidence check stopped: the judgement's time limit was reached") from None
        except OSError as exc:
            raise HookError(f"the evidence check cannot read the transcript: {exc.strerror or exc}") from None
        self.failed += len(result.problems)
        return result
