"""Hook templates cannot ask for unbounded memory or time with `*`, `+`, `~`, `**` or `range`:
such a render is a template error (the hook's failMode decides) and `judge validate` says
so; ordinary templates render as before."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from judge.errors import HookError
from judge.llm.prompts import render_prompt
from judge.llm.template_limits import MAX_LENGTH, MAX_RANGE_ITEMS

STOP = {"hook_event_name": "Stop", "final_output": "Done."}


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{{ 'x' * 3000000000 }}", "'*': the result would be longer than"),
        ("{{ 3000000000 * 'x' }}", "'*': the result would be longer than"),
        ("{{ [0] * 2000000 }}", "'*': the result would be longer than"),
        ("{% set s = 'x' * 600000 %}{{ s + s }}", "'+': the result would be longer than"),
        ("{{ 10 ** 100000000 }}", "'**': exponents above"),
        (
            "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}",
            f"more than {MAX_RANGE_ITEMS} items in all",
        ),
        ("{{ range(10000000) | list | length }}", "more than"),
        ("{{ 'x' | center(300000000) }}", "center: the result would be longer than"),
        ("{{ ('x\\n' * 1000) | indent(100000, true) }}", "indent: the result would be longer than"),
        ("{{ ('x' * 1000) | replace('x', 'y' * 2000) }}", "replace: the result would be longer than"),
        ("{{ '%0999999999d' | format(1) }}", "format: the result would be longer than"),
        ("{{ '%0999999999d' % 1 }}", "'%': the result would be longer than"),
        ("{{ ((10 ** 1000) ** 1000) ** 100 }}", "'**': the result would have more than"),
        (
            "{% set ns = namespace(x='ab') %}{% for i in range(40) %}{% set ns.x = ns.x ~ ns.x %}"
            "{% endfor %}",
            "'~': the result would be longer than",
        ),
    ],
)
def test_template_bombs_are_template_errors(template: str, problem: str) -> None:
    with pytest.raises(HookError, match="prompt template error") as caught:
        render_prompt(template + " $ARGUMENTS", STOP)
    assert problem in str(caught.value)


def test_ordinary_templates_render_as_before() -> None:
    template = "{{ '-' * 20 }}{% for i in range(3) %}[{{ i * 2 }}]{% endfor %}{{ 2 ** 10 }} {{ [1] + [2] }}"
    assert render_prompt(template, STOP, arguments="ARGS") == "-" * 20 + "[0][2][4]1024 [1, 2]\n\nARGS"
    filters = (
        "{{ 'ab' | center(6) }}|{{ 'a\nb' | indent(2) }}|{{ 'a-b' | replace('-', '+') }}|{{ '%03d' % 7 }}"
    )
    assert render_prompt(filters, STOP, arguments="") == "  ab  |a\n  b|a+b|007\n\n"
    joined = "{{ 'a' ~ 1 ~ none ~ final_output }}{% set ns = namespace(x='ab') %}"
    joined += "{% for i in range(3) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}|{{ ns.x }}"
    assert render_prompt(joined, STOP, arguments="") == "a1NoneDone.|" + "ab" * 8 + "\n\n"
    assert len(render_prompt(f"{{{{ 'x' * {MAX_LENGTH} }}}}", STOP, arguments="")) == MAX_LENGTH + 2


def test_the_range_allowance_is_per_render() -> None:
    template = "{% for i in range(60000) %}{% endfor %}ok"
    for _ in range(3):  # 180,000 items over three renders: each has its own allowance
        assert render_prompt(template, STOP, arguments="").startswith("ok")


def test_validate_names_the_limit_as_an_error(tmp_path: Path) -> None:
    config = tmp_path / "judge.yaml"
    loops = "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}"
    config.write_text(
        f'hooks:\n  Stop:\n    - type: prompt\n      model: fake:allow\n      prompt: "{loops} $ARGUMENTS"\n'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "judge", "validate", str(config)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1
    assert (
        "hooks.Stop[0].prompt: line 1: range: the template asked for more than" in proc.stdout + proc.stderr
    )
