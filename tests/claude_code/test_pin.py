"""A Claude Code session keeps the judge configuration it started with.

An agent that edits, breaks or deletes judge's configuration file mid-session must not
switch the gate off for itself; the user is told that the file changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from judge.integrations.claude_code import pin as pins
from tests.claude_code.test_fail_closed import claude_code, denied

STOP_BLOCKS = (
    "hooks:\n  Stop:\n    - type: command\n      maxRejections: 5\n"
    '      command: \'echo "{\\"decision\\": \\"block\\", \\"reason\\": \\"Run the tests.\\"}"\'\n'
)
NOTHING = "hooks: {}\n"
PRE_DENIES_BASH = (
    "hooks:\n  PreToolUse:\n    - type: command\n      matcher: Bash\n"
    '      command: \'echo "{\\"decision\\": \\"block\\", \\"reason\\": \\"no Bash\\"}"\'\n'
)


def stop(session: str = "s1") -> dict[str, Any]:
    return {"hook_event_name": "Stop", "session_id": session, "stop_hook_active": False}


def pre(tool: str, session: str = "s1") -> dict[str, Any]:
    return {"hook_event_name": "PreToolUse", "session_id": session, "tool_name": tool, "tool_input": {}}


def run(tmp_path: Path, payload: dict[str, Any], config: str | None = None, **env: str) -> tuple[Any, str]:
    """Call the adapter; ``config`` rewrites judge.yaml first (None: leave it as it is)."""
    path = tmp_path / "judge.yaml"
    text = config if config is not None else path.read_text()
    return claude_code(tmp_path, text, payload, **env)


def test_an_emptied_config_does_not_end_the_sessions_gate(tmp_path: Path) -> None:
    out, _ = run(tmp_path, stop(), STOP_BLOCKS)
    assert out["decision"] == "block"
    # The agent empties the configuration: its own session is still judged, and the user told.
    out, _ = run(tmp_path, stop(), NOTHING)
    assert out["decision"] == "block" and out["reason"] == "Run the tests."
    assert "changed during this session" in out["systemMessage"] and "judge.yaml" in out["systemMessage"]
    # Told once per change, not on every call.
    out, _ = run(tmp_path, stop())
    assert out["decision"] == "block" and "systemMessage" not in out
    # A new session starts with the file as it is now.
    out, _ = run(tmp_path, stop("s2"))
    assert out is None


def test_a_deleted_or_broken_config_keeps_the_sessions_gate(tmp_path: Path) -> None:
    run(tmp_path, stop(), STOP_BLOCKS)
    (tmp_path / "judge.yaml").unlink()
    out, _ = claude_code_missing(tmp_path, stop())
    assert out["decision"] == "block" and "became unreadable" in out["systemMessage"]
    out, _ = run(tmp_path, stop(), "hooks: [not, a, mapping]\n")
    assert out["decision"] == "block" and "changed during this session" in out["systemMessage"]


def claude_code_missing(tmp_path: Path, payload: dict[str, Any]) -> tuple[Any, str]:
    """Call the adapter while its configuration file does not exist."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("JUDGE_")}
    env["JUDGE_STATE"] = str(tmp_path / "state" / "state.sqlite")
    args = [sys.executable, "-m", "judge", "claude-code", "--config", str(tmp_path / "judge.yaml")]
    proc = subprocess.run(
        args, input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return (json.loads(proc.stdout) if proc.stdout.strip() else None), proc.stderr


def test_a_policy_pinned_by_the_fast_path_survives_an_edit(tmp_path: Path) -> None:
    run(tmp_path, pre("Bash", "s0"), PRE_DENIES_BASH)  # another session loads it: the index exists
    out, _ = run(tmp_path, pre("Read"))  # s1's first call: answered by the fast path, which pins
    assert out is None
    pinned = list((tmp_path / "state" / pins.FOLDER).glob("*.json"))
    assert len(pinned) == 2  # s0's and s1's pins
    edited = PRE_DENIES_BASH.replace("matcher: Bash", "matcher: Write")
    out, _ = run(tmp_path, pre("Bash"), edited)
    assert "no Bash" in denied(out) and "changed during this session" in out["systemMessage"]
    out, _ = run(tmp_path, pre("Bash", "s3"))
    assert out is None  # the edited policy, for a new session


def test_pinning_can_be_switched_off_in_the_hook_environment(tmp_path: Path) -> None:
    run(tmp_path, stop(), STOP_BLOCKS, JUDGE_PIN_CONFIG="0")
    out, _ = run(tmp_path, stop(), NOTHING, JUDGE_PIN_CONFIG="0")
    assert out is None


def test_without_a_session_id_the_file_is_read_as_it_is(tmp_path: Path) -> None:
    payload = {"hook_event_name": "Stop", "stop_hook_active": False}
    assert run(tmp_path, payload, STOP_BLOCKS)[0]["decision"] == "block"
    assert run(tmp_path, payload, NOTHING)[0] is None


def test_lost_pins_are_told_and_the_file_judges(tmp_path: Path) -> None:
    run(tmp_path, stop(), STOP_BLOCKS)
    for copy in (tmp_path / "state" / pins.FOLDER).glob("*.conf"):
        copy.unlink()
    out, _ = run(tmp_path, stop(), NOTHING)
    assert out is not None and "decision" not in out
    assert "started with is gone" in out["systemMessage"]
    assert run(tmp_path, stop())[0] is None  # pinned to the file from then on: nothing more to tell


def test_unused_pins_are_pruned(tmp_path: Path) -> None:
    state = str(tmp_path / "state.sqlite")
    sha = pins.keep_copy(state, NOTHING)
    pins.write_pin(state, "old", str(tmp_path / "judge.yaml"), sha)
    folder = tmp_path / pins.FOLDER
    old = time.time() - pins.PRUNE_SECONDS - 60
    for path in folder.iterdir():
        os.utime(path, (old, old))
    pins.write_pin(state, "new", str(tmp_path / "judge.yaml"), sha)  # a new session prunes
    left = sorted(p.suffix for p in folder.iterdir())
    assert left == [".json"]  # the new pin; the old pin and the unused copy are gone
    assert pins.read_pin(state, "new", str(tmp_path / "judge.yaml")) is not None
    assert pins.read_pin(state, "old", str(tmp_path / "judge.yaml")) is None


def test_a_damaged_copy_is_a_lost_pin(tmp_path: Path) -> None:
    run(tmp_path, stop(), STOP_BLOCKS)
    (copy,) = (tmp_path / "state" / pins.FOLDER).glob("*.conf")
    copy.write_bytes(b"\xff\xfe not the configuration")
    out, _ = run(tmp_path, stop(), NOTHING)
    assert "decision" not in out and "started with is gone" in out["systemMessage"]


def test_a_damaged_pin_is_no_pin(tmp_path: Path) -> None:
    run(tmp_path, stop(), STOP_BLOCKS)
    (pin,) = (tmp_path / "state" / pins.FOLDER).glob("*.json")
    pin.write_text('{"format": 1, "sha256": [')
    out, _ = run(tmp_path, stop(), NOTHING)
    assert out is None  # the file as it is (and pinned to it now)
    assert json.loads(pin.read_text())["sha256"] == pins.digest(NOTHING)


def start(source: str, session: str = "s1") -> dict[str, Any]:
    return {"hook_event_name": "SessionStart", "session_id": session, "source": source}


def test_session_start_pins_before_the_agent_can_edit(tmp_path: Path) -> None:
    out, _ = run(tmp_path, start("startup"), STOP_BLOCKS)  # no index yet: the full adapter
    assert out is None  # SessionStart's output would reach the model: nothing is printed
    out, _ = run(tmp_path, start("startup", "s2"))  # the fast path pins s2
    assert out is None
    for session in ("s1", "s2"):
        out, _ = run(tmp_path, stop(session), NOTHING)
        assert out["decision"] == "block", session
        assert "changed during this session" in out["systemMessage"]


def test_a_resumed_session_starts_with_the_file_as_it_is(tmp_path: Path) -> None:
    run(tmp_path, start("startup"), STOP_BLOCKS)
    run(tmp_path, start("compact"), NOTHING)  # within the running session: still pinned
    assert run(tmp_path, stop())[0]["decision"] == "block"
    run(tmp_path, start("resume"))  # Claude Code started again: the file counts, and the user is told
    out, _ = run(tmp_path, stop())
    assert (
        out == {"systemMessage": out["systemMessage"]}
        and "changed before this session was resumed" in out["systemMessage"]
    )
    assert run(tmp_path, stop())[0] is None  # told once


def test_pins_are_private(tmp_path: Path) -> None:
    run(tmp_path, start("startup"), STOP_BLOCKS)  # the first call of all creates the state folder
    state = tmp_path / "state"
    for path in (state, state / pins.FOLDER, *(state / pins.FOLDER).iterdir()):
        assert path.stat().st_mode & 0o077 == 0, path


def test_a_session_id_that_is_not_valid_text_does_not_crash_a_policy(tmp_path: Path) -> None:
    odd = '{"hook_event_name": "PreToolUse", "session_id": "\\ud800", "tool_name": "Bash", "tool_input": {}}'
    out, _ = claude_code(tmp_path, PRE_DENIES_BASH, odd)  # (a lone surrogate: cannot be UTF-8)
    assert "no Bash" in denied(out)
    out, _ = claude_code(tmp_path, PRE_DENIES_BASH, odd)  # the fast path too
    assert "no Bash" in denied(out)


def test_a_symlink_swapped_in_for_the_config_is_an_edit_too(tmp_path: Path) -> None:
    run(tmp_path, stop(), STOP_BLOCKS)
    empty = tmp_path / "empty.yaml"
    empty.write_text(NOTHING)
    config = tmp_path / "judge.yaml"
    config.rename(tmp_path / "old.yaml")
    config.symlink_to(empty)
    out, _ = claude_code_missing(tmp_path, stop())
    assert out["decision"] == "block" and "changed during this session" in out["systemMessage"]


def test_the_change_is_told_even_when_the_call_then_fails(tmp_path: Path) -> None:
    run(tmp_path, stop(), STOP_BLOCKS.replace("maxRejections: 5", "maxRejections: 5\n      failMode: allow"))
    (tmp_path / "state" / "state.sqlite").write_text("this is not a database\n" * 100)
    out, _ = run(tmp_path, stop(), NOTHING)
    assert (
        "unexpected failure" in out["systemMessage"] and "changed during this session" in out["systemMessage"]
    )


def test_a_damaged_pin_folder_is_never_worse_than_no_pinning(tmp_path: Path) -> None:
    run(tmp_path, stop(), STOP_BLOCKS)
    (pin,) = (tmp_path / "state" / pins.FOLDER).glob("*.json")
    pin.unlink()
    os.mkfifo(pin)  # a FIFO where the pin was: never waited on
    out, _ = run(tmp_path, stop(), STOP_BLOCKS)
    assert out["decision"] == "block"
    pin.unlink()
    pin.write_text(json.dumps({"format": 1, "sha256": "\x00" * 64}))
    out, _ = run(tmp_path, stop())
    assert out["decision"] == "block"


def test_with_pinned_a_removed_pin_is_told(tmp_path: Path) -> None:
    """The installer's ``--pinned``: SessionStart pinned every session, so a judged call
    that finds none says so (the pin was removed, or SessionStart failed)."""
    run(tmp_path, start("startup"), PRE_DENIES_BASH)  # the index exists; s1 is pinned
    run(tmp_path, start("startup", "s2"), PRE_DENIES_BASH)
    assert claude_code(tmp_path, PRE_DENIES_BASH, pre("Read"), "--pinned")[0] is None  # pinned: quiet
    for pin in (tmp_path / "state" / pins.FOLDER).glob("*.json"):
        pin.unlink()
    edited = PRE_DENIES_BASH.replace("matcher: Bash", "matcher: Write")
    out, _ = claude_code(tmp_path, edited, pre("Bash"), "--pinned")
    assert "had no pinned configuration" in out["systemMessage"]
    # a call no hook matches goes to the full adapter too, rather than pin in silence
    out, _ = claude_code(tmp_path, edited, pre("Read", "s2"), "--pinned")
    assert "had no pinned configuration" in out["systemMessage"]
    assert claude_code(tmp_path, edited, pre("Read", "s2"), "--pinned")[0] is None  # once


def test_a_resume_from_inside_another_session_keeps_the_pin(tmp_path: Path) -> None:
    """An agent's Bash could run ``claude --resume <its session>`` after editing the file:
    that Claude Code started with Claude Code's mark in its environment, so its resume
    does not re-pin. (A process started with ``CLAUDECODE=1`` stands in for it.)"""
    run(tmp_path, start("startup"), STOP_BLOCKS)
    marked = subprocess.Popen(["sleep", "60"], env={**os.environ, "CLAUDECODE": "1"})
    plain = subprocess.Popen(["sleep", "60"], env={k: v for k, v in os.environ.items() if k != "CLAUDECODE"})
    try:
        run(tmp_path, start("resume"), NOTHING, CLAUDE_PID=str(marked.pid))
        assert run(tmp_path, stop())[0]["decision"] == "block"  # still the pinned configuration
        assert pins.nested({"CLAUDE_PID": str(marked.pid)})
        assert not pins.nested({"CLAUDE_PID": str(plain.pid)}) and not pins.nested({})
        run(tmp_path, start("resume"), CLAUDE_PID=str(plain.pid))  # the user's own resume
        assert "changed before this session was resumed" in run(tmp_path, stop())[0]["systemMessage"]
    finally:
        marked.kill()
        plain.kill()
        marked.wait()
        plain.wait()


class Nested:
    """A process started with Claude Code's mark: stands in for a Claude Code that an
    agent's Bash started inside its own session (its ``CLAUDE_PID``)."""

    def __enter__(self) -> dict[str, str]:
        self.proc = subprocess.Popen(["sleep", "60"], env={**os.environ, "CLAUDECODE": "1"})
        return {"CLAUDE_PID": str(self.proc.pid)}

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


def test_a_second_resume_keeps_the_notice(tmp_path: Path) -> None:
    run(tmp_path, start("startup"), STOP_BLOCKS)
    run(tmp_path, start("resume"), NOTHING)
    run(tmp_path, start("resume"))
    assert "changed before this session was resumed" in run(tmp_path, stop())[0]["systemMessage"]


def test_a_nested_run_does_not_use_up_the_sessions_notices(tmp_path: Path) -> None:
    run(tmp_path, start("startup"), STOP_BLOCKS)
    with Nested() as env:
        run(tmp_path, start("resume"), NOTHING, **env)
        nested_out, _ = run(tmp_path, stop(), **env)
    assert nested_out["decision"] == "block"
    out, _ = run(tmp_path, stop())  # the top session: still told
    assert out["decision"] == "block" and "changed during this session" in out["systemMessage"]


def test_a_session_start_that_finds_the_pin_gone_does_not_pin_in_silence(tmp_path: Path) -> None:
    for source in ("compact", "nested resume"):
        folder = tmp_path / source.replace(" ", "-")
        folder.mkdir()
        run(folder, start("startup"), STOP_BLOCKS)
        for pin in (folder / "state" / pins.FOLDER).glob("*.json"):
            pin.unlink()
        (folder / "judge.yaml").write_text(NOTHING)
        if source == "compact":
            claude_code(folder, NOTHING, start("compact"), "--pinned")
        else:
            with Nested() as env:
                claude_code(folder, NOTHING, start("resume"), "--pinned", **env)
        out, _ = claude_code(folder, NOTHING, stop(), "--pinned")
        assert "had no pinned configuration" in out["systemMessage"], source


def test_with_pinned_a_pin_that_cannot_be_written_is_told_every_time(tmp_path: Path) -> None:
    run(tmp_path, stop(), STOP_BLOCKS)
    folder = tmp_path / "state" / pins.FOLDER
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()
    folder.write_text("not a folder")
    for _ in range(2):
        out, _ = claude_code(tmp_path, NOTHING, stop(), "--pinned")
        assert "cannot pin the configuration" in out["systemMessage"]


def test_unusable_input_is_answered_by_the_sessions_pinned_policy(tmp_path: Path) -> None:
    """An agent that empties the file and then makes a call whose hook input judge cannot
    use must not get the empty file's "no hook for it"."""
    run(tmp_path, start("startup"), PRE_DENIES_BASH)
    unusable = {**pre("Bash"), "tool_use_id": 5}  # (a wrong type: the input is unusable)
    out, _ = run(tmp_path, unusable, NOTHING)
    assert "invalid hook input" in denied(out)
    out, _ = run(tmp_path, {**unusable, "session_id": "new"})  # a new session: the file as it is
    assert out is None
