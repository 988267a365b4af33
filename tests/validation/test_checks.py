"""`judge validate` proves a config can run: a table of broken configs, each with the exact
located message and exit code, and the same configs refused by `judge serve` at start."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from judge.cli import main as cli_main
from judge.cli.serve import settings_from_args


@dataclass
class Case:
    id: str
    config: str
    lines: list[str]
    code: int = 1
    files: dict[str, str] = field(default_factory=dict)


def stop(prompt: str, extra: str = "") -> str:
    quoted = prompt.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'hooks:\n  Stop:\n    - prompt: "{quoted}"\n{extra}'


ERRORS = [
    Case(
        "jinja syntax error",
        stop("Check the final answer.\n{% if %}"),
        ["hooks.Stop[0].prompt: line 2: Expected an expression, got 'end of statement block'"],
    ),
    Case(
        "a syntax error next to $ARGUMENTS names what was written, at its place",
        stop("Check the final answer: {{ final_output $ARGUMENTS }}"),
        ["hooks.Stop[0].prompt: line 1: unexpected char '$' at 40"],
    ),
    Case(
        "a syntax error next to $ARGUMENTS inside an included file",
        stop("{% include 'mine.j2' %}"),
        ["hooks.Stop[0].prompt: mine.j2 line 2: unexpected char '$' at 29"],
        files={"mine.j2": "Check the final answer.\n{{ x $ARGUMENTS }}\n"},
    ),
    Case(
        "include of a missing file",
        stop("Check the final answer.\n\n{% include 'missing.j2' %}"),
        ["hooks.Stop[0].prompt: line 3: included template not found: missing.j2"],
    ),
    Case(
        "syntax error inside an included file",
        stop("{% include 'mine.j2' %}"),
        ["hooks.Stop[0].prompt: mine.j2 line 2: unexpected '}'"],
        files={"mine.j2": "Check the final answer.\n{{ final_output }} }}{{ } }}\n"},
    ),
    Case(
        "undefined name with a near miss",
        stop("Check the final answer:\n{{ finall_output }}"),
        ["hooks.Stop[0].prompt: line 2: 'finall_output' is undefined (did you mean final_output?)"],
    ),
    Case(
        "undefined name inside an included file",
        stop("{% include 'mine.j2' %}"),
        ["hooks.Stop[0].prompt: mine.j2 line 3: 'finall_output' is undefined (did you mean final_output?)"],
        files={"mine.j2": "Check the final answer.\n\n{{ finall_output }}\n"},
    ),
    Case(
        "a field of another event",
        stop("Check the final answer of {{ tool_name }}."),
        ["hooks.Stop[0].prompt: line 1: 'tool_name' is undefined (not a field of Stop events)"],
    ),
    Case(
        "an undocumented context field used as a top-level name",
        stop("Check the final answer for ticket {{ ticket_id }}."),
        [
            "hooks.Stop[0].prompt: line 1: 'ticket_id' is undefined (context fields judge does not "
            "document are only available as context.<name>)"
        ],
    ),
    Case(
        "tier typo",
        stop("Check the final answer.", "      model: ReasoningFats\n"),
        ["hooks.Stop[0].model: unknown tier 'ReasoningFats' (did you mean ReasoningFast?)"],
    ),
    Case(
        "provider typo",
        stop("Check the final answer.", "      model: opneai:gpt-4o\n"),
        ["hooks.Stop[0].model: unknown provider 'opneai' in 'opneai:gpt-4o' (did you mean openai:gpt-4o?)"],
    ),
    Case(
        "fake mode typo",
        stop("Check the final answer.", "      model: fake:blok:x\n"),
        ["hooks.Stop[0].model: unknown fake model 'fake:blok:x' (did you mean fake:block:x?)"],
    ),
    Case(
        "fake mode with an argument it does not take",
        stop("Check the final answer.", "      model: fake:allow:x\n"),
        ["hooks.Stop[0].model: fake:allow takes nothing after it, got 'fake:allow:x'"],
    ),
    Case(
        "fake script that does not exist",
        stop("Check the final answer.", "      model: fake:replies.json\n"),
        [
            "hooks.Stop[0].model: unknown fake model 'fake:replies.json': use fake:allow, "
            "fake:block[:reason], fake:reasonless, fake:impossible[:reason], fake:error, fake:heuristic, "
            "fake:optimizer or fake:<script.json|yaml> (no such file)"
        ],
    ),
    Case(
        "model name with a colon and no provider",
        stop("Check the final answer.", "      model: llama3.1:8b\n"),
        [
            "hooks.Stop[0].model: unknown provider 'llama3.1' in 'llama3.1:8b': use openai:, "
            "anthropic: or fake: (a model name containing ':' needs its provider first, "
            "e.g. openai:llama3.1:8b)"
        ],
    ),
    Case(
        "models mapping with a provider typo",
        stop("Check the final answer.", "models:\n  Fast: opneai:gpt-4o-mini\n"),
        ["models.Fast: unknown provider 'opneai' in 'opneai:gpt-4o-mini' (did you mean openai:gpt-4o-mini?)"],
    ),
    Case(
        "resource form, located under spec",
        "api_version: v1\nkind: ExtendedAgent\nmetadata: {name: a}\nspec:\n  hooks:\n    PreToolUse:\n"
        "      - matcher: Bash\n        prompt: 'Is {{ tool_nam }} safe?'\n",
        ["spec.hooks.PreToolUse[0].prompt: line 1: 'tool_nam' is undefined (did you mean tool_name?)"],
    ),
    Case(
        "custom agent hook",
        "customAgents:\n  reviewer:\n    hooks:\n      Stop:\n        - prompt: 'Check the final answer.'\n"
        "          model: Fats\n",
        ["customAgents.reviewer.hooks.Stop[0].model: unknown tier 'Fats' (did you mean Fast?)"],
    ),
    Case(
        "several problems, in document order",
        stop("Check {{ final_output }}\n{% include 'nope.j2' %}", "      model: Reasonin\n")
        + "  PostToolUse:\n    - matcher: '*'\n      prompt: '{{ tool_result | nofilter }}'\n",
        [
            "hooks.Stop[0].model: unknown tier 'Reasonin' (did you mean Reasoning?)",
            "hooks.Stop[0].prompt: line 2: included template not found: nope.j2",
            "hooks.PostToolUse[0].prompt: line 1: No filter named 'nofilter'.",
        ],
    ),
]

WARNINGS = [
    Case(
        "maxRejections above Claude Code's cap",
        stop("Check the final answer.", "      maxRejections: 12\n"),
        [
            "warning: hooks.Stop[0].maxRejections: 12 is above Claude Code's cap of 8 consecutive Stop "
            "blocks (CLAUDE_CODE_STOP_HOOK_BLOCK_CAP); if this config is used with Claude Code, the turn "
            "ends at the cap and this limit never takes effect"
        ],
        code=0,
    ),
    Case(
        "command hook naming a relative path",
        "hooks:\n  PreToolUse:\n    - type: command\n      matcher: Bash\n"
        "      command: ./check.sh --strict\n"
        "    - type: command\n      matcher: Bash\n      command: \"python3 hooks/lint.py; sed 's/a/b/'\"\n",
        [
            "warning: hooks.PreToolUse[0].command: names the relative path './check.sh', but command "
            "hooks run in a private temporary folder; use an absolute path (e.g. $CLAUDE_PROJECT_DIR/...) "
            "or set `cwd: config` or `cwd: project`",
            "warning: hooks.PreToolUse[1].command: names the relative path 'hooks/lint.py', but command "
            "hooks run in a private temporary folder; use an absolute path (e.g. $CLAUDE_PROJECT_DIR/...) "
            "or set `cwd: config` or `cwd: project`",
        ],
        code=0,
    ),
    Case(
        "Stop prompt that never refers to the answer",
        stop("Is the code well tested?"),
        [
            "warning: hooks.Stop[0].prompt: never refers to the agent's final answer ($ARGUMENTS, "
            "{{ final_output }} or the words 'final answer'): the context is appended, but the judge "
            "is not told to check it"
        ],
        code=0,
    ),
    Case(
        "template that fails on the sample data",
        stop("Check the final answer.\n{{ '%d' | format(final_output) }}"),
        [
            "warning: hooks.Stop[0].prompt: line 2: fails on the sample context (TypeError: "
            "%d format: a real number is required, not str); make sure real contexts cannot"
        ],
        code=0,
    ),
    Case(
        "optional context field without a default",
        stop("Check the final answer of {{ agent_name }}."),
        [
            "warning: hooks.Stop[0].prompt: line 1: fails when the caller sends no agent_name "
            "(the judgement errors); write {{ agent_name | default('') }}"
        ],
        code=0,
    ),
    Case(
        "repeats that the loop's maxRejections never reaches",
        stop("Check the final answer.", "      repeats: 2\n"),
        [
            "warning: hooks.Stop[0].repeats: 2 identical repeats cannot happen within maxRejections 3: the "
            "loop is forced first and never ends as stalled (at most 1 can)"
        ],
        code=0,
    ),
]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_MODEL_") or name == "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP":
            monkeypatch.delenv(name)


def write(tmp_path: Path, case: Case) -> Path:
    for name, text in case.files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    path = tmp_path / "judge.yaml"
    path.write_text(case.config, encoding="utf-8")
    return path


def validate(path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, list[str], str]:
    """Exit code, the problem lines (each starts with the file, as judge serve's do: the
    prefix is checked and cut here) and stdout."""
    code = cli_main(["validate", str(path), *flags])
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert all(line.startswith(f"{path}: ") for line in lines), lines
    return code, [line.removeprefix(f"{path}: ") for line in lines], out


@pytest.mark.parametrize("case", ERRORS, ids=[c.id for c in ERRORS])
def test_broken_config_is_located_by_validate_and_refused_by_serve(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, case)
    code, lines, out = validate(path, capsys)
    assert (code, lines) == (1, case.lines)
    assert out == ""  # no summary for a config that cannot run
    served = cli_main(["serve", "--config", str(path), "--port", "0", "--data-dir", str(tmp_path / "d")])
    _, err = capsys.readouterr()
    assert served == 1
    assert err.splitlines() == [f"{path}: {line}" for line in case.lines]


@pytest.mark.parametrize("case", WARNINGS, ids=[c.id for c in WARNINGS])
def test_warnings_exit_0_and_strict_makes_them_errors(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, case)
    code, lines, out = validate(path, capsys)
    assert (code, lines) == (0, case.lines)
    assert "hook(s)" in out
    code, lines, _ = validate(path, capsys, "--strict")
    assert (code, lines) == (1, case.lines)


def test_serve_starts_with_warnings_and_prints_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, WARNINGS[0])
    args = argparse.Namespace(
        config=str(path), port=0, max_body=None, workers=1, data_dir=str(tmp_path / "d"), transcripts_dir=None
    )
    settings = settings_from_args(args)
    assert settings.config.hooks.Stop[0].max_rejections == 12
    assert capsys.readouterr().err.splitlines() == [f"{path}: {line}" for line in WARNINGS[0].lines]


def test_repeats_are_weighed_against_the_largest_max_rejections_of_their_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = stop("Check the final answer.", "      repeats: 2\n")
    text += "    - prompt: 'Check the final answer. $ARGUMENTS'\n      maxRejections: 4\n"
    assert validate(write(tmp_path, Case("ok", text, [])), capsys, "--strict")[:2] == (0, [])


def test_block_cap_follows_claude_codes_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, WARNINGS[0])
    monkeypatch.setenv("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "12")
    assert validate(path, capsys, "--strict")[:2] == (0, [])
    monkeypatch.setenv("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "10")
    code, lines, _ = validate(path, capsys)
    assert code == 0 and "cap of 10 consecutive" in lines[0]


def test_tier_mapped_by_the_environment_is_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, Case("ok", stop("Check the final answer.", "      model: Fast\n"), []))
    monkeypatch.setenv("JUDGE_MODEL_FAST", "fake:alow")
    code, lines, _ = validate(path, capsys)
    assert code == 1
    assert lines == [
        "hooks.Stop[0].model: tier Fast is 'fake:alow' (from $JUDGE_MODEL_FAST): "
        "unknown fake model 'fake:alow' (did you mean fake:allow?)"
    ]


def test_a_short_timeout_for_a_model_on_a_local_server_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, Case("x", stop("Check the final answer.", "      model: openai:qwen\n"), []))
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8089/v1")
    code, lines, _ = validate(path, capsys)
    assert code == 0 and len(lines) == 1
    assert lines[0].startswith(
        "warning: hooks.Stop[0].timeout: 30s for openai:qwen on the local server http://127.0.0.1:8089/v1: "
    )
    assert validate(path, capsys, "--strict")[0] == 1
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gateway.example.com/v1")  # hosted: no warning
    assert validate(path, capsys, "--strict")[:2] == (0, [])
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    slow = write(
        tmp_path,
        Case("y", stop("Check the final answer.", "      model: openai:qwen\n      timeout: 120\n"), []),
    )
    assert validate(slow, capsys, "--strict")[:2] == (0, [])


def test_fake_script_is_loaded_and_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "replies.json").write_text('{"rules": [{"match": "("}]}', encoding="utf-8")
    path = write(tmp_path, Case("x", stop("Check the final answer.", "      model: fake:replies.json\n"), []))
    code, lines, _ = validate(path, capsys)
    assert code == 1
    assert lines[0].startswith("hooks.Stop[0].model: fake script ") and "rules[0].match" in lines[0]
    (tmp_path / "replies.json").write_text('[{"ok": true}]', encoding="utf-8")
    assert validate(path, capsys, "--strict")[:2] == (0, [])


REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(
    p
    for pattern in ("examples/**/*.yaml", "evals/**/agent*.yaml")
    for p in REPO.glob(pattern)
    if "transcripts" not in p.parts
)


@pytest.mark.parametrize("path", EXAMPLES, ids=[str(p.relative_to(REPO)) for p in EXAMPLES])
def test_every_example_config_passes_strict(
    path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):  # (a local server warns of timeouts)
        monkeypatch.delenv(variable, raising=False)
    code, lines, _ = validate(path, capsys, "--strict")
    assert (code, lines) == (0, [])


BROKEN_FOR_CLAUDE_CODE = (
    "hooks:\n  Stop:\n    - prompt: 'Check {{ finall_output }}'\n      model: fake:block\n"
    "  PreToolUse:\n    - matcher: Bash\n      prompt: 'Is {{ tool_name }} safe?'\n      model: fake:allow\n"
)


def claude_code(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    payload: dict[str, object],
) -> tuple[int, dict[str, object], str]:
    path = write(tmp_path, Case("cc", BROKEN_FOR_CLAUDE_CODE, []))
    monkeypatch.delenv("JUDGE_CONFIG", raising=False)
    monkeypatch.setenv("JUDGE_STATE", str(tmp_path / "state.sqlite"))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode("utf-8"))))
    code = cli_main(["claude-code", "--config", str(path)])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


LOCATED = "hooks.Stop[0].prompt: line 1: 'finall_output' is undefined (did you mean final_output?)"


def test_claude_code_denies_a_tool_call_when_a_template_is_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = {"session_id": "v-1", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}}
    code, answer, err = claude_code(tmp_path, monkeypatch, capsys, payload)
    assert code == 0
    specific = answer["hookSpecificOutput"]
    assert isinstance(specific, dict) and specific["permissionDecision"] == "deny"
    assert LOCATED in specific["permissionDecisionReason"]
    assert LOCATED in err


def test_claude_code_lets_a_stop_through_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = {"session_id": "v-2", "hook_event_name": "Stop", "stop_hook_active": False}
    code, answer, _ = claude_code(tmp_path, monkeypatch, capsys, payload)
    assert code == 0
    assert "decision" not in answer  # a config that cannot run never blocks the stop (fake:block would)
    assert LOCATED in str(answer["systemMessage"])


LEGIT = """\
hooks:
  PreToolUse:
    - matcher: Edit|Write
      prompt: |
        Is editing {{ tool_input.file_path }} for ticket {{ context.ticket.id }} safe?
        {% for name in context.files %}{{ name }}{% endfor %}{% if tool_input.old_string %}diff{% endif %}
        {{ context.retries + 1 }}
        $ARGUMENTS
  Stop:
    - prompt: |
        {% set marker = "DONE" %}{% include "format_marker.j2" %}
        Agent: {{ agent_name | default("an agent") }}, turn {{ context.current_turn | default(0) }}.
"""


def test_keys_the_sample_lacks_are_not_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Tool inputs and custom fields vary: a key the sample context lacks is no problem,
    an undefined name still is (also when chained)."""
    path = write(tmp_path, Case("legit", LEGIT, []))
    assert validate(path, capsys, "--strict")[:2] == (0, [])
    path.write_text(LEGIT.replace("{{ tool_input.file_path }}", "{{ tool_inptu.file_path }}"))
    code, lines, _ = validate(path, capsys)
    assert (code, lines) == (
        1,
        ["hooks.PreToolUse[0].prompt: line 1: 'tool_inptu' is undefined (did you mean tool_input?)"],
    )


def test_one_run_reports_the_shape_and_what_the_deeper_checks_find(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not two rounds of fixing: a hook with a misspelt key still has its model and template
    checked, and a later hook keeps the index it was written at."""
    path = write(
        tmp_path,
        Case(
            "both",
            "hooks:\n  Stop:\n"
            "    - model: ReasoningFats\n      maxRejection: 3\n      promt: x\n"
            "    - type: command\n      command: 'true'\n      timeout: 0\n"
            "    - prompt: 'Check the final answer {{ finall_output }}'\n      model: opneai:gpt-4o\n",
            [],
        ),
    )
    code, lines, out = validate(path, capsys)
    assert (code, out) == (1, "")
    assert lines == [
        "hooks.Stop[0].maxRejection: unknown key (did you mean maxRejections?)",
        "hooks.Stop[0].promt: unknown key (did you mean prompt?)",
        "hooks.Stop[0].prompt: required for prompt hooks",
        "hooks.Stop[1].timeout: must be between 1 and 300 seconds, got 0",
        "hooks.Stop[0].model: unknown tier 'ReasoningFats' (did you mean ReasoningFast?)",
        "hooks.Stop[2].model: unknown provider 'opneai' in 'opneai:gpt-4o' (did you mean openai:gpt-4o?)",
        "hooks.Stop[2].prompt: line 1: 'finall_output' is undefined (did you mean final_output?)",
    ]


def test_validate_json_lists_every_problem_and_keeps_the_exit_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, ERRORS[0])
    assert cli_main(["validate", str(path), "--json"]) == 1
    out, err = capsys.readouterr()
    assert err == ""
    assert json.loads(out) == {
        "config": str(path),
        "valid": False,
        "errors": 1,
        "warnings": 0,
        "problems": [
            {
                "severity": "error",
                "where": "hooks.Stop[0].prompt",
                "message": "line 2: Expected an expression, got 'end of statement block'",
            }
        ],
        "hooks": {},
    }
    path = write(tmp_path, WARNINGS[0])
    assert cli_main(["validate", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["valid"], document["errors"], document["warnings"]) == (True, 0, 1)
    assert document["problems"][0]["severity"] == "warning"
    assert document["hooks"] == {"Stop": {"prompt": 1, "command": 0, "custom": 0}}
    assert cli_main(["validate", str(path), "--json", "--strict"]) == 1
    assert json.loads(capsys.readouterr().out)["valid"] is False
    (tmp_path / "broken.yaml").write_text("hooks: [", encoding="utf-8")
    assert cli_main(["validate", str(tmp_path / "broken.yaml"), "--json"]) == 1
    problem = json.loads(capsys.readouterr().out)["problems"][0]
    assert problem["where"] is None and problem["message"].startswith("malformed YAML at line 1")


def test_a_misspelt_tier_variable_is_named_not_ignored_in_silence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_MODEL_REASONINGFATS", "openai:gpt-4o")
    monkeypatch.setenv("JUDGE_MODEL_EVAL", "openai:gpt-4o")
    path = write(tmp_path, Case("ok", stop("Check the final answer."), []))
    code, lines, _ = validate(path, capsys)
    tiers = (
        "JUDGE_MODEL_REASONING, JUDGE_MODEL_REASONINGFAST, JUDGE_MODEL_GENERAL, JUDGE_MODEL_FAST, "
        "JUDGE_MODEL_LONGCONTEXT"
    )
    assert (code, lines) == (
        0,
        [
            "warning: $JUDGE_MODEL_EVAL: no tier reads this variable (did you mean JUDGE_MODEL_REASONING?): "
            f"it is ignored; the tiers' variables are {tiers}",
            "warning: $JUDGE_MODEL_REASONINGFATS: no tier reads this variable (did you mean "
            f"JUDGE_MODEL_REASONINGFAST?): it is ignored; the tiers' variables are {tiers}",
        ],
    )
