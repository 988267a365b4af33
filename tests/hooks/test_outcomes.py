"""Conformance table of the loop-ending rules and the outcome of a Stop (README's rules,
``judge/hooks/outcomes.py``): impossible, stalled, deferred, and which outcome wins when
several apply. Prompt hooks are answered by the conformance table's :class:`ScriptedJudge`
(``impossible: <reason>`` is its impossible verdict); command hooks are real commands.

``last`` is the loop's previous rejection as the gate keeps it, given here as the text it
was made from (answer, reason, repeats): the engine compares digests of normalised text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from judge.config import config_from_data
from judge.errors import ConfigError, ContextError
from judge.hooks.engine import Engine
from judge.hooks.outcomes import digest
from judge.state import StopMemory
from tests.hooks.test_engine import ScriptedJudge, cmd, pre_ctx, prompt, says, stop_ctx

CREDS = "Ask the user for the deploy key: it is not in the environment."


@dataclass
class Row:
    id: str
    hooks: list[dict[str, Any]]
    context: dict[str, Any]
    outcome: str
    decision: str
    reason: str | None = None
    count: int = 0
    forced: bool = False
    #: per hook: "impossible", "deferred" or "" (what its result says of itself)
    flags: list[str] | None = None
    last: tuple[str, str, int] | None = None
    #: the repeats the rejection leaves in memory (None: the loop does not go on)
    remembers: int | None = None


def running(n: int = 1) -> list[dict[str, Any]]:
    return [{"id": f"b{i}", "type": "shell", "status": "running", "command": "make"} for i in range(n)]


ROWS = [
    # -- impossible: the loop ends, nothing counted, the reason kept ----------------------------
    Row(
        "a prompt hook's impossible verdict allows the stop and counts nothing",
        [prompt(f"impossible: {CREDS}")],
        stop_ctx(1),
        "impossible",
        "allow",
        reason=CREDS,
        count=1,
        flags=["impossible"],
    ),
    Row(
        "a command hook may answer impossible (simple form)",
        [cmd(says({"ok": False, "impossible": True, "reason": "needs the user's choice"}))],
        stop_ctx(),
        "impossible",
        "allow",
        reason="needs the user's choice",
        flags=["impossible"],
    ),
    Row(
        "a command hook may answer impossible (extended form)",
        [cmd(says({"decision": "block", "impossible": True, "reason": "needs the user's choice"}))],
        stop_ctx(),
        "impossible",
        "allow",
        reason="needs the user's choice",
        flags=["impossible"],
    ),
    Row(
        "impossible without a reason is an approval, like any reasonless rejection",
        [cmd(says({"ok": False, "impossible": True}))],
        stop_ctx(),
        "approved",
        "allow",
        flags=[""],
    ),
    Row(
        "impossible: false is an ordinary rejection",
        [cmd(says({"ok": False, "impossible": False, "reason": "more"}))],
        stop_ctx(),
        "rejected",
        "block",
        reason="more",
        flags=[""],
        remembers=0,
    ),
    Row(
        "impossible ends the loop over another prompt hook's rejection, both reasons kept",
        [prompt("reject: Add tests."), prompt(f"impossible: {CREDS}")],
        stop_ctx(),
        "impossible",
        "allow",
        reason=f"Add tests.\n{CREDS}",
        flags=["", "impossible"],
    ),
    Row(
        "a command hook's block is never overridden by impossible",
        [cmd("echo 'lint fails' >&2; exit 2"), prompt(f"impossible: {CREDS}")],
        stop_ctx(1),
        "rejected",
        "block",
        reason=f"lint fails\n{CREDS}",
        count=1,
        flags=["", "impossible"],
        remembers=0,
    ),
    Row(
        "a command hook's error that blocks beside an impossible answer: failed_closed",
        [cmd("exit 3", failMode="block"), prompt(f"impossible: {CREDS}")],
        stop_ctx(),
        "failed_closed",
        "block",
        reason=f"Hook error: command exited with code 3\n{CREDS}",
        flags=["", "impossible"],
        remembers=0,
    ),
    Row(
        "impossible at the last allowed rejection is impossible, not forced",
        [prompt(f"impossible: {CREDS}", maxRejections=3)],
        stop_ctx(2),
        "impossible",
        "allow",
        reason=CREDS,
        count=2,
        flags=["impossible"],
    ),
    Row(
        "impossible that is not a boolean is a hook error (failMode allow)",
        [cmd(says({"ok": False, "impossible": "yes", "reason": "x"}))],
        stop_ctx(),
        "failed_open",
        "allow",
        flags=[""],
    ),
    Row(
        "an approval that says impossible contradicts itself: a hook error (failMode block)",
        [cmd(says({"ok": True, "impossible": True}), failMode="block")],
        stop_ctx(),
        "failed_closed",
        "block",
        reason="Hook error: 'impossible: true' goes with a rejection (ok: false / decision: block), "
        "not an approval",
        flags=[""],
        remembers=0,
    ),
    Row(
        "a shadow hook's impossible is recorded, never acted on",
        [prompt(f"impossible: {CREDS}", mode="shadow")],
        stop_ctx(),
        "approved",
        "allow",
        flags=["impossible"],
    ),
    # -- stalled: the same answer rejected for the same reason again ------------------------------
    Row(
        "the same answer (case and whitespace aside) rejected with the same reason: stalled",
        [prompt("reject: Add the summary.")],
        stop_ctx(1, final_output="Done.\n\nAll  TESTS pass."),
        "stalled",
        "allow",
        reason="Add the summary.",
        count=2,
        last=("done. all tests pass.", "ADD the   summary.", 0),
    ),
    Row(
        "the same answer with another reason is a new rejection",
        [prompt("reject: Add the summary.")],
        stop_ctx(1),
        "rejected",
        "block",
        reason="Add the summary.",
        count=2,
        last=("Done.", "Run the tests.", 0),
        remembers=0,
    ),
    Row(
        "another answer with the same reason is a new rejection",
        [prompt("reject: Add the summary.")],
        stop_ctx(1),
        "rejected",
        "block",
        reason="Add the summary.",
        count=2,
        last=("Done, summary below.", "Add the summary.", 0),
        remembers=0,
    ),
    Row(
        "repeats: 1 sends the first identical repeat back again",
        [prompt("reject: Add the summary.", repeats=1)],
        stop_ctx(1),
        "rejected",
        "block",
        reason="Add the summary.",
        count=2,
        last=("Done.", "Add the summary.", 0),
        remembers=1,
    ),
    Row(
        "repeats: 1 ends the loop at the second identical repeat",
        [prompt("reject: Add the summary.", repeats=1, maxRejections=10)],
        stop_ctx(2),
        "stalled",
        "allow",
        reason="Add the summary.",
        count=3,
        last=("Done.", "Add the summary.", 1),
    ),
    Row(
        "repeats is the maximum over the prompt hooks",
        [prompt("reject: Add the summary.", repeats=2, maxRejections=10), prompt("ok")],
        stop_ctx(2),
        "rejected",
        "block",
        reason="Add the summary.",
        count=3,
        last=("Done.", "Add the summary.", 1),
        remembers=2,
    ),
    Row(
        "stalled at the last allowed rejection is stalled, not forced",
        [prompt("reject: Add the summary.")],
        stop_ctx(2),
        "stalled",
        "allow",
        reason="Add the summary.",
        count=3,
        last=("Done.", "Add the summary.", 0),
    ),
    Row(
        "impossible wins over stalled",
        [prompt(f"impossible: {CREDS}")],
        stop_ctx(1),
        "impossible",
        "allow",
        reason=CREDS,
        count=1,
        flags=["impossible"],
        last=("Done.", CREDS, 0),
    ),
    Row(
        "a command hook's block is never overridden by stalled",
        [cmd("echo 'lint fails' >&2; exit 2")],
        stop_ctx(1),
        "rejected",
        "block",
        reason="lint fails",
        count=1,
        last=("Done.", "lint fails", 0),
        remembers=1,
    ),
    Row(
        "a round a hook error sent back is never stalled (the answer was not judged)",
        [prompt("error: provider down", failMode="block")],
        stop_ctx(1),
        "failed_closed",
        "block",
        reason="Hook error: provider down",
        count=2,
        last=("Done.", "Hook error: provider down", 0),
        remembers=1,
    ),
    Row(
        "a first rejection is remembered with no repeats",
        [prompt("reject: Add the summary.")],
        stop_ctx(),
        "rejected",
        "block",
        reason="Add the summary.",
        count=1,
        remembers=0,
    ),
    # -- deferred: background tasks still run ---------------------------------------------
    Row(
        "a prompt hook is deferred while background tasks run",
        [prompt("reject: Add the summary.")],
        stop_ctx(background_tasks=running()),
        "deferred",
        "allow",
        flags=["deferred"],
    ),
    Row(
        "backgroundTasks: judge runs the prompt hook all the same",
        [prompt("reject: Add the summary.", backgroundTasks="judge")],
        stop_ctx(background_tasks=running(2)),
        "rejected",
        "block",
        reason="Add the summary.",
        count=1,
        flags=[""],
        remembers=0,
    ),
    Row(
        "an empty background_tasks list defers nothing",
        [prompt("reject: Add the summary.")],
        stop_ctx(background_tasks=[]),
        "rejected",
        "block",
        reason="Add the summary.",
        count=1,
        remembers=0,
    ),
    Row(
        "command hooks still run while prompt hooks are deferred, and their block stands",
        [prompt("reject: Add the summary."), cmd("echo 'lint fails' >&2; exit 2")],
        stop_ctx(background_tasks=running()),
        "rejected",
        "block",
        reason="lint fails",
        flags=["deferred", ""],
        remembers=0,
    ),
    Row(
        "a hook error beside a deferral is failed_open",
        [prompt("reject: Add the summary."), cmd("exit 3")],
        stop_ctx(background_tasks=running()),
        "failed_open",
        "allow",
        flags=["deferred", ""],
    ),
    Row(
        "a deferral keeps the count it was given (the gate starts a new loop after it)",
        [prompt("reject: Add the summary.")],
        stop_ctx(2, background_tasks=running()),
        "deferred",
        "allow",
        count=2,
        flags=["deferred"],
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
async def test_stop_outcome(row: Row) -> None:
    judge = ScriptedJudge()
    engine = Engine(config_from_data({"hooks": {"Stop": row.hooks}}), judge=judge)
    last = None
    if row.last is not None:
        answer, reason, repeats = row.last
        last = StopMemory(digest(answer), digest(reason), repeats)
    decision = await engine.evaluate("Stop", row.context, last_rejection=last)
    out = decision.to_json()
    assert (out["outcome"], out["decision"], out["reason"]) == (row.outcome, row.decision, row.reason)
    assert (out["rejectionCount"], out["forcedStop"]) == (row.count, row.forced)
    if row.flags is not None:
        shown = [next((f for f in ("impossible", "deferred") if h.get(f) is True), "") for h in out["hooks"]]
        assert shown == row.flags
    if row.remembers is None:
        assert decision.stop_memory is None
    else:
        assert decision.stop_memory is not None and decision.stop_memory.repeats == row.remembers
    deferred = sum(1 for h in out["hooks"] if h.get("deferred"))
    assert len(judge.seen) == sum(1 for h in row.hooks if h.get("type") == "prompt") - deferred


def test_hook_results_say_impossible_and_deferred_only_when_true() -> None:
    from judge.decision import HookOutcome

    plain = HookOutcome(level="agent", index=0, type="prompt", decision="allow")
    from judge.decision import Decision

    out = Decision(event="Stop", decision="allow", hooks=[plain], outcome="approved").to_json()
    assert "impossible" not in out["hooks"][0] and "deferred" not in out["hooks"][0]


async def test_impossible_on_a_tool_event_is_an_ordinary_denial() -> None:
    config = config_from_data(
        {"hooks": {"PreToolUse": [cmd(says({"ok": False, "impossible": True, "reason": "no"}), matcher="*")]}}
    )
    decision = await Engine(config, judge=ScriptedJudge()).evaluate("PreToolUse", pre_ctx())
    out = decision.to_json()
    assert (out["decision"], out["reason"], "outcome" in out) == ("block", "no", False)
    assert "impossible" not in out["hooks"][0]


async def test_background_tasks_that_are_not_a_list_are_a_located_context_error() -> None:
    engine = Engine(config_from_data({"hooks": {"Stop": [prompt("ok")]}}), judge=ScriptedJudge())
    with pytest.raises(ContextError, match="background_tasks: Input should be a valid list"):
        await engine.evaluate("Stop", stop_ctx(background_tasks="sleep 100"))


@pytest.mark.parametrize(
    ("event", "hook", "problem"),
    [
        ("Stop", {"prompt": "p", "repeats": -1}, "hooks.Stop[0].repeats: must be between 0 and 25, got -1"),
        ("Stop", {"prompt": "p", "repeats": 26}, "hooks.Stop[0].repeats: must be between 0 and 25, got 26"),
        ("Stop", {"prompt": "p", "repeats": True}, "hooks.Stop[0].repeats: must be an integer, got True"),
        ("Stop", {"prompt": "p", "repeats": "2"}, "hooks.Stop[0].repeats: must be an integer, got '2'"),
        (
            "Stop",
            {"prompt": "p", "backgroundTasks": "wait"},
            "hooks.Stop[0].backgroundTasks: Input should be",
        ),
        ("Stop", {"prompt": "p", "background_tasks": "judge"}, "did you mean backgroundTasks?"),
        (
            "Stop",
            {"type": "command", "command": "true", "repeats": 2},
            "hooks.Stop[0].repeats: only for prompt",
        ),
        (
            "Stop",
            {"type": "command", "command": "true", "backgroundTasks": "judge"},
            "hooks.Stop[0].backgroundTasks: only for prompt hooks",
        ),
        (
            "PreToolUse",
            {"prompt": "p", "matcher": "*", "repeats": 1},
            "hooks.PreToolUse[0].repeats: only for Stop and SubagentStop hooks",
        ),
        (
            "PostToolUse",
            {"prompt": "p", "matcher": "*", "backgroundTasks": "judge"},
            "hooks.PostToolUse[0].backgroundTasks: only for Stop and SubagentStop hooks",
        ),
    ],
)
def test_repeats_and_background_tasks_are_validated_where_they_are_written(
    event: str, hook: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        config_from_data({"hooks": {event: [hook]}})
    assert any(p.startswith(problem) or problem in p for p in caught.value.problems), caught.value.problems


def test_a_command_hook_dumped_with_every_default_loads_again() -> None:
    """A dump of a hook lists repeats and backgroundTasks at their defaults: on a command
    hook (or a tool event) only a value other than the default is a mistake."""
    config = config_from_data(
        {
            "hooks": {
                "Stop": [{"type": "command", "command": "true"}],
                "PreToolUse": [cmd("true", matcher="*")],
            }
        }
    )
    dumped = {
        event: [hook.model_dump(by_alias=True, exclude_none=True) for hook in config.hooks.for_event(event)]
        for event in ("Stop", "PreToolUse")
    }
    assert dumped["Stop"][0]["repeats"] == 0 and dumped["PreToolUse"][0]["backgroundTasks"] == "defer"
    assert config_from_data({"hooks": dumped}).hooks == config.hooks
