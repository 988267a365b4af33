"""What ``judge tune`` asks its optimizer model: a critique of a prompt's train mistakes, edited
prompts, and the merge of two prompts; and the user's ``--optimizer-template``.

Each mistake is shown with the people's label, their rationale when the case has one
(why it has its label: the most useful thing a labeller can give), the judge's decision
and reason, and what the judge looked at.

``--optimizer-template FILE`` carries a domain policy or a whole reflection template,
kept out of the judge's (seed) prompt:

* a file with ``$EXAMPLES`` is a reflection template: it replaces the built-in critique
  request, with ``$PROMPT`` (the current prompt, required) and ``$EXAMPLES`` (the
  mistakes) filled in by plain text substitution;
* any other file is a policy: it is shown, between ``<POLICY>`` tags, in every critique,
  edit and merge request. An edited prompt that pastes a long policy in whole is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from judge.errors import JudgeError
from judge.files import RefusedFile, read_text
from judge.tuning.candidates import ItemOutcome

MAX_TEMPLATE_BYTES = 64 * 1024
#: A policy at least this long may not be pasted whole into a prompt.
PASTED_POLICY_CHARS = 80
RATIONALE_CHARS = 800

CRITIQUE_TEMPLATE = """\
You are improving the prompt of an LLM judge. The judge reads an AI agent's context \
(inserted where the prompt says $ARGUMENTS) and answers {{"ok": true}} to allow or \
{{"ok": false, "reason": "..."}} to block. People labelled each case allow or block, \
often saying why.
{policy}
The current prompt:
<CURRENT_PROMPT>
{prompt}
</CURRENT_PROMPT>

The judge disagreed with the people on these cases:
{examples}

Explain concisely why the prompt leads the judge to these mistakes: what the prompt \
fails to say, says ambiguously, or says wrongly. Use the people's reasons. Do not write \
a new prompt yet."""

EDIT_TEMPLATE = """\
You are improving the prompt of an LLM judge.
{policy}
The current prompt:
<CURRENT_PROMPT>
{prompt}
</CURRENT_PROMPT>

The judge disagreed with the people on these cases:
{examples}

A critique of the prompt:
<CRITIQUE>
{critique}
</CRITIQUE>

Write {n} different improved versions of the prompt that fix these problems without \
overfitting to the examples (state general rules, not facts about these cases). Every \
version MUST keep the placeholder $ARGUMENTS exactly once and MUST keep the answer format: \
{{"ok": true}} to allow, {{"ok": false, "reason": "..."}} to block.
Return each version between <PROMPT> and </PROMPT> tags and nothing else."""

MERGE_TEMPLATE = """\
You are improving the prompt of an LLM judge. Two versions of its prompt each judge \
some cases right that the other gets wrong.
{policy}
<PROMPT_A>
{a}
</PROMPT_A>

<PROMPT_B>
{b}
</PROMPT_B>

Write one version that keeps the rules of both, resolving any contradiction between \
them. It MUST keep the placeholder $ARGUMENTS exactly once and the answer format: \
{{"ok": true}} to allow, {{"ok": false, "reason": "..."}} to block.
Return it between <PROMPT> and </PROMPT> tags and nothing else."""

POLICY_BLOCK = """
The team's policy for this judge (use it to decide what the prompt should say; do not \
paste it into the prompt):
<POLICY>
{policy}
</POLICY>
"""

_PROMPT_BLOCK = re.compile(r"<PROMPT>\s*\n?(.*?)\n?\s*</PROMPT>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```[a-zA-Z]*\n(.*)\n```$", re.DOTALL)
_PLACEHOLDER = re.compile(r"\$(?:EXAMPLES|PROMPT)")


class TemplateError(JudgeError):
    """The ``--optimizer-template`` file cannot be used."""


@dataclass(frozen=True)
class OptimizerTemplate:
    """``policy`` (shown in every request) or ``reflection`` (the critique request)."""

    source: str
    policy: str | None = None
    reflection: str | None = None

    def pasted(self, prompt: str) -> bool:
        """Whether ``prompt`` holds the whole (long) policy: it must stay out of prompts."""
        policy = (self.policy or "").strip()
        return len(policy) >= PASTED_POLICY_CHARS and _squash(policy) in _squash(prompt)


def _squash(text: str) -> str:
    return " ".join(text.split())


def load_optimizer_template(path: str | Path) -> OptimizerTemplate:
    """Read ``--optimizer-template``; :class:`TemplateError` saying what is wrong and where."""
    where = str(path)
    try:
        text = read_text(path, "optimizer template", MAX_TEMPLATE_BYTES)
    except FileNotFoundError:
        raise TemplateError(f"--optimizer-template {where}: file not found") from None
    except RefusedFile as exc:
        raise TemplateError(f"--optimizer-template {exc}") from None
    except UnicodeDecodeError:
        raise TemplateError(f"--optimizer-template {where}: not UTF-8 text") from None
    except OSError as exc:
        raise TemplateError(f"--optimizer-template {where}: cannot read: {exc.strerror or exc}") from None
    if not text.strip():
        raise TemplateError(f"--optimizer-template {where}: the file is empty")
    if "$EXAMPLES" not in text:
        return OptimizerTemplate(where, policy=text.strip())
    if "$PROMPT" not in text:
        raise TemplateError(
            f"--optimizer-template {where}: a reflection template (it has $EXAMPLES) must also "
            "have $PROMPT, where the current prompt goes"
        )
    return OptimizerTemplate(where, reflection=text)


def examples_text(
    errors: list[ItemOutcome], describe: Callable[[str], str], rationale: Callable[[str], str | None]
) -> str:
    """The mistakes as the optimizer reads them (see the module docstring)."""
    parts = []
    for n, item in enumerate(errors, 1):
        said = item.decision or "no decision"
        why = f"; its reason: {item.reason}" if item.reason else ""
        if item.error:
            why += f"; error: {item.error}"
        because = rationale(item.id)
        people = f"People said: {item.label}"
        if because:
            clipped = (
                because if len(because) <= RATIONALE_CHARS else because[:RATIONALE_CHARS] + " ...[truncated]"
            )
            people += f", because: {clipped}"
        parts.append(f"<CASE {n}>\n{people}\nThe judge said: {said}{why}.\n{describe(item.id)}\n</CASE {n}>")
    return "\n".join(parts)


def _policy(template: OptimizerTemplate | None) -> str:
    if template is None or template.policy is None:
        return ""
    return POLICY_BLOCK.format(policy=template.policy)


def critique_request(prompt: str, examples: str, template: OptimizerTemplate | None) -> str:
    if template is not None and template.reflection is not None:
        # one pass of plain substitution: braces (and a "$PROMPT" inside a case) stay as they are
        values = {"$EXAMPLES": examples, "$PROMPT": prompt}
        return _PLACEHOLDER.sub(lambda m: values[m.group(0)], template.reflection)
    return CRITIQUE_TEMPLATE.format(prompt=prompt, examples=examples, policy=_policy(template))


def edit_request(
    prompt: str, examples: str, critique: str, n: int, template: OptimizerTemplate | None
) -> str:
    return EDIT_TEMPLATE.format(
        prompt=prompt, examples=examples, critique=critique, n=n, policy=_policy(template)
    )


def merge_request(a: str, b: str, template: OptimizerTemplate | None) -> str:
    return MERGE_TEMPLATE.format(a=a, b=b, policy=_policy(template))


def parse_proposals(text: str) -> list[str]:
    """The prompts between ``<PROMPT>`` tags (a surrounding code fence is removed)."""
    out = []
    for block in _PROMPT_BLOCK.findall(text):
        body = block.strip()
        fenced = _FENCE.match(body)
        out.append(fenced.group(1) if fenced else body)
    return out
