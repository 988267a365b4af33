"""Context fields cannot shadow template variables: only the event's documented fields are
top-level names; everything else is under ``context.``."""

from __future__ import annotations

import pytest

from judge.errors import HookError
from judge.llm.prompts import render_prompt


def test_a_context_field_named_like_a_template_variable_changes_nothing() -> None:
    context = {"hook_event_name": "Stop", "final_output": "All done.", "marker": "ANYTHING GOES"}
    out = render_prompt('{% include "format_marker.j2" %}$ARGUMENTS', context, arguments="")
    assert 'final_output ends with "Task complete."' in out
    assert "ANYTHING GOES" not in out
    assert render_prompt("{{ context.marker }}$ARGUMENTS", context, arguments="") == "ANYTHING GOES"


def test_a_context_field_cannot_replace_jinja_globals() -> None:
    context = {"hook_event_name": "Stop", "final_output": "x", "range": 5, "context": "spoof"}
    out = render_prompt("{% for i in range(3) %}{{ i }}{% endfor %}$ARGUMENTS", context, arguments="")
    assert out == "012"
    assert render_prompt("{{ context.final_output }}$ARGUMENTS", context, arguments="") == "x"


def test_documented_fields_are_top_level_only_for_their_event() -> None:
    pre = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "final_output": "not mine"}
    assert render_prompt("{{ tool_name }}$ARGUMENTS", pre, arguments="") == "Bash"
    with pytest.raises(HookError, match="'final_output' is undefined"):
        render_prompt("{{ final_output }}", pre)
    assert render_prompt("{{ context.final_output }}$ARGUMENTS", pre, arguments="") == "not mine"
