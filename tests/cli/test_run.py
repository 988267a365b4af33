"""`judge run` end to end, as a subprocess: output fields, exit codes,
--transcript, --session/--state across processes, --data-dir logs, each hook error on
stderr (stdout stays the JSON), and a reason holding a lone surrogate printed."""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from judge.cli import main

REPO = Path(__file__).resolve().parents[2]
TOP_KEYS = {"decision", "reason", "forcedStop", "rejectionCount", "hooks"}
#: A Stop's decision also says how the stop ended.
STOP_KEYS = TOP_KEYS | {"outcome"}
HOOK_KEYS = {"level", "index", "type", "decision", "reason", "error", "durationMs", "model", "usage"}


def run(
    *args: str, stdin: str | None = None, cwd: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "judge", "run", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        timeout=60,
    )


def run_here(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """The same ``main()`` in this process (for secondary checks; keeps the file quick)."""
    old_stdin = sys.stdin
    out, err = io.StringIO(), io.StringIO()
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["run", *args])
    finally:
        sys.stdin = old_stdin
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def write_config(tmp_path: Path, hooks: dict[str, Any], **extra: Any) -> str:
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump({"hooks": hooks, **extra}, sort_keys=False))
    return str(path)


def decided(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


STOP = json.dumps({"hook_event_name": "Stop", "agent_name": "main", "final_output": "Done."})
CMD_BLOCK = {"type": "command", "command": "echo 'Add the test results.' >&2; exit 2"}


def test_allow_prints_exactly_the_decision_fields(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"Stop": [{"type": "command", "command": "true"}]})
    out = decided(run("--config", config, "--event", "Stop", stdin=STOP))
    assert set(out) == STOP_KEYS
    assert (out["decision"], out["reason"], out["forcedStop"], out["rejectionCount"], out["outcome"]) == (
        "allow",
        None,
        False,
        0,
        "approved",
    )
    (hook,) = out["hooks"]
    assert set(hook) == HOOK_KEYS
    assert (hook["level"], hook["index"], hook["type"], hook["decision"]) == ("agent", 0, "command", "allow")
    assert isinstance(hook["durationMs"], float) and hook["durationMs"] > 0


def test_block_exits_zero_and_reads_the_context_file(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"Stop": [CMD_BLOCK]})
    context = tmp_path / "ctx.json"
    context.write_text(STOP)
    out = decided(run("--config", config, "--event", "Stop", "--context", str(context)))
    assert set(out) == STOP_KEYS
    assert (out["decision"], out["reason"], out["rejectionCount"]) == ("block", "Add the test results.", 0)
    assert out["outcome"] == "rejected"


def test_post_tool_use_additional_context_and_custom_agent(tmp_path: Path) -> None:
    extra = {"hookSpecificOutput": {"additionalContext": "Tool audit logged."}}
    config = write_config(
        tmp_path,
        {"PostToolUse": [{"type": "command", "command": "true", "matcher": "*"}]},
        customAgents={
            "ops": {
                "hooks": {
                    "PostToolUse": [
                        {"type": "command", "command": f"echo '{json.dumps(extra)}'", "matcher": "Bash"}
                    ]
                }
            }
        },
    )
    context = {"agent_name": "ops", "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_result": "a"}
    out = decided(run("--config", config, "--event", "PostToolUse", stdin=json.dumps(context)))
    assert set(out) == TOP_KEYS | {"hookSpecificOutput"}
    assert out["hookSpecificOutput"] == {
        "hookEventName": "PostToolUse",
        "additionalContext": "Tool audit logged.",
    }
    assert [h["level"] for h in out["hooks"]] == ["agent", "custom"]
    other = decided(
        run_here(
            "--config", config, "--event", "PostToolUse", stdin=json.dumps({**context, "agent_name": "x"})
        )
    )
    assert set(other) == TOP_KEYS


def test_updated_input_only_for_pre_tool_use_rewrites(tmp_path: Path) -> None:
    rewrite = {"decision": "allow", "hookSpecificOutput": {"updatedInput": {"command": "ls -la"}}}
    config = write_config(
        tmp_path,
        {
            "PreToolUse": [
                {"type": "command", "command": f"echo '{json.dumps(rewrite)}'", "matcher": "Bash"},
                {"type": "command", "command": "true", "matcher": "*"},
            ]
        },
    )
    bash = decided(
        run("--config", config, "--event", "PreToolUse", stdin='{"tool_name": "Bash", "tool_input": {}}')
    )
    assert set(bash) == TOP_KEYS | {"updatedInput"}
    assert bash["updatedInput"] == {"command": "ls -la"}
    read = decided(
        run_here("--config", config, "--event", "PreToolUse", stdin='{"tool_name": "Read", "tool_input": {}}')
    )
    assert set(read) == TOP_KEYS
    assert read["decision"] == "allow"


def test_transcript_flag_supplies_execution_summary(tmp_path: Path) -> None:
    transcript = tmp_path / "transcript.txt"
    transcript.write_text("user: please add tests\nassistant: done\n")
    # The hook reads the file named by execution_summary and reports its first line.
    reader = {
        "type": "command",
        "command": 'f=$(sed -n \'s/.*"execution_summary": "\\([^"]*\\)".*/\\1/p\'); head -1 "$f" >&2; exit 2',
    }
    config = write_config(tmp_path, {"Stop": [reader]})
    out = decided(run("--config", config, "--event", "Stop", "--transcript", str(transcript), stdin=STOP))
    assert out["reason"] == "user: please add tests"
    missing = run_here(
        "--config", config, "--event", "Stop", "--transcript", str(tmp_path / "nope.txt"), stdin=STOP
    )
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr.strip() == f"transcript not found: {tmp_path / 'nope.txt'}"


def test_session_and_state_keep_the_count_across_processes(tmp_path: Path) -> None:
    hook = {"type": "prompt", "prompt": "Check $ARGUMENTS", "model": "fake:block:Add tests."}
    config = write_config(tmp_path, {"Stop": [hook]})
    state = str(tmp_path / "state.db")
    data = tmp_path / "data"
    rounds = []
    for i in range(4):
        stop = json.dumps({**json.loads(STOP), "final_output": f"Done ({i})."})  # (not a stalled loop)
        args = (
            "--config",
            config,
            "--event",
            "Stop",
            "--session",
            "s1",
            "--state",
            state,
            "--data-dir",
            str(data),
        )
        out = decided(run(*args, stdin=stop))
        rounds.append((out["decision"], out["forcedStop"], out["rejectionCount"], out["reason"]))
    assert rounds == [
        ("block", False, 1, "Add tests."),
        ("block", False, 2, "Add tests."),
        ("allow", True, 3, "Add tests."),
        ("block", False, 1, "Add tests."),
    ]
    summaries = [json.loads(line) for line in (data / "session_summaries.jsonl").read_text().splitlines()]
    assert [(s["session_id"], s["decision"], s["rejectionCount"]) for s in summaries] == [
        ("s1", "block", 1),
        ("s1", "block", 2),
        ("s1", "allow", 3),
        ("s1", "block", 1),
    ]
    assert not (data / "audit_log.jsonl").exists()


def test_data_dir_writes_the_tool_audit_log(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"PostToolUse": [{"type": "command", "command": "true", "matcher": "*"}]})
    data = tmp_path / "data"
    context = {
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_result": "a.txt",
        "tool_succeeded": True,
    }
    decided(
        run("--config", config, "--event", "PostToolUse", "--data-dir", str(data), stdin=json.dumps(context))
    )
    (line,) = (data / "audit_log.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert (record["tool_name"], record["tool_input"], record["tool_result"], record["is_error"]) == (
        "Bash",
        {"command": "ls"},
        "a.txt",
        False,
    )
    assert record["timestamp"]


def _bad_config(tmp_path: Path) -> str:
    return write_config(tmp_path, {"Stop": [{"type": "command", "command": "true", "timeout": 0}]})


def _good_config(tmp_path: Path) -> str:
    return write_config(tmp_path, {"Stop": [{"type": "command", "command": "true"}]})


FAILURES: list[tuple[str, Any, str, str]] = [
    # (id, args builder, stdin, expected stderr line)
    (
        "bad flag",
        lambda c: ["--config", c, "--event", "Stop", "--bogus"],
        STOP,
        "unrecognized arguments: --bogus",
    ),
    ("missing --event", lambda c: ["--config", c], STOP, "the following arguments are required: --event"),
    (
        "unknown event",
        lambda c: ["--config", c, "--event", "Finish"],
        STOP,
        "unknown event 'Finish' (expected one of Stop, SubagentStop, PostToolUse, PreToolUse)",
    ),
    (
        "an event in the wrong case",
        lambda c: ["--config", c, "--event", "stop"],
        STOP,
        "judge run: --event: unknown event 'stop' (did you mean Stop?)",
    ),
    (
        "malformed context",
        lambda c: ["--config", c, "--event", "Stop"],
        '{"final_output": "x",',
        "malformed context JSON in stdin at line 1, column 22: "
        "Expecting property name enclosed in double quotes",
    ),
    ("empty context", lambda c: ["--config", c, "--event", "Stop"], "  \n", "no context JSON on stdin"),
    (
        "context not an object",
        lambda c: ["--config", c, "--event", "Stop"],
        "[1, 2]",
        "context must be a JSON object, got list",
    ),
    (
        "context with a wrong type",
        lambda c: ["--config", c, "--event", "Stop"],
        '{"final_output": "x", "stop_rejection_count": -1}',
        "invalid context: stop_rejection_count: Input should be greater than or equal to 0",
    ),
    (
        "tool event without tool_name",
        lambda c: ["--config", c, "--event", "PreToolUse"],
        "{}",
        "invalid context: tool_name: Field required",
    ),
    (
        "context for another event",
        lambda c: ["--config", c, "--event", "PostToolUse"],
        STOP,
        "hook_event_name is 'Stop' but the event is 'PostToolUse'",
    ),
    (
        "missing context file",
        lambda c: ["--config", c, "--event", "Stop", "--context", "/nonexistent/ctx.json"],
        "",
        "cannot read the context: [Errno 2] No such file or directory: '/nonexistent/ctx.json'",
    ),
    (
        "session without state",
        lambda c: ["--config", c, "--event", "Stop", "--session", "s1"],
        STOP,
        "--session needs --state DB to keep the rejection count",
    ),
]


@pytest.mark.parametrize(
    ("make_args", "stdin", "message"), [f[1:] for f in FAILURES], ids=[f[0] for f in FAILURES]
)
def test_failures_exit_1_with_nothing_on_stdout(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    make_args: Any,
    stdin: str,
    message: str,
) -> None:
    # In-process (the same main() the console script runs); a few run as subprocesses below.
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    try:
        code = main(["run", *make_args(_good_config(tmp_path))])
    except SystemExit as exc:  # argparse usage errors
        code = exc.code  # type: ignore[assignment]
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    assert message in err


@pytest.mark.parametrize(
    "index", [i for i, f in enumerate(FAILURES) if f[0] in ("bad flag", "unknown event", "malformed context")]
)
def test_failures_as_a_subprocess(tmp_path: Path, index: int) -> None:
    _, make_args, stdin, message = FAILURES[index]
    proc = run(*make_args(_good_config(tmp_path)), stdin=stdin)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_invalid_config_exits_1_with_located_problems(tmp_path: Path) -> None:
    config = _bad_config(tmp_path)
    proc = run("--config", config, "--event", "Stop", stdin=STOP)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.splitlines() == [
        f"{config}: hooks.Stop[0].timeout: must be between 1 and 300 seconds, got 0"
    ]


def test_missing_config_binary_context_and_unusable_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    context = tmp_path / "ctx.json"
    context.write_text(STOP)
    assert (
        main(["run", "--config", str(tmp_path / "none.yaml"), "--event", "Stop", "--context", str(context)])
        == 1
    )
    out, err = capsys.readouterr()
    assert (out, err.strip()) == ("", f"{tmp_path / 'none.yaml'}: file not found: {tmp_path / 'none.yaml'}")
    binary = tmp_path / "ctx.bin"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    assert main(["run", "--config", _good_config(tmp_path), "--event", "Stop", "--context", str(binary)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("context is not UTF-8 text")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    state = str(blocker / "state.db")  # a path under a regular file cannot be created
    args = ["run", "--config", _good_config(tmp_path), "--event", "Stop", "--context", str(context)]
    assert main([*args, "--session", "s", "--state", state]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("cannot use the state or data dir:")


def test_judge_run_prints_each_hook_error_on_stderr_and_keeps_stdout_json(tmp_path: Path) -> None:
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{port.getsockname()[1]}/v1"
    port.close()
    config = write_config(
        tmp_path,
        {
            "Stop": [
                {"type": "prompt", "prompt": "Done? $ARGUMENTS", "model": "openai:gpt-x"},
                {"type": "prompt", "prompt": "Done? $ARGUMENTS", "model": "anthropic:claude-x"},
                {"type": "command", "command": "true"},
            ]
        },
    )
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": url, "ANTHROPIC_API_KEY": ""}
    proc = run("--config", config, "--event", "Stop", stdin=STOP, env=env)
    assert proc.returncode == 0
    decision = json.loads(proc.stdout)  # stdout is still only the JSON
    assert decision["decision"] == "allow"
    lines = proc.stderr.splitlines()
    assert lines == [
        "judge run: Stop hook agent[0] (prompt, openai:gpt-x) failed: provider failed after 3 attempts: "
        f"openai:gpt-x: connection refused by {url} -> allow (its failMode)",
        "judge run: Stop hook agent[1] (prompt, anthropic:claude-x) failed: ANTHROPIC_API_KEY is not set "
        "(needed for anthropic:claude-x; JUDGE_ANTHROPIC_API_KEY is read first) -> allow (its failMode)",
    ]


def test_judge_run_is_silent_on_stderr_without_errors(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"Stop": [{"type": "command", "command": "true"}]})
    proc = run("--config", config, "--event", "Stop", stdin=STOP)
    assert (proc.returncode, proc.stderr) == (0, "")


def test_a_reason_quoting_a_lone_surrogate_is_printed_not_a_crash(tmp_path: Path) -> None:
    # the hook reads the answer's surrogate as JSON's escape and quotes it back: printing the
    # block must not crash (Claude Code reads exit 1 as a non-blocking error: a fail open)
    config = tmp_path / "c.yaml"
    config.write_text(
        "hooks:\n  Stop:\n    - type: command\n      failMode: block\n      script: |\n"
        "        #!/usr/bin/env python3\n        import json, sys\n"
        "        tail = json.load(sys.stdin)['final_output'][-3:]\n"
        "        print(json.dumps({'decision': 'block', 'reason': 'ends mid-word: ' + tail}))\n",
        encoding="utf-8",
    )
    context = tmp_path / "ctx.json"
    context.write_text('{"final_output": "Deploy status: \\ud83d"}', encoding="utf-8")
    argv = [sys.executable, "-m", "judge", "run", "--config", str(config), "--event", "Stop"]
    done = subprocess.run(
        [*argv, "--context", str(context), "--session", "s\udcff", "--state", str(tmp_path / "s.db")],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["decision"] == "block" and answer["reason"] == "ends mid-word: : \ud83d"
