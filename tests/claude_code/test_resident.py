"""``judge claude-code --resident``: the hook process hands its event to the resident judge,
which answers exactly as the hook process would have (same stdout, stderr, exit code, fail
modes, pins and deadline); when the resident cannot be reached the event is judged in the
hook process.

Real processes throughout: the hook process is ``python -m judge claude-code``, the
resident the process it starts. Each test's runtime folder is its own, and the residents
started in it are stopped afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.residents import stop_residents
from tests.security.sandbox_probe import pids_with, token

pytestmark = pytest.mark.slow

# The real entry point, reporting which heavy modules the hook process itself imported.
PROBE = (
    "import sys; from judge.cli import main; code = main(sys.argv[1:]); "
    "heavy = sorted(m for m in ('pydantic', 'yaml', 'judge.config', 'judge.hooks.engine', 'asyncio') "
    "if m in sys.modules); print('HEAVY=' + ','.join(heavy), file=sys.stderr); sys.exit(code)"
)

CONFIG = """hooks:
  PreToolUse:
    - type: command
      matcher: Edit
      command: 'echo "no edits here" >&2; exit 2'
    - type: command
      matcher: Bash
      command: 'cat > /dev/null; echo "{\\"decision\\": \\"block\\", \\"reason\\": \\"no bash\\"}"'
  Stop:
    - type: prompt
      model: fake:block
      maxRejections: 2
      prompt: "Done? $ARGUMENTS"
"""


def pre(tool: str, **extra: Any) -> dict[str, Any]:
    return {"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": tool, "tool_input": {}, **extra}


STOP = {
    "hook_event_name": "Stop",
    "session_id": "s1",
    "stop_hook_active": False,
    "last_assistant_message": "Ok.",
}


def sleeper(spelled: str, then: str = "", edit: str = "") -> str:
    """A configuration whose Bash hook sleeps (found by its ``sleep`` argument)."""
    hooks = [f'{{type: command, matcher: Bash, command: "sleep {spelled}{then}"}}', *([edit] if edit else [])]
    return "hooks:\n  PreToolUse:\n" + "".join(f"    - {hook}\n" for hook in hooks)


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The hook processes' environment: a runtime folder of this test's (a short path: a
    socket path has at most 107 bytes), a state file, no keys."""
    folder = tempfile.mkdtemp(prefix="judge-rt-")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("JUDGE_")}
    env.update({"JUDGE_RUNTIME_DIR": folder, "JUDGE_STATE": str(tmp_path / "state" / "state.sqlite")})
    try:
        yield env
    finally:
        for pid in residents(folder):
            os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not residents(folder), "the residents to stop")
        stop_residents(folder)  # those no longer listening too (retired, busy workers)
        shutil.rmtree(folder, ignore_errors=True)


def residents(folder: str) -> list[int]:
    """The pids of the residents listening in ``folder`` (from the socket's peer credentials)."""
    found = []
    for path in Path(folder).glob("*.sock"):
        with socket.socket(socket.AF_UNIX) as sock:
            try:
                sock.connect(str(path))
            except OSError:
                continue
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
            found.append(int.from_bytes(creds[:4], sys.byteorder))
    return found


def wait_until(condition: Any, what: str, limit: float = 30.0) -> None:
    end = time.monotonic() + limit
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def call(
    env: dict[str, str], config: Path, payload: Any, *flags: str, probe: bool = False
) -> tuple[str, list[str], int, list[str]]:
    """``judge claude-code --config CONFIG FLAGS`` on ``payload``: stdout, stderr lines,
    exit code and (``probe``) the heavy modules the hook process imported."""
    head = ["-c", PROBE] if probe else ["-m", "judge"]
    text = payload if isinstance(payload, str) else json.dumps(payload)
    done = subprocess.run(
        [sys.executable, *head, "claude-code", "--config", str(config), *flags],
        input=text,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    lines = done.stderr.splitlines()
    heavy = [line[6:] for line in lines if line.startswith("HEAVY=")]
    lines = [line for line in lines if not line.startswith("HEAVY=")]
    return done.stdout, lines, done.returncode, [m for m in (heavy[0] if heavy else "").split(",") if m]


def test_events_handed_to_the_resident_are_answered_as_in_the_hook_process(
    tmp_path: Path, runtime: dict[str, str]
) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    broken = tmp_path / "broken.yaml"
    broken.write_text("hooks: {PreToolUse: [{type: command}]}\n", encoding="utf-8")
    cases: list[tuple[Path, Any, tuple[str, ...]]] = [
        (config, pre("Edit"), ()),
        (config, pre("Bash"), ("--rewrite", "ask")),
        (config, STOP, ("--pinned",)),
        (config, {**STOP, "stop_hook_active": True}, ()),  # the count kept per session
        (config, '{"hook_event_name": "PreToolUse", "tool_name": 7', ()),  # unusable input
        (broken, pre("Bash"), ()),  # an invalid configuration denies
        (config, {"hook_event_name": "WorktreeCreate", "session_id": "s1"}, ()),
    ]
    state = Path(runtime["JUDGE_STATE"])
    answers: dict[bool, list[tuple[str, list[str], int]]] = {}
    for resident in (False, True):
        shutil.rmtree(state.parent, ignore_errors=True)  # the same counts from the start
        env = {**runtime, "JUDGE_STATE": str(state)}
        flags = ("--resident",) if resident else ()
        answers[resident] = [call(env, path, payload, *more, *flags)[:3] for path, payload, more in cases]
    assert answers[True] == answers[False]
    assert residents(runtime["JUDGE_RUNTIME_DIR"]), "no resident answered"
    first = answers[True][0]
    assert json.loads(first[0])["hookSpecificOutput"]["permissionDecisionReason"] == "no edits here"
    assert json.loads(answers[True][1][0])["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert json.loads(answers[True][2][0])["decision"] == "block"


def test_one_resident_serves_later_events_and_the_hook_process_stays_light(
    tmp_path: Path, runtime: dict[str, str]
) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    folder = runtime["JUDGE_RUNTIME_DIR"]
    out, _, code, heavy = call(runtime, config, pre("Edit"), "--resident", probe=True)
    assert code == 0 and "deny" in out and heavy == []
    first = residents(folder)
    for event in (pre("Bash"), STOP):
        out, _, code, heavy = call(runtime, config, event, "--resident", probe=True)
        assert code == 0 and ("block" in out or "deny" in out)
        assert heavy == [], "the hook process loaded the engine itself"
    assert residents(folder) == first and len(first) == 1
    # Owner-only: the folder, and the socket in it.
    assert os.stat(folder).st_mode & 0o777 == 0o700
    sock = next(Path(folder).glob("*.sock"))
    assert sock.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("how", ["switched off", "a folder open to others"])
def test_without_a_usable_resident_the_event_is_judged_in_the_hook_process(
    tmp_path: Path, runtime: dict[str, str], how: str
) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    env = dict(runtime)
    if how == "switched off":
        env["JUDGE_RESIDENT"] = "0"
    else:
        os.chmod(runtime["JUDGE_RUNTIME_DIR"], 0o755)
    out, _, code, heavy = call(env, config, pre("Edit"), "--resident", probe=True)
    assert code == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "judge.config" in heavy
    assert residents(runtime["JUDGE_RUNTIME_DIR"]) == []


def test_the_timeout_holds_across_the_hand_off(tmp_path: Path, runtime: dict[str, str]) -> None:
    marker, spelled = token()
    config = tmp_path / "judge.yaml"
    config.write_text(sleeper(spelled), encoding="utf-8")
    call(runtime, config, pre("Read"), "--resident")  # the resident is up
    started = time.monotonic()
    out, _, code, _ = call(runtime, config, pre("Bash"), "--resident", "--timeout", "3")
    took = time.monotonic() - started
    answer = json.loads(out)["hookSpecificOutput"]
    assert (code, answer["permissionDecision"]) == (0, "deny")
    assert "judge did not finish within its --timeout of 3 s" in answer["permissionDecisionReason"]
    assert took < 10
    wait_until(lambda: pids_with(marker) == [], "the hook to be killed", 10)


def test_a_hook_process_killed_mid_event_cancels_the_event_in_the_resident(
    tmp_path: Path, runtime: dict[str, str]
) -> None:
    marker, spelled = token()
    config = tmp_path / "judge.yaml"
    config.write_text(sleeper(spelled), encoding="utf-8")
    call(runtime, config, pre("Read"), "--resident")
    hook = subprocess.Popen(
        [sys.executable, "-m", "judge", "claude-code", "--config", str(config), "--resident"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env=runtime,
    )
    assert hook.stdin is not None
    hook.stdin.write(json.dumps(pre("Bash")).encode())
    hook.stdin.close()
    wait_until(lambda: pids_with(marker) != [], "the hook command to start")
    hook.kill()  # what Claude Code does at its own timeout
    hook.wait()
    wait_until(lambda: pids_with(marker) == [], "the hook command to be killed", 15)
    out, _, _, _ = call(runtime, config, pre("Read"), "--resident")
    assert out == "" and residents(runtime["JUDGE_RUNTIME_DIR"])  # the resident goes on


def test_a_slow_event_does_not_hold_up_another(tmp_path: Path, runtime: dict[str, str]) -> None:
    marker, spelled = token()
    config = tmp_path / "judge.yaml"
    config.write_text(
        sleeper(spelled, "; exit 0", edit="{type: command, matcher: Edit, command: 'echo no >&2; exit 2'}"),
        encoding="utf-8",
    )
    call(runtime, config, pre("Read"), "--resident")
    slow = subprocess.Popen(
        [sys.executable, "-m", "judge", "claude-code", "--config", str(config), "--resident"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=runtime,
    )
    try:
        assert slow.stdin is not None
        slow.stdin.write(json.dumps(pre("Bash")).encode())
        slow.stdin.close()
        wait_until(lambda: pids_with(marker) != [], "the slow hook to start")
        out, _, code, heavy = call(runtime, config, pre("Edit"), "--resident", probe=True)
        assert (code, heavy) == (0, []) and "deny" in out
        assert slow.poll() is None, "the slow event ended first"
    finally:
        slow.kill()
        slow.wait()


def test_a_session_keeps_its_pinned_configuration_through_the_resident(
    tmp_path: Path, runtime: dict[str, str]
) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    start = {"hook_event_name": "SessionStart", "session_id": "s1", "source": "startup"}
    assert call(runtime, config, start, "--resident", "--pinned")[:3] == ("", [], 0)
    config.write_text("hooks: {}\n", encoding="utf-8")  # the agent empties the policy
    out, _, _, _ = call(runtime, config, pre("Edit"), "--resident", "--pinned")
    answer = json.loads(out)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "still judged by the configuration it started with" in answer["systemMessage"]


def test_a_resident_whose_code_changed_is_replaced(tmp_path: Path, runtime: dict[str, str]) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    folder = runtime["JUDGE_RUNTIME_DIR"]
    call(runtime, config, pre("Edit"), "--resident")
    [old] = residents(folder)
    import judge.integrations.claude_code.worker as module

    path = Path(module.__file__)
    before = path.stat()
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))  # as a reinstall does
    try:
        wait_until(lambda: old not in residents(folder), "the old resident to step aside", 15)
        out, _, code, _ = call(runtime, config, pre("Edit"), "--resident")
        assert code == 0 and "deny" in out
        [new] = residents(folder)
        assert new != old
    finally:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_an_idle_resident_exits(tmp_path: Path, runtime: dict[str, str]) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    env = {**runtime, "JUDGE_RESIDENT_IDLE": "1"}
    out, _, _, _ = call(env, config, pre("Edit"), "--resident")
    assert "deny" in out
    # Found by its command line (a connection would be an event and keep it busy).
    folder = runtime["JUDGE_RUNTIME_DIR"]
    wait_until(lambda: not list(Path(folder).glob("*.sock")), "the idle resident to stop listening", 20)
    wait_until(lambda: pids_with(f"claude-code resident {folder}") == [], "the idle resident to exit", 20)
    [log] = Path(folder).glob("*.log")
    assert "listens at" in log.read_text() and "retires" in log.read_text()
