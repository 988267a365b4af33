"""Compiled prompt templates are cached without weakening the data-not-code rule."""

from __future__ import annotations

import json
import os
import time

from judge.llm import prompts
from judge.llm.prompts import PLACEHOLDER, render_prompt

CONTEXT = {"hook_event_name": "Stop", "final_output": "Done."}


def test_compiled_once_per_template_and_folder(tmp_path):
    template = f"Cache check {time.time_ns()}: {{{{ final_output }}}} $ARGUMENTS"
    before = prompts._compiled.cache_info()
    first = render_prompt(template, CONTEXT, tmp_path)
    second = render_prompt(template, {**CONTEXT, "final_output": "Other."}, tmp_path)
    after = prompts._compiled.cache_info()
    assert after.misses - before.misses == 1 and after.hits - before.hits == 1
    assert first.startswith("Cache check") and "Done.: {" not in first
    assert ": Done. {" in first and ": Other. {" in second
    assert json.loads(second.split(" ", 4)[4]) == {**CONTEXT, "final_output": "Other."}


def test_context_holding_the_placeholder_is_not_expanded():
    answer = f"look: {PLACEHOLDER} and $ARGUMENTS"
    context = {**CONTEXT, "final_output": answer}
    out = render_prompt("Answer: {{ final_output }}\n$ARGUMENTS", context)
    assert out.startswith(f"Answer: {answer}\n")
    assert out.count('"hook_event_name"') == 1
    nested = {**CONTEXT, "tool_input": {"args": [1, {"k": PLACEHOLDER}]}}
    out = render_prompt("{{ context.tool_input.args[1].k }} | $ARGUMENTS", nested)
    assert out.startswith(f"{PLACEHOLDER} | {{")
    assert out.count('"hook_event_name"') == 1


def test_edited_include_is_reloaded(tmp_path):
    included = tmp_path / "check.j2"
    included.write_text("first version $ARGUMENTS")
    template = '{% include "check.j2" %}'
    assert render_prompt(template, CONTEXT, tmp_path).startswith("first version {")
    included.write_text("second version $ARGUMENTS")
    later = time.time() + 5
    os.utime(included, (later, later))
    assert render_prompt(template, CONTEXT, tmp_path).startswith("second version {")
