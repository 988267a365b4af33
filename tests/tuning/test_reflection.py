"""--optimizer-template: a policy shown to the optimizer (never pasted into a prompt), or a
whole reflection template; bad files are refused with a located message."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from judge.tuning.call_budget import BudgetedLLM, CallBudget
from judge.tuning.optimizer import Optimizer, OptimizerSettings
from judge.tuning.reflection import (
    MAX_TEMPLATE_BYTES,
    TemplateError,
    critique_request,
    edit_request,
    load_optimizer_template,
    merge_request,
)
from tests.tuning.test_optimizer import PROMPT, ScriptedLLM, SpyEvaluator

POLICY = (
    "Our agents answer customers about refunds. A refund that is only promised is not done. "
    "Never block an answer for its tone."
)


def test_a_policy_reaches_every_optimizer_request_and_stays_out_of_the_seed_prompt(tmp_path: Path) -> None:
    path = tmp_path / "policy.md"
    path.write_text(POLICY + "\n")
    template = load_optimizer_template(path)
    assert template.policy == POLICY and template.reflection is None
    for request in (
        critique_request(PROMPT, "CASES", template),
        edit_request(PROMPT, "CASES", "CRITIQUE", 2, template),
        merge_request(PROMPT, PROMPT, template),
    ):
        assert f"<POLICY>\n{POLICY}\n</POLICY>" in request and "do not paste it" in request
    assert "<POLICY>" not in critique_request(PROMPT, "CASES", None)


async def test_an_edit_that_pastes_the_policy_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "policy.md"
    path.write_text(POLICY)
    template = load_optimizer_template(path)
    pasted = PROMPT.replace("Judge it.", "Judge it. " + POLICY.replace(". ", ".\n"))
    better = PROMPT.replace("Judge it.", "Block odd items.")
    llm = ScriptedLLM(["critique", f"<PROMPT>{pasted}</PROMPT><PROMPT>{better}</PROMPT>"])
    budget = CallBudget(None)
    settings = OptimizerSettings(rounds=1, beam=1, edits=2, demos=0, template=template)
    result = await Optimizer(PROMPT, SpyEvaluator(), BudgetedLLM(llm, budget), budget, settings).run()
    refused = result.candidates[1]
    assert refused.status == "invalid" and "pastes the --optimizer-template policy" in (refused.note or "")
    assert result.winner.prompt.strip() == better
    assert POLICY in llm.requests[0] and POLICY not in result.winner.prompt


def test_a_reflection_template_replaces_the_critique_request(tmp_path: Path) -> None:
    path = tmp_path / "reflect.txt"
    path.write_text(
        "Domain: refunds. {not a format field}\nPrompt:\n$PROMPT\nMistakes:\n$EXAMPLES\nBe brief."
    )
    template = load_optimizer_template(path)
    assert template.reflection is not None and template.policy is None
    request = critique_request("P {x} $ARGUMENTS", "case says $PROMPT literally", template)
    assert request == (
        "Domain: refunds. {not a format field}\nPrompt:\nP {x} $ARGUMENTS\nMistakes:\n"
        "case says $PROMPT literally\nBe brief."
    )
    # the edit request stays the built-in one (it must ask for <PROMPT> blocks)
    assert "<PROMPT>" in edit_request("P", "E", "C", 1, template)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "file not found"),
        ("", "the file is empty"),
        ("Fix it using $EXAMPLES", r"must also have \$PROMPT"),
        (b"\xff\xfe\x00", "not UTF-8 text"),
        ("x" * (MAX_TEMPLATE_BYTES + 1), "larger than"),
    ],
)
def test_bad_template_files_are_refused_with_their_name(
    tmp_path: Path, content: str | bytes | None, message: str
) -> None:
    path = tmp_path / "template.txt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(TemplateError, match=message) as caught:
        load_optimizer_template(path)
    assert "--optimizer-template" in str(caught.value) and "template.txt" in str(caught.value)


def test_a_fifo_or_a_folder_is_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(TemplateError, match="not a regular file"):
        load_optimizer_template(fifo)  # returns at once: never blocks on the pipe
    with pytest.raises(TemplateError, match="cannot read"):
        load_optimizer_template(tmp_path)
