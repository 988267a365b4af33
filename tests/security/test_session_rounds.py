"""Concurrent Stops of one session outside the service: one round at a time.

Five `judge run --session --state` (or `judge claude-code`) processes started together
for one session used to all read count 0 and answer "block, count 1"; none was forced.
Held per session, they count 1..5 and the fifth is the single forced stop, exactly as
five consecutive Stops. The hook sleeps, so unserialised rounds would overlap.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from judge.state.session_lock import SessionBusy, session_lock

N = 5
CONFIG = {
    "hooks": {
        "Stop": [
            {
                "type": "prompt",
                "model": "fake:block:Add the test results.",
                "prompt": "Is the answer complete? $ARGUMENTS",
                "maxRejections": N,
                "repeats": N,  # (the same answer each time: counted, not a stalled loop)
            },
            {"type": "command", "command": "cat > /dev/null; sleep 0.5"},
        ]
    }
}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("JUDGE_CONFIG", None)
    return env


def _start(args: list[str], stdin: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "judge", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert proc.stdin is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    return proc


def _finish(procs: list[subprocess.Popen[str]]) -> list[str]:
    outs = []
    for proc in procs:
        assert proc.stdout is not None and proc.stderr is not None
        out = proc.stdout.read()
        err = proc.stderr.read()
        assert proc.wait(timeout=120) == 0, err
        outs.append(out)
    return outs


def _assert_one_loop(decisions: list[dict[str, Any]]) -> None:
    assert sorted(d["rejectionCount"] for d in decisions) == list(range(1, N + 1)), decisions
    forced = [d for d in decisions if d["forcedStop"]]
    assert len(forced) == 1 and forced[0]["rejectionCount"] == N and forced[0]["decision"] == "allow"
    assert all(d["decision"] == "block" for d in decisions if not d["forcedStop"])


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_concurrent_judge_run_stops_of_one_session_count_in_order(tmp_path: Path) -> None:
    config = tmp_path / "judge.json"
    config.write_text(json.dumps(CONFIG))
    state = tmp_path / "state.sqlite"
    args = ["run", "--config", str(config), "--event", "Stop", "--session", "s1", "--state", str(state)]
    context = json.dumps({"final_output": "done"})
    procs = [_start(args, context) for _ in range(N)]
    _assert_one_loop([json.loads(out) for out in _finish(procs)])
    # the lock files are gone, the count was reset by the forced stop
    assert list((tmp_path / "state.sqlite.locks").iterdir()) == []


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_concurrent_claude_code_stops_of_one_session_count_in_order(tmp_path: Path) -> None:
    config = tmp_path / "judge.json"
    config.write_text(json.dumps(CONFIG))
    args = ["claude-code", "--config", str(config), "--state", str(tmp_path / "state.sqlite")]
    # continuations of one loop (stop_hook_active), as Claude Code sends after a block
    payload = {"session_id": "s1", "hook_event_name": "Stop", "stop_hook_active": True}
    payload["last_assistant_message"] = "done"
    procs = [_start(args, json.dumps(payload)) for _ in range(N)]
    outs = _finish(procs)
    answers = [json.loads(out) for out in outs]
    # Claude Code's output: N-1 blocks, and one forced stop (Claude may stop, with a note)
    blocked = [a for a in answers if a.get("decision") == "block"]
    forced = [a for a in answers if f"Stop forced: allowed after {N} rejection" in a.get("systemMessage", "")]
    assert len(blocked) == N - 1 and len(forced) == 1, answers
    assert "decision" not in forced[0]


async def test_the_lock_wait_is_bounded(tmp_path: Path) -> None:
    async with session_lock(tmp_path, "s1"):
        with pytest.raises(SessionBusy, match="still being judged"):
            async with session_lock(tmp_path, "s1", wait=0.05):
                pass
        async with session_lock(tmp_path, "other-session", wait=0.05):
            pass  # other sessions are not held up
    async with session_lock(tmp_path, "s1", wait=0.05):
        pass  # released


async def test_rounds_in_one_process_are_serialised_too(tmp_path: Path) -> None:
    inside = 0
    most = 0

    async def round_() -> None:
        nonlocal inside, most
        async with session_lock(tmp_path, "s1"):
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.01)
            inside -= 1

    await asyncio.gather(*(round_() for _ in range(8)))
    assert most == 1
