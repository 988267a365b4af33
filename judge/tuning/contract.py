"""What every edited prompt must keep: ``$ARGUMENTS`` and the answer schema.

A candidate prompt from the optimizer LLM is checked against the original hook prompt:

* ``$ARGUMENTS``: if the original has it, the candidate must too. A candidate that
  dropped it is repaired (the placeholder is appended, which is where the engine would
  put the context anyway); one that repeats it more often than the original is rejected
  (the context would be sent twice).
* the answer schema: if the original asks for ``{"ok": true}`` / ``{"ok": false,
  "reason": ...}``, the candidate must ask for both; a candidate that lost them is
  repaired by appending the standard instruction.
* the prompt is a Jinja2 template: one that does not parse, or that uses template
  variables the original does not, is rejected.
* empty or runaway-long candidates are rejected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import jinja2
from jinja2 import meta

ARGUMENTS = "$ARGUMENTS"
OK_TRUE = re.compile(r'\{\s*"ok"\s*:\s*true\s*\}')
OK_FALSE = re.compile(r'\{\s*"ok"\s*:\s*false\s*,\s*"reason"\s*:')
SCHEMA_REPAIR = (
    'Respond with JSON only:\n- {"ok": true} if the check passes\n'
    '- {"ok": false, "reason": "<what the agent must still do>"} if it does not'
)
MAX_GROWTH_CHARS = 4000


@dataclass
class Checked:
    """A validated candidate: the (possibly repaired) text, or why it was rejected."""

    prompt: str | None
    repairs: list[str] = field(default_factory=list)
    rejected: str | None = None


def has_schema(prompt: str) -> bool:
    return OK_TRUE.search(prompt) is not None and OK_FALSE.search(prompt) is not None


def check_candidate(candidate: str, original: str) -> Checked:
    """Validate ``candidate`` against ``original``; repair what can be repaired."""
    text = candidate.strip("\n")
    if not text.strip():
        return Checked(None, rejected="empty prompt")
    limit = max(2 * len(original), len(original) + MAX_GROWTH_CHARS)
    if len(text) > limit:
        return Checked(None, rejected=f"too long ({len(text)} characters; limit {limit})")
    repairs: list[str] = []
    want_args = original.count(ARGUMENTS)
    got_args = text.count(ARGUMENTS)
    if want_args and got_args > want_args:
        return Checked(None, rejected=f"repeats {ARGUMENTS} ({got_args} times; the original has {want_args})")
    if want_args and got_args == 0:
        text = text.rstrip() + f"\n\n{ARGUMENTS}"
        repairs.append(f"restored {ARGUMENTS}")
    if has_schema(original) and not has_schema(text):
        text = text.rstrip() + "\n\n" + SCHEMA_REPAIR
        repairs.append("restored the answer schema")
    env = jinja2.Environment()
    try:
        names = meta.find_undeclared_variables(env.parse(text))
    except jinja2.TemplateSyntaxError as exc:
        return Checked(None, rejected=f"not a valid Jinja2 template: {exc.message} (line {exc.lineno})")
    try:
        known = meta.find_undeclared_variables(env.parse(original))
    except jinja2.TemplateSyntaxError:
        known = set()
    unknown = sorted(names - known - {"context"})
    if unknown:
        return Checked(None, rejected=f"uses template variables the original does not: {', '.join(unknown)}")
    return Checked(text + "\n", repairs=repairs)
