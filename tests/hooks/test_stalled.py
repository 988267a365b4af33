"""A stalled loop ends through the gate: the last rejection of each Stop loop is kept in the
state store (SQLite file and PostgreSQL alike, as digests), compared with the next round,
and forgotten when the loop ends; a gate without a store compares what its caller keeps."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge.config import config_from_data
from judge.hooks.engine import Engine
from judge.hooks.gate import Gate
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.state import StateStore, Store
from judge.state.postgres import PostgresStore

ANSWER = "I could not finish: the deploy key is missing."


class SameReason:
    """Rejects every answer with the same reason, unless the answer says "fixed"."""

    def __init__(self) -> None:
        self.calls = 0

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        self.calls += 1
        if "fixed" in str(request.context.get("final_output", "")):
            return PromptVerdict(ok=True)
        return PromptVerdict(ok=False, reason="Deploy it, then report the URL.")


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateStore]:
    made: StateStore
    if request.param == "sqlite":
        made = Store(tmp_path / "state.sqlite")
    else:
        made = PostgresStore(request.getfixturevalue("pg_url"))
    yield made
    made.close()


def gate(store: StateStore | None, **hook: Any) -> tuple[Gate, SameReason]:
    judge = SameReason()
    config = config_from_data(
        {"hooks": {"Stop": [{"prompt": "Done? $ARGUMENTS", "maxRejections": 10, **hook}]}}
    )
    return Gate(Engine(config, judge=judge), store=store), judge


def stop(answer: str = ANSWER) -> dict[str, Any]:
    return {"hook_event_name": "Stop", "final_output": answer}


async def test_the_same_answer_rejected_for_the_same_reason_again_ends_the_loop(store: StateStore) -> None:
    checker, judge = gate(store)
    first = await checker.decide("Stop", stop(), session_id="s")
    again = await checker.decide(
        "Stop", stop("  i could NOT finish:\nthe deploy key is missing. "), session_id="s"
    )
    assert (first.outcome, first.decision, first.rejection_count) == ("rejected", "block", 1)
    assert (again.outcome, again.decision, again.rejection_count) == ("stalled", "allow", 2)
    assert again.reason == "Deploy it, then report the URL." and not again.forced_stop
    # The loop is over: the count and the last rejection are forgotten.
    assert (store.rejection_count("s"), store.stop_memory("s")) == (0, None)
    fresh = await checker.decide("Stop", stop(), session_id="s")
    assert (fresh.outcome, fresh.rejection_count, judge.calls) == ("rejected", 1, 3)


async def test_an_agent_that_changes_its_answer_is_sent_back_until_max_rejections(store: StateStore) -> None:
    checker, _ = gate(store, maxRejections=3)
    outcomes = [
        (await checker.decide("Stop", stop(f"attempt {i}"), session_id="s")).outcome for i in range(3)
    ]
    assert outcomes == ["rejected", "rejected", "forced"]


async def test_repeats_tolerates_that_many_identical_repeats(store: StateStore) -> None:
    checker, _ = gate(store, repeats=2)
    outcomes = [(await checker.decide("Stop", stop(), session_id="s")).outcome for _ in range(4)]
    assert outcomes == ["rejected", "rejected", "rejected", "stalled"]


async def test_a_new_loop_forgets_the_last_rejection(store: StateStore) -> None:
    checker, _ = gate(store)
    await checker.decide("Stop", stop(), session_id="s")
    assert store.stop_memory("s") is not None
    again = await checker.decide("Stop", stop(), session_id="s", new_loop=True)  # the user spoke again
    assert (again.outcome, again.rejection_count) == ("rejected", 1)


async def test_an_approval_in_between_starts_over(store: StateStore) -> None:
    checker, _ = gate(store)
    await checker.decide("Stop", stop(), session_id="s")
    assert (await checker.decide("Stop", stop("fixed"), session_id="s")).outcome == "approved"
    assert store.stop_memory("s") is None
    assert (await checker.decide("Stop", stop(), session_id="s")).outcome == "rejected"


async def test_a_subagent_loop_has_its_own_last_rejection(store: StateStore) -> None:
    judge = SameReason()
    hook = {"prompt": "Done? $ARGUMENTS", "maxRejections": 10}
    config = config_from_data({"hooks": {"Stop": [hook], "SubagentStop": [hook]}})
    checker = Gate(Engine(config, judge=judge), store=store)
    assert (await checker.decide("Stop", stop(), session_id="s")).outcome == "rejected"
    sub = {**stop(), "hook_event_name": "SubagentStop"}
    assert (await checker.decide("SubagentStop", sub, session_id="s")).outcome == "rejected"
    assert (await checker.decide("Stop", stop(), session_id="s")).outcome == "stalled"


async def test_the_memory_outlives_the_process_and_keeps_no_text(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    checker, _ = gate(Store(path))
    await checker.decide("Stop", stop(), session_id="s")
    later, _ = gate(Store(path))  # another process opening the same file
    assert (await later.decide("Stop", stop(), session_id="s")).outcome == "stalled"
    await checker.decide("Stop", stop(), session_id="s2")  # (one remembered now)
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT session_id, count, answer, reason, repeats FROM rejections").fetchall()
    assert [(r[0], r[1], len(r[2]), len(r[3]), r[4]) for r in rows] == [("s2", 1, 64, 64, 0)]
    assert all(b"deploy" not in f.read_bytes().lower() for f in tmp_path.glob("state.sqlite*") if f.is_file())


async def test_a_gate_without_a_store_compares_what_its_caller_keeps() -> None:
    checker, _ = gate(None)
    first = await checker.decide("Stop", stop(), session_id="s")
    assert first.outcome == "rejected" and first.stop_memory is not None
    without = await checker.decide("Stop", stop(), session_id="s")
    assert without.outcome == "rejected"  # nothing kept, nothing to compare
    kept = await checker.decide("Stop", stop(), session_id="s", last_rejection=first.stop_memory)
    assert (kept.outcome, kept.stop_memory) == ("stalled", None)
