"""``fake:optimizer``: a deterministic stand-in for the LLM that ``judge tune`` asks for
critiques, edited prompts and merges, so the whole tuning loop runs offline (no key, no
network).

* a critique request gets the people's reasons it was shown (their rationales), or a
  fixed critique when none was;
* an edit request gets the requested number of versions of the current prompt, each
  adding one rule: first the rules the rationales of the shown mistakes state — a
  rationale that quotes a phrase (``block: it says "pending" ...``) becomes ``Block an
  answer that says "pending".`` — then general ones (``$ARGUMENTS`` and the answer
  format kept);
* a merge request gets prompt A followed by the lines of prompt B that A lacks.

Paired with a ``fake:heuristic`` judge, which obeys such phrase rules, tuning runs end to
end and the rationales, demos and merges change what it finds; it shows the mechanics,
not what a real model would learn.
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
_RATIONALE = re.compile(r"^People said: (allow|block), because: (.*)$", re.MULTILINE)
_QUOTED = re.compile(r"\bsays?\s+[\"“]([^\"”\n]{2,80})[\"”]")
_MERGE = re.compile(r"<PROMPT_A>\n(.*?)\n</PROMPT_A>.*?<PROMPT_B>\n(.*?)\n</PROMPT_B>", re.DOTALL)


def rationale_rules(request: str) -> list[str]:
    """One rule per phrase the shown rationales quote, in the order shown (no repeats)."""
    rules: list[str] = []
    for label, because in _RATIONALE.findall(request):
        for phrase in _QUOTED.findall(because):
            rule = f'{label.capitalize()} an answer that says "{phrase}".'
            if rule not in rules:
                rules.append(rule)
    return rules


def _merge(a: str, b: str) -> str:
    kept = a.rstrip("\n").split("\n")
    extra = [line for line in b.split("\n") if line.strip() and line not in kept]
    return "\n".join(kept + ([""] if extra else []) + extra)


def optimizer_reply(messages: list[Message], tools: list[ToolSpec]) -> Any:
    """A critique, or ``<PROMPT>`` blocks with edited or merged prompts (module docstring)."""
    request = next((m.content for m in reversed(messages) if m.role == "user"), "")
    merge = _MERGE.search(request)
    if merge is not None:
        return f"<PROMPT>\n{_merge(merge.group(1), merge.group(2))}\n</PROMPT>"
    count = _COUNT.search(request)
    current = _CURRENT.search(request)
    derived = rationale_rules(request)
    if count is None or current is None:
        if derived:
            return "The prompt does not state the rules the people's reasons give: " + " ".join(derived)
        return CRITIQUE
    prompt = current.group(1).rstrip()
    rules = [rule for rule in derived + list(RULES) if rule not in prompt] or list(RULES)
    versions = [f"{prompt}\n\n{rules[i % len(rules)]}" for i in range(int(count.group(1)))]
    return "\n".join(f"<PROMPT>\n{version}\n</PROMPT>" for version in versions)
