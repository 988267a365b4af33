"""Hostile input to the command line: JSON nested past the parser's recursion limit, FIFOs,
endless devices, oversized stdin and odd file names. Each gets one clear line on stderr and
the command's usual exit status for bad input - never a traceback, a hang or a broken file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judge.files import MAX_DOCUMENT_BYTES

#: Far past the recursion limit of Python's JSON parser.
DEEP = "[" * 100_000 + "]" * 100_000
STOP_CONFIG = "hooks:\n  Stop:\n    - type: command\n      command: 'exit 0'\n"
PRE_BASH = "hooks:\n  PreToolUse:\n    - type: command\n      matcher: Bash\n      command: 'exit 0'\n"


def judge(
    *args: str, cwd: Path, stdin: str | bytes = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``judge ARGS`` as a separate process (a hang fails the test through the timeout)."""
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    proc = subprocess.run(
        [sys.executable, "-m", "judge", *args],
        input=data,
        capture_output=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=30,
    )
    return subprocess.CompletedProcess(
        proc.args,
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


def refused(proc: subprocess.CompletedProcess[str], code: int, message: str) -> None:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    assert message in proc.stderr


def nested(depth: int) -> str:
    return '{"x": ' + "[" * depth + "]" * depth + "}"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "deep.json").write_text(DEEP)
    (tmp_path / "cfg.yaml").write_text(STOP_CONFIG)
    return tmp_path


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_run_refuses_a_context_nested_too_deeply_to_parse(work: Path, source: str) -> None:
    args = ["run", "--config", "cfg.yaml", "--event", "Stop"]
    if source == "file":
        proc = judge(*args, "--context", "deep.json", cwd=work)
        refused(proc, 1, "the context JSON in deep.json is nested too deeply")
    else:
        refused(judge(*args, cwd=work, stdin=DEEP), 1, "the context JSON in stdin is nested too deeply")


def test_run_refuses_a_context_nested_too_deeply_to_judge(work: Path) -> None:
    (work / "ctx.json").write_text(nested(300))  # parses, but deeper than pydantic serializes
    proc = judge("run", "--config", "cfg.yaml", "--event", "Stop", "--context", "ctx.json", cwd=work)
    refused(proc, 1, "context is nested too deeply to be judged")


def test_run_refuses_stdin_over_the_context_size_limit(work: Path) -> None:
    proc = judge(
        "run", "--config", "cfg.yaml", "--event", "Stop", cwd=work, stdin=b" " * (MAX_DOCUMENT_BYTES + 1)
    )
    refused(proc, 1, f"the context on stdin is larger than {MAX_DOCUMENT_BYTES} bytes")


def test_claude_code_reports_hook_input_nested_too_deeply(tmp_path: Path) -> None:
    (tmp_path / "judge.yaml").write_text(PRE_BASH)
    env = {"JUDGE_STATE": str(tmp_path / "state" / "state.sqlite")}
    args = ("claude-code", "--config", "judge.yaml")
    first = judge(*args, cwd=tmp_path, env=env, stdin=DEEP)  # no config index yet: the full adapter
    refused(first, 0, "hook input is nested too deeply to be read")
    read = {"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Read", "tool_input": {}}
    assert judge(*args, cwd=tmp_path, env=env, stdin=json.dumps(read)).returncode == 0  # writes the index
    assert any((tmp_path / "state" / "config-index").iterdir())
    again = judge(*args, cwd=tmp_path, env=env, stdin=DEEP)  # the fast path hands it on
    refused(again, 0, "hook input is nested too deeply to be read")
    # A checked call whose input an agent nested at will is denied (the event and the tool
    # are still read from the start of the input), not let through unchecked.
    call = '{"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash", "tool_input": '
    denied = judge(*args, cwd=tmp_path, env=env, stdin=call + DEEP + "}")
    assert json.loads(denied.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny", denied.stderr
    assert "nested too deeply" in denied.stdout and "Traceback" not in denied.stderr


@pytest.mark.parametrize("kind", ["llmbar", "tau-bench"])
def test_datasets_convert_refuses_a_dataset_nested_too_deeply(work: Path, kind: str) -> None:
    proc = judge("datasets", "convert", kind, "deep.json", "--out", "o", cwd=work)
    refused(proc, 2, "deep.json: the JSON is nested too deeply")
    assert not (work / "o").exists()


def test_shadow_conversion_skips_a_line_nested_too_deeply(work: Path) -> None:
    record = {
        "event": "Stop",
        "session_id": "s",
        "context": {"final_output": "done"},
        "shadow": [{"decision": "block", "reason": "no tests"}],
    }
    (work / "shadow.jsonl").write_text(json.dumps(record) + "\n" + DEEP + "\n" + json.dumps(record) + "\n")
    proc = judge(
        "datasets", "convert", "shadow", "shadow.jsonl", "--out", "o", "--config", "cfg.yaml", cwd=work
    )
    assert proc.returncode == 0, proc.stderr
    cases = [json.loads(line) for line in (work / "o" / "cases.jsonl").read_text().splitlines()]
    assert [c["tags"][-1] for c in cases] == ["line:1", "line:3"]
    assert (work / "o" / "agent.yaml").read_text() == STOP_CONFIG


@pytest.mark.parametrize(
    ("source", "config", "message"),
    [
        ("/dev/zero", "cfg.yaml", "shadow log /dev/zero is a character device, not a regular file"),
        ("shadow.jsonl", "/dev/zero", "config file /dev/zero is a character device, not a regular file"),
        ("fifo", "cfg.yaml", "shadow log fifo is a FIFO (named pipe), not a regular file"),
        ("shadow.jsonl", "fifo", "config file fifo is a FIFO (named pipe), not a regular file"),
    ],
)
def test_shadow_conversion_refuses_endless_or_blocking_files(
    work: Path, source: str, config: str, message: str
) -> None:
    os.mkfifo(work / "fifo")
    (work / "shadow.jsonl").write_text("")
    proc = judge("datasets", "convert", "shadow", source, "--out", "o", "--config", config, cwd=work)
    refused(proc, 2, f"judge datasets convert: {message}")


def test_llmbar_suite_from_an_odd_file_name_loads_in_eval(work: Path) -> None:
    pair = [{"input": "say hi", "output_1": "hi", "output_2": "no", "label": 1}]
    (work / "weird: [x.json").write_text(json.dumps(pair))
    converted = judge("datasets", "convert", "llmbar", "weird: [x.json", "--out", "o", cwd=work)
    assert converted.returncode == 0, converted.stderr
    proc = judge("eval", "o/suite.yaml", "--out", "res", "--config", "cfg.yaml", "--quiet", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((work / "res" / "report.json").read_text())["name"] == "llmbar-weird: [x"


def test_logs_skip_a_line_nested_too_deeply(work: Path) -> None:
    data = work / "data"
    data.mkdir()
    (data / "audit_log.jsonl").write_text('{"n": 1}\n' + DEEP + '\n{"n": 2}\n')
    proc = judge("logs", "audit", "--data-dir", "data", cwd=work)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert [json.loads(line) for line in proc.stdout.splitlines()] == [{"n": 1}, {"n": 2}]
    assert "audit_log.jsonl:2: skipped a line" in proc.stderr


@pytest.mark.parametrize(("make", "kind"), [("fifo", "a FIFO (named pipe)"), ("zero", "a character device")])
def test_logs_refuse_a_log_that_is_not_a_regular_file(work: Path, make: str, kind: str) -> None:
    log = work / "data" / "audit_log.jsonl"
    log.parent.mkdir()
    if make == "fifo":
        os.mkfifo(log)
    else:
        log.symlink_to("/dev/zero")
    proc = judge("logs", "audit", "--data-dir", "data", cwd=work)
    refused(proc, 1, f"judge logs: log {Path('data', 'audit_log.jsonl')} is {kind}, not a regular file")
    assert proc.stdout == ""


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (DEEP, "settings.json is nested too deeply; fix it by hand first, nothing was changed"),
        (nested(600), "settings.json is nested too deeply; fix it by hand first, nothing was changed"),
        (None, "settings.json is a FIFO (named pipe), not a regular file; nothing was changed"),
    ],
    ids=["past-the-parser", "past-the-copy", "fifo"],
)
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "write"])
def test_install_refuses_unreadable_settings(
    tmp_path: Path, settings: str | None, message: str, dry_run: bool
) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    if settings is None:
        os.mkfifo(path)
    else:
        path.write_text(settings)
    (tmp_path / "judge.yaml").write_text(PRE_BASH)
    args = ["claude-code", "install", "--config", "judge.yaml", *(["--dry-run"] if dry_run else [])]
    proc = judge(*args, cwd=tmp_path)
    refused(proc, 1, message)
    assert proc.stdout == ""
    if settings is not None:
        assert path.read_text() == settings  # untouched
