from __future__ import annotations

import json
import os

import pytest

from judge.errors import HookError
from judge.llm.prompts import library_dir, render_prompt

CONTEXT = {"hook_event_name": "Stop", "final_output": "Done.", "current_turn": 2}


def test_arguments_replaced_everywhere_with_pretty_json():
    out = render_prompt("A $ARGUMENTS B $ARGUMENTS", CONTEXT)
    pretty = json.dumps(CONTEXT, indent=2, ensure_ascii=False)
    assert out == f"A {pretty} B {pretty}"


def test_a_template_error_next_to_arguments_names_what_the_author_wrote():
    with pytest.raises(HookError) as caught:
        render_prompt("Check the final answer: {{ final_output $ARGUMENTS }}", CONTEXT)
    assert str(caught.value) == "prompt template error at line 1: unexpected char '$' at 40"


def test_context_appended_without_arguments():
    out = render_prompt("Check the answer.", CONTEXT)
    assert out.startswith("Check the answer.\n\n{")
    assert json.loads(out.split("\n\n", 1)[1]) == CONTEXT


def test_agent_content_is_data_not_template_code():
    answer = "{{ 7*7 }} {% include '/etc/passwd' %} $ARGUMENTS {# x #}"
    context = {**CONTEXT, "final_output": answer}
    out = render_prompt("Answer: {{ final_output }}\n$ARGUMENTS", context)
    assert out.startswith(f"Answer: {answer}\n")  # inserted verbatim, not evaluated
    assert json.dumps(answer) in out
    assert "49" not in out and "root:" not in out
    assert out.count('"hook_event_name"') == 1  # $ARGUMENTS inside data is not expanded


def test_context_variables_and_strict_undefined():
    assert render_prompt("{{ hook_event_name }}/{{ context.current_turn }} $ARGUMENTS", CONTEXT).startswith(
        "Stop/2 "
    )
    with pytest.raises(HookError, match="tool_name"):
        render_prompt("{{ tool_name }}", CONTEXT)


def test_syntax_errors_and_sandbox():
    with pytest.raises(HookError, match="line 2"):
        render_prompt("ok\n{% if %}", CONTEXT)
    with pytest.raises(HookError, match="prompt template error"):
        render_prompt("{{ ''.__class__.__mro__[1].__subclasses__() }}", CONTEXT)


def test_library_includes():
    assert library_dir() is not None
    for name in ("completeness.j2", "investigation.j2", "evidence.j2", "format_marker.j2"):
        out = render_prompt(f'{{% include "{name}" %}}', CONTEXT)
        assert len(out) > 200
    prefixed = render_prompt('{% include "prompts/completeness.j2" %}', CONTEXT)
    assert "EVERYTHING the user asked" in prefixed
    marker = render_prompt('{% set marker = "DONE" %}{% include "format_marker.j2" %}$ARGUMENTS', CONTEXT)
    assert 'end with the exact marker\n"DONE"' in marker


def test_config_folder_includes_and_escapes(tmp_path):
    (tmp_path / "mine.j2").write_text("Custom check for {{ agent_name | default('agent') }}.\n$ARGUMENTS")
    out = render_prompt('{% include "mine.j2" %}', CONTEXT, tmp_path)
    assert out.startswith("Custom check for agent.") and '"final_output": "Done."' in out
    secret = tmp_path.parent / "secret.txt"
    secret.write_text("TOP SECRET")
    for name in ("../secret.txt", "/etc/passwd", str(secret)):
        with pytest.raises(HookError, match="not found"):
            render_prompt(f'{{% include "{name}" %}}', CONTEXT, tmp_path)
    os.symlink(secret, tmp_path / "link.j2")
    with pytest.raises(HookError, match="not found"):
        render_prompt('{% include "link.j2" %}', CONTEXT, tmp_path)


def test_custom_arguments_text():
    out = render_prompt("X $ARGUMENTS", CONTEXT, arguments="<ctx/>")
    assert out == "X <ctx/>"
