"""Few-shot demos for ``judge tune``: labelled TRAIN cases, with their rationales, written
into a candidate prompt as examples for the judge.

The optimizer makes a demos edit of a parent prompt by picking ``k`` train cases —
first the ones the parent gets wrong (the corrections teach most), then ones with a
rationale, both labels in turn (whole pairs for ``--objective pairwise``) — and placing
them, between two Jinja comments the model never sees, just before the line with
``$ARGUMENTS``; a second demos edit replaces the section. Only train cases are ever
offered to :func:`pick_demos` (the caller asks the evaluator for ``train``), so dev and
test items never reach a prompt.

A demo is data inside a Jinja template and inside the judge's instructions, so its text
is neutralised (:func:`neutralise`): no template syntax, no ``$ARGUMENTS``, no tags that
could close the judge's instruction or context blocks.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from pathlib import Path

from judge.evaluation.suite import Case, resolve_path
from judge.files import open_regular

START = "{# judge:demos #}"
END = "{# /judge:demos #}"
HEADER = "Examples labelled by people (decide new cases the same way):"
ANSWER_CHARS = 600
TRANSCRIPT_CHARS = 500
RATIONALE_CHARS = 400
_SECTION = re.compile(re.escape(START) + r".*?" + re.escape(END) + r"\n?", re.DOTALL)
_TEMPLATE_SYNTAX = re.compile(r"([{%#])([{%#}])")


def neutralise(text: str) -> str:
    """``text`` made inert inside a prompt template: ``{{ {% {# %} #} }}`` get a space,
    ``$ARGUMENTS`` loses its meaning and ``<`` becomes ``‹`` (no tag can be opened or closed)."""
    text = text.replace("$ARGUMENTS", "$ ARGUMENTS").replace("<", "‹")
    previous = None
    while previous != text:  # "{{{" and "}}}" need two passes
        previous = text
        text = _TEMPLATE_SYNTAX.sub(r"\1 \2", text).replace("}}", "} }")
    return text


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + " ...[truncated]"


def _transcript_head(case: Case, base_dir: Path | None) -> str | None:
    if case.transcript is not None:
        return case.transcript
    if case.transcript_path is None or base_dir is None:
        return None
    try:
        with open_regular(resolve_path(base_dir, case.transcript_path), "transcript") as fh:
            return fh.read(TRANSCRIPT_CHARS * 4).decode("utf-8", "replace")
    except OSError:
        return None


def case_text(case: Case, base_dir: Path | None = None) -> str:
    """What a demo shows of a case: the start of its transcript and its final answer (or,
    for other events, its context without the transcript path)."""
    parts = []
    head = _transcript_head(case, base_dir)
    if head:
        parts.append(f"Transcript (start): {_clip(head, TRANSCRIPT_CHARS)}")
    answer = case.context.get("final_output")
    if isinstance(answer, str):
        parts.append(f"Final answer: {_clip(answer, ANSWER_CHARS)}")
    else:
        shown = {k: v for k, v in case.context.items() if k != "execution_summary"}
        parts.append(f"Context: {_clip(str(shown), ANSWER_CHARS)}")
    return "\n".join(parts)


def render_demo(case: Case, base_dir: Path | None = None) -> str:
    why = f" Why: {_clip(case.rationale, RATIONALE_CHARS)}" if case.rationale else ""
    body = neutralise(f"{case_text(case, base_dir)}\nPeople's decision: {case.label}.{why}")
    return f"<example>\n{body}\n</example>"


def without_demos(prompt: str) -> str:
    """``prompt`` without its demos section(s)."""
    return _SECTION.sub("", prompt)


def with_demos(prompt: str, demos: Sequence[Case], base_dir: Path | None = None) -> str:
    """``prompt`` with ``demos`` as its (only) demos section, just before ``$ARGUMENTS``."""
    section = "\n".join([START, HEADER, *(render_demo(c, base_dir) for c in demos), END]) + "\n"
    lines = without_demos(prompt).splitlines(keepends=True)
    at = next((n for n, line in enumerate(lines) if "$ARGUMENTS" in line), len(lines))
    if at == len(lines) and lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return "".join(lines[:at]) + section + "".join(lines[at:])


def _priority(case: Case, wrong: set[str], rng: random.Random) -> tuple[bool, bool, float]:
    return (case.id not in wrong, case.rationale is None, rng.random())


def pick_demos(
    train: Sequence[Case],
    wrong: set[str],
    k: int,
    rng: random.Random,
    pairs: dict[str, tuple[str, str]] | None = None,
) -> list[Case]:
    """Up to ``k`` labelled cases of ``train`` (see the module docstring)."""
    labelled = [c for c in train if c.label is not None]
    if pairs:
        by_id = {c.id: c for c in labelled}
        groups = [(g, by_id[a], by_id[b]) for g, (a, b) in pairs.items() if a in by_id and b in by_id]
        ranked = sorted(
            groups,
            key=lambda g: (
                g[1].id not in wrong and g[2].id not in wrong,
                g[1].rationale is None and g[2].rationale is None,
                rng.random(),
            ),
        )
        return [c for _, good, bad in ranked[: max(1, k // 2)] for c in (good, bad)]
    pools = {
        label: sorted((c for c in labelled if c.label == label), key=lambda c: _priority(c, wrong, rng))
        for label in ("block", "allow")
    }
    picked: list[Case] = []
    while len(picked) < k and (pools["block"] or pools["allow"]):
        for label in ("block", "allow"):
            if pools[label] and len(picked) < k:
                picked.append(pools[label].pop(0))
    return picked
