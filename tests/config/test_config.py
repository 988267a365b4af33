"""Configuration: both forms, defaults, and every bad input with its located message.

Bad inputs are checked through the Python API (``ConfigError.problems``) and through
``judge validate`` (exit 1, one located line per problem on stderr; exit 0 and one
summary line per event when valid).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from judge.cli import main
from judge.config import (
    Config,
    Hook,
    config_from_data,
    config_json_schema,
    load_config,
    validate_custom_agent,
)
from judge.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def problems_of(data: Any) -> list[str]:
    with pytest.raises(ConfigError) as info:
        config_from_data(data)
    return info.value.problems


def stop(*hooks: dict[str, Any]) -> dict[str, Any]:
    return {"hooks": {"Stop": list(hooks)}}


CMD = {"type": "command", "command": "true"}
PROMPT = {"type": "prompt", "prompt": "Check $ARGUMENTS"}

# (id, config data, the exact problems)
BAD: list[tuple[str, Any, list[str]]] = [
    (
        "unknown event",
        {"hooks": {"Finish": [CMD]}},
        [
            "hooks.Finish: unknown event 'Finish' "
            "(expected one of Stop, SubagentStop, PostToolUse, PreToolUse)"
        ],
    ),
    (
        "an event in the wrong case",
        {"hooks": {"stop": [CMD], "PreTooluse": [CMD]}},
        [
            "hooks.stop: unknown event 'stop' (did you mean Stop?)",
            "hooks.PreTooluse: unknown event 'PreTooluse' (did you mean PreToolUse?)",
        ],
    ),
    (
        "misspelt hook keys",
        stop({"prompt": "Check $ARGUMENTS", "maxRejection": 3, "matchr": "x", "failmode": "block"}),
        [
            "hooks.Stop[0].maxRejection: unknown key (did you mean maxRejections?)",
            "hooks.Stop[0].matchr: unknown key (did you mean matcher?)",
            "hooks.Stop[0].failmode: unknown key (did you mean failMode?)",
        ],
    ),
    (
        "misspelt prices and budgets keys",
        {"prices": {"openai:x": {"input": 1, "ouput": 2}}, "budgets": {"perSessionUSD": 1}},
        [
            "prices.openai:x.output: Field required",
            "prices.openai:x.ouput: unknown key (did you mean output?)",
            "budgets.perSessionUSD: unknown key (did you mean perSessionUsd?)",
        ],
    ),
    (
        "timeout as a string",
        stop({**CMD, "timeout": "30s"}),
        ["hooks.Stop[0].timeout: must be an integer number of seconds, got '30s'"],
    ),
    (
        "timeout as a float",
        stop({**CMD, "timeout": 2.5}),
        ["hooks.Stop[0].timeout: must be an integer number of seconds, got 2.5"],
    ),
    (
        "timeout 0",
        stop({**CMD, "timeout": 0}),
        ["hooks.Stop[0].timeout: must be between 1 and 300 seconds, got 0"],
    ),
    (
        "timeout 301",
        stop({**CMD, "timeout": 301}),
        ["hooks.Stop[0].timeout: must be between 1 and 300 seconds, got 301"],
    ),
    (
        "maxRejections true",
        stop({**PROMPT, "maxRejections": True}),
        ["hooks.Stop[0].maxRejections: must be an integer, got True"],
    ),
    (
        "maxRejections 0",
        stop({**PROMPT, "maxRejections": 0}),
        ["hooks.Stop[0].maxRejections: must be between 1 and 25, got 0"],
    ),
    (
        "maxRejections 26",
        stop({**PROMPT, "maxRejections": 26}),
        ["hooks.Stop[0].maxRejections: must be between 1 and 25, got 26"],
    ),
    ("hooks as a list", {"hooks": [CMD]}, ["hooks: must be a mapping of event name to a list of hooks"]),
    ("event hooks as a mapping", {"hooks": {"Stop": CMD}}, ["hooks.Stop: must be a list of hooks"]),
    ("a hook as a string", stop("echo hi"), ["hooks.Stop[0]: must be a mapping, got str"]),  # type: ignore[arg-type]
    (
        "unknown hook key",
        stop({**CMD, "retries": 2}),
        ["hooks.Stop[0].retries: unknown key"],
    ),
    (
        "snake_case option",
        stop({**CMD, "fail_mode": "block"}),
        ["hooks.Stop[0].fail_mode: unknown key (did you mean failMode?)"],
    ),
    (
        "unknown top-level key",
        {"hooks": {}, "hook": {}, "extras": 1},
        [
            "hook: unknown key (did you mean hooks?)",
            "extras: unknown key (expected hooks, customAgents, models, prices, budgets)",
        ],
    ),
    (
        "both command and script",
        stop({"type": "command", "command": "true", "script": "#!/bin/bash\ntrue"}),
        ["hooks.Stop[0]: command hooks take exactly one of `command` or `script`, not both"],
    ),
    (
        "neither command nor script",
        stop({"type": "command", "timeout": 5}),
        ["hooks.Stop[0]: command hooks need `command` or `script`"],
    ),
    ("missing prompt", stop({"type": "prompt"}), ["hooks.Stop[0].prompt: required for prompt hooks"]),
    (
        "missing prompt (default type)",
        stop({"timeout": 5}),
        ["hooks.Stop[0].prompt: required for prompt hooks"],
    ),
    ("blank prompt", stop({"prompt": "  \n"}), ["hooks.Stop[0].prompt: required for prompt hooks"]),
    (
        "prompt on a command hook",
        stop({**CMD, "prompt": "p"}),
        ["hooks.Stop[0].prompt: not allowed on command hooks (set type: prompt)"],
    ),
    (
        "script on a prompt hook",
        stop({**PROMPT, "script": "#!/bin/bash\ntrue"}),
        ["hooks.Stop[0].script: not allowed on prompt hooks (set type: command)"],
    ),
    (
        "a Python script without a #! line",
        stop({"type": "command", "script": "import json, sys\nprint(json.load(sys.stdin))\n"}),
        [
            "hooks.Stop[0].script: script has no #! line; start it with #!/usr/bin/env python3 "
            "(the script looks like Python), or use command: for a one-line shell command"
        ],
    ),
    (
        "a shell script without a #! line",
        stop({"type": "command", "script": "test -f done.txt\necho ok\n"}),
        [
            "hooks.Stop[0].script: script has no #! line; start it with #!/bin/bash, "
            "or use command: for a one-line shell command"
        ],
    ),
    (
        "missing matcher on PostToolUse",
        {"hooks": {"PostToolUse": [CMD]}},
        ["hooks.PostToolUse[0].matcher: required for PostToolUse hooks"],
    ),
    (
        "missing matcher on PreToolUse",
        {"hooks": {"PreToolUse": [{**CMD, "matcher": "*"}, CMD]}},
        ["hooks.PreToolUse[1].matcher: required for PreToolUse hooks"],
    ),
    (
        "invalid regex",
        {"hooks": {"PostToolUse": [CMD | {"matcher": "*"}, CMD | {"matcher": "Bash("}]}},
        [
            "hooks.PostToolUse[1].matcher: invalid regex 'Bash(': "
            "missing ), unterminated subpattern at position 4"
        ],
    ),
    (
        "matcher not a string",
        {"hooks": {"PostToolUse": [CMD | {"matcher": 5}]}},
        ["hooks.PostToolUse[0].matcher: Input should be a valid string"],
    ),
    (
        "failMode not allow/block",
        stop({**CMD, "failMode": "ignore"}),
        ["hooks.Stop[0].failMode: must be 'allow' or 'block', got 'ignore'"],
    ),
    (
        "unknown type",
        stop({"type": "llm", "prompt": "Check the final answer."}),
        ["hooks.Stop[0].type: must be 'prompt' or 'command', got 'llm'"],
    ),
    (
        "unsupported shebang",
        stop({"type": "command", "script": "#!/bin/sh\necho hi\n"}),
        [
            "hooks.Stop[0].script: unsupported shebang '#!/bin/sh'; "
            "use one of #!/bin/bash, #!/usr/bin/env python3"
        ],
    ),
    (
        "65 KB script",
        stop({"type": "command", "script": "#!/bin/bash\n" + "# padding\n" * 6656}),
        ["hooks.Stop[0].script: script is 66572 bytes; the limit is 65536 (64 KB)"],
    ),
    (
        "custom agent problems are located",
        {"customAgents": {"reviewer": {"hooks": {"Stop": [{**CMD, "timeout": 0}]}}}},
        ["customAgents.reviewer.hooks.Stop[0].timeout: must be between 1 and 300 seconds, got 0"],
    ),
    (
        "custom agents as a list",
        {"customAgents": ["reviewer"]},
        ["customAgents: must be a mapping of custom-agent name to its definition"],
    ),
    (
        "resource form problems are located under spec",
        {"kind": "ExtendedAgent", "spec": {"hooks": {"PostToolUse": [CMD]}}},
        ["spec.hooks.PostToolUse[0].matcher: required for PostToolUse hooks"],
    ),
    (
        "resource form of the wrong kind and an unknown key",
        {"kind": "Agent", "spec": {}, "extra": 1},
        ["extra: unknown key", "kind: expected 'ExtendedAgent', got 'Agent'"],
    ),
    ("models not strings", {"models": {"Fast": 3}}, ["models: must map tier names to model names (strings)"]),
    (
        "empty model names",
        stop(
            {"prompt": "Check the final answer.", "model": " "},
            {"prompt": "Check the final answer.", "model": "openai:"},
        ),
        [
            "hooks.Stop[0].model: must name a tier (e.g. ReasoningFast) or a model (e.g. openai:<name>), "
            "got ' '",
            "hooks.Stop[1].model: must name a tier (e.g. ReasoningFast) or a model (e.g. openai:<name>), "
            "got 'openai:'",
        ],
    ),
    (
        "models: unknown tier, tier to tier, empty model",
        {
            "models": {
                "ReasoningFst": "openai:x",
                "Smart": "openai:x",
                "fast": "General",
                "Eval": "openai: ",
                "SmallFast": "",
            }
        },
        [
            "models.ReasoningFst: unknown tier (did you mean ReasoningFast?)",
            "models.Smart: unknown tier (expected one of Reasoning, ReasoningFast, General, Fast, "
            "LongContext, or ReasoningHeavy, GeneralPurpose, SmallFast, Eval)",
            "models.fast: maps to another tier ('General'); name a model",
            "models.Eval: model 'openai: ' names no model after 'openai:'",
            "models.SmallFast: model name is empty",
        ],
    ),
    ("root not a mapping", ["hooks"], ["<root>: must be a mapping, got list"]),
    (
        "every problem is reported, not just the first",
        {
            "hooks": {
                "Stop": [{**CMD, "timeout": 0, "prompt": "p"}, {"type": "prompt", "maxRejections": 26}],
                "PostToolUse": [CMD],
            }
        },
        [
            "hooks.Stop[0].timeout: must be between 1 and 300 seconds, got 0",
            "hooks.Stop[0].prompt: not allowed on command hooks (set type: prompt)",
            "hooks.Stop[1].maxRejections: must be between 1 and 25, got 26",
            "hooks.Stop[1].prompt: required for prompt hooks",
            "hooks.PostToolUse[0].matcher: required for PostToolUse hooks",
        ],
    ),
]


@pytest.mark.parametrize(("data", "expected"), [(d, e) for _, d, e in BAD], ids=[i for i, _, _ in BAD])
def test_bad_config_python_api(data: Any, expected: list[str]) -> None:
    assert problems_of(data) == expected


@pytest.mark.parametrize(("data", "expected"), [(d, e) for _, d, e in BAD], ids=[i for i, _, _ in BAD])
def test_bad_config_judge_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: Any, expected: list[str]
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["validate", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [f"{path}: {line}" for line in expected]  # named as judge serve names it


def test_hook_model_rejects_bad_types_directly() -> None:
    with pytest.raises(ValueError, match="command hooks need `command` or `script`"):
        Hook(type="command")
    with pytest.raises(ValueError, match="must be between 1 and 300"):
        Hook.model_validate({"prompt": "p", "timeout": 301})


MALFORMED = [
    (
        "bad.json",
        '{\n  "hooks": {\n    "Stop": [,]\n  }\n}\n',
        "malformed JSON at line 3, column 14: Expecting value",
    ),
    (
        "trailing.json",
        '{"hooks": {}},',
        "malformed JSON at line 1, column 14: Extra data",
    ),
    (
        "unterminated.yaml",
        'hooks:\n  Stop:\n    - type: command\n      command: "echo\n',
        "malformed YAML at line 5, column 1: found unexpected end of stream "
        "(while scanning a quoted scalar that starts at line 4, column 16)",
    ),
    (
        "tab.yaml",
        "hooks:\n  Stop:\n  - type: prompt\n    prompt: p\n\tbad: tab\n",
        "malformed YAML at line 5, column 1: found character '\\t' that cannot start any token",
    ),
    (
        "flow.yaml",
        "hooks:\n  Stop: [a\n  x: 1\n",
        "malformed YAML at line 3, column 4: expected ',' or ']', but got ':' "
        "(while parsing a flow sequence that starts at line 2, column 9)",
    ),
    (
        "duplicate_event.yaml",
        "hooks:\n  Stop:\n    - prompt: first\n  Stop:\n    - prompt: second\n",
        "hooks.Stop: duplicate key 'Stop' at line 4",
    ),
    (
        "duplicate_option.yaml",
        "spec:\n  hooks:\n    PreToolUse:\n      - type: command\n        matcher: '*'\n"
        "        command: 'true'\n        matcher: Bash\n",
        "spec.hooks.PreToolUse[0].matcher: duplicate key 'matcher' at line 7",
    ),
    (
        "duplicate_event.json",
        '{"hooks": {\n\t"Stop": [{"prompt": "a"}],\n\t"Stop": []}}',
        "hooks.Stop: duplicate key 'Stop' at line 3",
    ),
    (
        "tag.yaml",
        "hooks:\n  Stop:\n    - type: prompt\n      prompt: !!bool maybe\n",
        "malformed YAML at line 4, column 15: a value its tag cannot build (KeyError: 'maybe')",
    ),
    (
        "empty_int.yaml",
        "hooks:\n  Stop:\n    - type: prompt\n      prompt: p\n      timeout: !!int ''\n",
        "malformed YAML at line 5, column 16: a value its tag cannot build "
        "(IndexError: string index out of range)",
    ),
    ("deep.json", "[" * 100_000, "malformed JSON: nested too deeply"),
    ("deep.yaml", "hooks: " + "[" * 100_000, "malformed YAML: nested too deeply"),
]


@pytest.mark.parametrize(("name", "text", "message"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_documents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.problems == [message]
    assert info.value.source == str(path)
    assert main(["validate", str(path)]) == 1
    assert capsys.readouterr().err.splitlines() == [f"{path}: {message}"]


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "nope.yaml")
    assert info.value.problems == [f"file not found: {tmp_path / 'nope.yaml'}"]
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00hooks")
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(binary)
    with pytest.raises(ConfigError, match=r"cannot read .*Is a directory"):
        load_config(tmp_path)


RESOURCE = """\
api_version: azuresre.ai/v2
kind: ExtendedAgent
metadata:
  name: my_hooked_agent
spec:
  instructions: |
    You are a helpful assistant.
  hooks:
    Stop:
      - type: prompt
        prompt: |
          Check if the response ends with "Task complete."
          $ARGUMENTS
        timeout: 30
      - type: command
        command: "true"
    PostToolUse:
      - type: command
        matcher: "Bash|ExecuteShellCommand"
        timeout: 30
        failMode: block
        script: |
          #!/usr/bin/env python3
          print("{}")
  customAgents:
    reviewer:
      instructions: Review things.
      hooks:
        Stop:
          - type: prompt
            prompt: Review $ARGUMENTS
            maxRejections: 5
            model: Reasoning
models:
  ReasoningFast: openai:gpt-5.4-mini
"""


def test_resource_form_and_defaults(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(RESOURCE)
    config = load_config(path)
    assert config.name == "my_hooked_agent"
    assert config.base_dir == tmp_path.resolve()
    assert config.models == {"ReasoningFast": "openai:gpt-5.4-mini"}
    first, second = config.hooks.Stop
    assert (first.type, first.timeout, first.fail_mode, first.model, first.max_rejections) == (
        "prompt",
        30,
        None,
        "ReasoningFast",
        3,
    )
    assert first.fail_mode_for("Stop") == "allow"
    assert second.command == "true"
    post = config.hooks.PostToolUse[0]
    assert post.fail_mode_for("PostToolUse") == "block"
    assert post.script is not None and post.script.startswith("#!/usr/bin/env python3")
    reviewer = config.custom_agents["reviewer"]
    assert reviewer.instructions == "Review things."
    assert reviewer.hooks.Stop[0].max_rejections == 5
    levels = [(lvl, i) for lvl, i, _ in config.hooks_for("Stop", "reviewer")]
    assert levels == [("agent", 0), ("agent", 1), ("custom", 0)]
    assert [(lvl, i) for lvl, i, _ in config.hooks_for("Stop", "someone")] == [("agent", 0), ("agent", 1)]


def test_bare_json_form_with_custom_agents(tmp_path: Path) -> None:
    data = {
        "hooks": {"PreToolUse": [{"type": "command", "command": "true", "matcher": "Bash"}]},
        "customAgents": {"ops": {"hooks": {"PreToolUse": [{"prompt": "p", "matcher": "*"}]}}},
    }
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(data, indent=2))
    config = load_config(path)
    pre = config.hooks.PreToolUse[0]
    assert pre.fail_mode_for("PreToolUse") == "block"  # fail closed by default
    assert pre.fail_mode_for("Stop") == "allow"
    assert config.custom_agents["ops"].hooks.PreToolUse[0].type == "prompt"


def test_empty_and_null_documents_are_valid_and_empty(tmp_path: Path) -> None:
    for text in ("", "hooks:\n", "hooks: {}\n", "{}"):
        path = tmp_path / "empty.yaml"
        path.write_text(text)
        config = load_config(path)
        assert isinstance(config, Config)
        assert config.hooks_for("Stop", None) == []


def test_validate_custom_agent_locates_problems_under_its_prefix() -> None:
    agent = validate_custom_agent({"instructions": "x", "hooks": {"Stop": [{"prompt": "p"}]}})
    assert agent.hooks.Stop[0].prompt == "p"
    with pytest.raises(ConfigError) as info:
        validate_custom_agent({"hooks": {"PostToolUse": [{"prompt": "p"}]}})
    assert info.value.problems == ["properties.hooks.PostToolUse[0].matcher: required for PostToolUse hooks"]
    with pytest.raises(ConfigError) as info:
        validate_custom_agent([1])
    assert info.value.problems == ["properties: must be a JSON object"]


def test_with_custom_agent_adds_without_mutating() -> None:
    base = config_from_data({"hooks": {"Stop": [PROMPT]}})
    added = base.with_custom_agent("x", validate_custom_agent({"hooks": {"Stop": [CMD]}}))
    assert [lvl for lvl, _, _ in added.hooks_for("Stop", "x")] == ["agent", "custom"]
    assert base.custom_agents == {}


def test_judge_validate_valid_prints_a_summary_per_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(RESOURCE)
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines() == [
        "Stop: 2 hook(s) (1 prompt, 1 command), 1 in custom agents",
        "PostToolUse: 1 hook(s) (0 prompt, 1 command)",
    ]
    empty = tmp_path / "empty.yaml"
    empty.write_text("hooks: {}\n")
    assert main(["validate", str(empty)]) == 0
    assert capsys.readouterr().out.splitlines() == ["no hooks configured"]


def test_judge_validate_subprocess(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(RESOURCE)
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump(
            {"hooks": {"PostToolUse": [{**CMD, "matcher": "a("}], "Stop": [{**CMD, "timeout": 301}]}}
        )
    )
    ok = subprocess.run(
        [sys.executable, "-m", "judge", "validate", str(good)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[0] == "Stop: 2 hook(s) (1 prompt, 1 command), 1 in custom agents"
    failed = subprocess.run(
        [sys.executable, "-m", "judge", "validate", str(bad)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert failed.returncode == 1
    assert failed.stdout == ""
    assert failed.stderr.splitlines() == [
        f"{bad}: hooks.PostToolUse[0].matcher: invalid regex 'a(': missing ), unterminated subpattern at "
        "position 1",
        f"{bad}: hooks.Stop[0].timeout: must be between 1 and 300 seconds, got 301",
    ]
    missing = subprocess.run(
        [sys.executable, "-m", "judge", "validate"], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert missing.returncode == 1
    assert "the following arguments are required: config" in missing.stderr


def test_config_schema_describes_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema == config_json_schema()
    hook = schema["$defs"]["Hook"]
    assert set(hook["properties"]) == {
        "type",
        "prompt",
        "command",
        "script",
        "cwd",
        "env",
        "matcher",
        "timeout",
        "failMode",
        "model",
        "maxRejections",
        "repeats",
        "backgroundTasks",
        "mode",
        "evidence",
        "calibration",
        "samples",
        "aggregate",
        "escalateBelow",
    }
    assert hook["additionalProperties"] is False
    assert hook["properties"]["timeout"]["default"] == 30
    assert hook["properties"]["maxRejections"]["default"] == 3
    assert (hook["properties"]["timeout"]["minimum"], hook["properties"]["timeout"]["maximum"]) == (1, 300)
    assert (
        hook["properties"]["maxRejections"]["minimum"],
        hook["properties"]["maxRejections"]["maximum"],
    ) == (1, 25)
    assert set(hook["properties"]["failMode"]["anyOf"][0]["enum"]) == {"allow", "block"}
    repeats = hook["properties"]["repeats"]
    assert (repeats["minimum"], repeats["maximum"], repeats["default"]) == (0, 25, 0)
    assert "stalled" in repeats["description"]
    assert hook["properties"]["backgroundTasks"]["enum"] == ["judge", "defer"]
    assert hook["properties"]["backgroundTasks"]["default"] == "defer"
    assert set(schema["$defs"]["HookSet"]["properties"]) == {
        "Stop",
        "SubagentStop",
        "PostToolUse",
        "PreToolUse",
    }


def test_pathological_matcher_against_a_long_tool_name_returns_promptly() -> None:
    import time

    from judge.config import Hook

    hook = Hook.model_validate({"type": "command", "command": "true", "matcher": "(a|aa)+(b|c)"})
    start = time.monotonic()
    result = hook.matches("a" * 5000 + "!")
    assert time.monotonic() - start < 2.0
    # Exponential backtracking cannot finish: the time limit ends it, and a matcher that
    # times out selects the hook (a policy check must not silently skip).
    assert result is True
    assert hook.matches("aab") and not hook.matches("aabx")
