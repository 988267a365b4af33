"""Dev and test items never reach a prompt: not as few-shot demos, not in what the optimizer
is shown, not in any candidate, not in any judge request except as the case being judged."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from judge.evaluation.suite import load_suite
from judge.llm.providers.fake import FakeProvider, heuristic_verdict
from judge.llm.providers.fake_optimizer import optimizer_reply
from judge.llm.tiers import ResolvedModel
from judge.tuning.tuner import TuneOptions, tune

CONTEXT = re.compile(r"<hook_context[^>]*>.*?</hook_context>", re.DOTALL)
MARK = re.compile(r"MARK(\d+)X")

PROMPT = """Check that the agent's final answer reports finished work.
$ARGUMENTS
Respond {"ok": true} or {"ok": false, "reason": "..."}
"""


def cases() -> list[dict[str, Any]]:
    """Every case's answer, rationale and transcript carry its own marker MARK<n>X. Answers
    that say "pending" or "stalled" are blocked (the baseline allows them); the rationales
    say so, so edits, demos and merges all have something to learn."""
    rows = []
    for i in range(48):
        state = ("pending", "stalled", "done", "done")[i % 4]
        answer = f"Refund MARK{i}X is {state}."
        label = "allow" if state == "done" else "block"
        rows.append(
            {
                "id": f"c{i:02d}",
                "group": f"g{i}",
                "context": {"hook_event_name": "Stop", "final_output": answer},
                "transcript": f"user: refund MARK{i}X please\nassistant: {answer}\n",
                "label": label,
                "rationale": f'{label}: it says "{state}" (case MARK{i}X)',
            }
        )
    return rows


def write_suite(tmp: Path) -> Path:
    config = {"hooks": {"Stop": [{"type": "prompt", "prompt": PROMPT, "model": "fake:heuristic"}]}}
    (tmp / "agent.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (tmp / "cases.jsonl").write_text("\n".join(json.dumps(c) for c in cases()) + "\n", encoding="utf-8")
    (tmp / "suite.yaml").write_text("name: leak\nconfig: agent.yaml\nevent: Stop\ncases: cases.jsonl\n")
    return tmp / "suite.yaml"


def marks(text: str) -> set[str]:
    return {f"c{int(n):02d}" for n in MARK.findall(text)}


async def test_dev_and_test_items_never_reach_a_prompt(tmp_path: Path) -> None:
    judge = FakeProvider(function=heuristic_verdict, label="fake:heuristic")
    optimizer = FakeProvider(function=optimizer_reply, label="fake:optimizer")

    def judge_for(model: ResolvedModel) -> FakeProvider:
        return judge

    def optimizer_for(model: ResolvedModel) -> FakeProvider:
        return optimizer

    suite = load_suite(write_suite(tmp_path))
    options = TuneOptions(out=tmp_path / "out", rounds=3, beam=2, edits=2, demos=2, merges=3)
    outcome = await tune(suite, options, judge_make=judge_for, optimizer_make=optimizer_for, env={})
    train = set(outcome.split.train)
    held_out = set(outcome.split.dev) | set(outcome.split.test)
    assert train and held_out and not train & held_out

    # the search did use train cases: as demos, and shown to the optimizer with rationales
    demos = {d for c in outcome.candidates for d in c.demos}
    shown = {s for c in outcome.candidates for s in c.shown}
    assert demos and shown and demos | shown <= train
    assert any(marks(c.prompt) for c in outcome.candidates)
    assert any(c.kind == "merge" and c.status != "invalid" for c in outcome.candidates)

    for cand in outcome.candidates:  # every prompt tried, and the winner written to best.yaml
        assert marks(cand.prompt) <= train, cand.id
    assert marks((tmp_path / "out" / "best.yaml").read_text()) <= train
    for request in optimizer.calls:
        assert marks(request[-1].content) <= train
    judged: set[str] = set()
    for request in judge.calls:
        user = next(m.content for m in request if m.role == "user")
        context = CONTEXT.search(user)
        assert context is not None
        judged |= marks(context.group(0))
        # outside the case being judged, only train cases appear (as demos)
        assert marks(CONTEXT.sub("", user)) <= train
        for m in request:
            if m.role == "tool":  # the transcript read is the judged case's own
                assert marks(m.content) <= marks(context.group(0))
    assert held_out <= judged  # dev and test were judged, each as itself
