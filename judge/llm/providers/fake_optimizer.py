"""``fake:optimizer``: a deterministic stand-in for the LLM that ``judge tune`` asks for
critiques and edited prompts, so the whole tuning loop runs offline (no key, no network).

It answers the two requests of :mod:`judge.tuning.optimizer`: a critique request gets a
fixed critique; an edit request gets the requested number of versions of the current
prompt, each adding one general rule (``$ARGUMENTS`` and the answer format kept). Paired
with a ``fake:heuristic`` judge it shows what tuning writes, not a real improvement.
"""

from __future__ import annotations

import re
from typing import Any

from judge.llm.providers.base import Message, ToolSpec

RULES: tuple[str, ...] = (
    'Block an answer that promises future work ("I will", "next step") instead of reporting it done.',
    "Block an answer that leaves placeholders such as TODO or TBD.",
    "Allow a short answer when it fully answers a short question.",
    "In a block reason, name exactly what is missing so the agent can fix it.",
    "Judge only what the user asked for; do not block for style.",
)
CRITIQUE = (
    "The prompt does not state concrete rules for unfinished answers (promises, placeholders) "
    "and does not say when a short answer is enough, so the judge guesses."
)
_CURRENT = re.compile(r"<CURRENT_PROMPT>\n(.*?)\n</CURRENT_PROMPT>", re.DOTALL)
_COUNT = re.compile(r"Write (\d+) different improved versions")


def optimizer_reply(messages: list[Message], tools: list[ToolSpec]) -> Any:
    """A critique, or ``<PROMPT>`` blocks with edited prompts (see the module docstring)."""
    request = next((m.content for m in reversed(messages) if m.role == "user"), "")
    count = _COUNT.search(request)
    current = _CURRENT.search(request)
    if count is None or current is None:
        return CRITIQUE
    prompt = current.group(1).rstrip()
    versions = [f"{prompt}\n\n{RULES[i % len(RULES)]}" for i in range(int(count.group(1)))]
    return "\n".join(f"<PROMPT>\n{version}\n</PROMPT>" for version in versions)
