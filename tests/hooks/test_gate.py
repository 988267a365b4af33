"""The gate's Stop rules across calls: the count a caller passes (validated, numeric strings
honoured, with a store as without), and a count per loop, so subagent stops neither reset
the session's Stop loop nor share its count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from judge.config import config_from_data
from judge.errors import ContextError
from judge.hooks.engine import Engine
from judge.hooks.gate import Gate
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.state import Store


class Rejecter:
    """Rejects every final answer that contains "todo"; approves the rest."""

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        if "todo" in str(request.context.get("final_output", "")):
            return PromptVerdict(ok=False, reason="unfinished", model="scripted")
        return PromptVerdict(ok=True, model="scripted")


def stop_gate(tmp_path: Path, max_rejections: int = 5) -> Gate:
    # (the same answer again and again: repeats keeps these loops from ending as stalled)
    hook = {"type": "prompt", "prompt": "judge", "maxRejections": max_rejections, "repeats": 25}
    config = config_from_data({"hooks": {"Stop": [hook], "SubagentStop": [hook]}})
    return Gate(Engine(config, judge=Rejecter()), store=Store(tmp_path / "state.db"))


@pytest.mark.parametrize("bad", ["abc", -3, True, 2.5])
async def test_malformed_count_is_refused_with_a_store_as_without(tmp_path: Path, bad: Any) -> None:
    context = {"final_output": "todo", "stop_rejection_count": bad}
    with pytest.raises(ContextError, match="stop_rejection_count"):
        await Gate(stop_gate(tmp_path).engine).decide("Stop", context, session_id="s")
    with pytest.raises(ContextError, match="stop_rejection_count"):
        await stop_gate(tmp_path).decide("Stop", context, session_id="s")


async def test_numeric_string_count_is_honoured_with_a_store(tmp_path: Path) -> None:
    context = {"final_output": "todo", "stop_rejection_count": "2"}
    without = await Gate(stop_gate(tmp_path).engine).decide("Stop", context, session_id="s")
    with_store = await stop_gate(tmp_path).decide("Stop", context, session_id="s")
    assert without.rejection_count == with_store.rejection_count == 3


async def test_subagent_stops_do_not_reset_the_sessions_stop_loop(tmp_path: Path) -> None:
    gate = stop_gate(tmp_path, max_rejections=3)
    forced = []
    for _ in range(3):
        main = await gate.decide("Stop", {"final_output": "todo"}, session_id="s")
        forced.append(main.forced_stop)
        # A subagent of the same session finishes between the main agent's stops.
        sub = await gate.decide("SubagentStop", {"final_output": "done"}, session_id="s")
        assert sub.decision == "allow" and not sub.forced_stop
    assert forced == [False, False, True]


async def test_a_subagent_loop_has_its_own_count(tmp_path: Path) -> None:
    gate = stop_gate(tmp_path, max_rejections=3)
    await gate.decide("Stop", {"final_output": "todo"}, session_id="s")
    sub = await gate.decide("SubagentStop", {"final_output": "todo"}, session_id="s")
    assert (sub.decision, sub.rejection_count) == ("block", 1)
    main = await gate.decide("Stop", {"final_output": "todo"}, session_id="s")
    assert (main.decision, main.rejection_count) == ("block", 2)
