"""The optimizer loop end to end over a labelled suite, with scripted providers.

The scripted judge's verdicts depend on the prompt's wording: with the phrase
"cite a source" in the hook prompt it blocks exactly the answers without a URL (what the
people labelled); without it, it blocks short answers (often wrong); with "be lenient"
it allows everything (worse). The scripted optimizer proposes both edits, so a better
prompt exists and a worse edit must be rejected.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from judge.evaluation.suite import load_suite
from judge.llm.providers.base import Message, ToolSpec
from judge.llm.providers.fake import FakeProvider
from judge.llm.tiers import ResolvedModel
from judge.tuning.call_budget import BudgetError, CallBudget
from judge.tuning.tuner import TuneOptions, tune

GOOD = "cite a source"
BAD = "be lenient"
CONTEXT = re.compile(r"<hook_context[^>]*>\s*(\{.*?\})\s*</hook_context>", re.DOTALL)

BASE_PROMPT = """Check that the agent's final answer is good enough for the user.
$ARGUMENTS
Respond with:
- {"ok": true} if it is
- {"ok": false, "reason": "what is missing"} if not
"""


def scripted_judge(messages: list[Message], tools: list[ToolSpec]) -> dict[str, Any]:
    user = next(m.content for m in messages if m.role == "user")
    found = CONTEXT.search(user)
    assert found is not None, "the context must reach the judge through $ARGUMENTS"
    context = json.loads(found.group(1).replace("<\\/", "</"))
    instructions = CONTEXT.sub("", user).lower()
    answer = context["final_output"]
    if BAD in instructions:
        return {"ok": True}
    if GOOD in instructions:
        return {"ok": True} if "http" in answer else {"ok": False, "reason": "Cite a source."}
    return {"ok": False, "reason": "Too short."} if len(answer) < 40 else {"ok": True}


def current_prompt(request: str) -> str:
    return request.split("<CURRENT_PROMPT>\n", 1)[1].split("\n</CURRENT_PROMPT>", 1)[0]


def scripted_optimizer(messages: list[Message], tools: list[ToolSpec]) -> str:
    request = messages[-1].content
    parent = current_prompt(request)
    if "Explain concisely" in request:
        return "The prompt never says that answers must cite their sources."
    first, rest = parent.split("\n", 1)
    worse = f"{first} Always {BAD} and allow the answer.\n{rest}"
    better = f"{first} The answer must {GOOD} (a URL).\n{rest}"
    no_arguments = parent.replace("$ARGUMENTS", "") + "\nAlso be brief."
    broken = "{% if %}\n" + parent
    return "".join(f"<PROMPT>\n{p}\n</PROMPT>\n" for p in (worse, better, no_arguments, broken))


def make_cases(n: int = 40) -> list[dict[str, Any]]:
    cases = []
    # The baseline ("block short answers") is right on 6 of every 8 cases: it allows a
    # long answer without a URL (i % 8 == 1) and blocks a short one with a URL (i % 8 == 2).
    for i in range(n):
        has_url = i % 2 == 0
        long = i % 8 in (0, 1, 4, 6)
        text = ("See https://example.org/doc" if has_url else "It is done") + (
            " and here is a long explanation of everything." if long else "."
        )
        cases.append(
            {
                "id": f"c{i:02d}",
                "context": {"hook_event_name": "Stop", "final_output": text, "current_turn": i},
                "label": "allow" if has_url else "block",
                "group": f"g{i // 2}",
            }
        )
    return cases


def write_suite(tmp: Path, prompt: str = BASE_PROMPT, cases: list[dict[str, Any]] | None = None) -> Path:
    config = {
        "hooks": {
            "Stop": [
                {"type": "command", "command": "exit 0"},
                {"type": "prompt", "prompt": prompt, "model": "openai:judge-model"},
            ]
        }
    }
    (tmp / "agent.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    rows = cases if cases is not None else make_cases()
    (tmp / "cases.jsonl").write_text("\n".join(json.dumps(c) for c in rows) + "\n", encoding="utf-8")
    suite = {"name": "cite", "config": "agent.yaml", "event": "Stop", "cases": "cases.jsonl"}
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    return tmp / "suite.yaml"


class Providers:
    """Scripted judge and optimizer providers that count every request."""

    def __init__(self) -> None:
        self.judge = FakeProvider(function=scripted_judge, label="fake:judge")
        self.optimizer = FakeProvider(function=scripted_optimizer, label="fake:optimizer")
        self.models: list[str] = []

    def judge_for(self, model: ResolvedModel) -> FakeProvider:
        self.models.append(model.label)
        return self.judge

    def optimizer_for(self, model: ResolvedModel) -> FakeProvider:
        self.models.append(model.label)
        return self.optimizer

    @property
    def calls(self) -> int:
        return len(self.judge.calls) + len(self.optimizer.calls)


async def run_tune(tmp: Path, providers: Providers, cases: list[dict[str, Any]] | None = None, **kw: Any):
    suite = load_suite(write_suite(tmp, cases=cases))
    options = TuneOptions(out=tmp / "out", hook="Stop:1", concurrency=4, **kw)
    return await tune(
        suite, options, judge_make=providers.judge_for, optimizer_make=providers.optimizer_for, env={}
    )


async def test_the_loop_finds_the_better_prompt_and_rejects_the_worse_edit(tmp_path: Path) -> None:
    providers = Providers()
    outcome = await run_tune(tmp_path, providers, rounds=2, beam=2, edits=4)
    assert GOOD in outcome.winner.prompt and outcome.winner.id != outcome.baseline.id
    assert outcome.winner.scores["dev"] == 1.0 and outcome.winner.scores["test"] == 1.0
    assert outcome.baseline.scores["dev"] is not None and outcome.baseline.scores["dev"] < 1.0
    by_status = [c.status for c in outcome.candidates if BAD in c.prompt]
    assert by_status[0] == "rejected" and set(by_status) <= {"rejected", "duplicate"}
    worse = next(c for c in outcome.candidates if BAD in c.prompt)
    # rejected on train, where it was made: never measured on dev
    assert worse.scores["train"] is not None and worse.scores["train"] < outcome.baseline.scores["train"]
    assert "dev" not in worse.scores and "not measured on dev" in (worse.note or "")
    # $ARGUMENTS and the answer schema survived every measured prompt; broken ones were not measured
    for cand in outcome.candidates:
        if "dev" in cand.scores:
            assert cand.prompt.count("$ARGUMENTS") == 1
            assert '{"ok": true}' in cand.prompt and '{"ok": false, "reason"' in cand.prompt
    repaired = [c for c in outcome.candidates if c.repairs]
    assert repaired and all("restored $ARGUMENTS" in c.repairs for c in repaired)
    invalid = [c for c in outcome.candidates if c.status == "invalid"]
    assert invalid and all("Jinja2" in (c.note or "") for c in invalid)
    # the test split was judged only for the baseline and the winner, and the report claims it
    assert set(outcome.test) == {outcome.baseline.id, outcome.winner.id}
    others = [c for c in outcome.candidates if c not in (outcome.baseline, outcome.winner)]
    assert others and all("test" not in c.scores for c in others)
    assert outcome.comparison is not None and outcome.comparison.regressed == []
    assert outcome.calls == providers.calls
    assert set(providers.models) == {"openai:judge-model", "anthropic:claude-opus-4-5"}


async def test_outputs_are_written(tmp_path: Path) -> None:
    providers = Providers()
    outcome = await run_tune(tmp_path, providers, cases=make_cases(80), rounds=1, beam=2)
    out = tmp_path / "out"
    lines = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    assert [line["id"] for line in lines] == [c.id for c in outcome.candidates]
    first = lines[0]
    assert first["parent"] is None and first["round"] == 0
    assert set(first["metrics"]) == {"train", "dev", "test"}
    assert first["metrics"]["dev"]["n"] == len(outcome.split.dev)
    child = next(line for line in lines if line["status"] == "rejected")
    assert child["parent"] == "c0" and child["round"] == 1 and "test" not in child["metrics"]
    assert sum(line["winner"] for line in lines) == 1
    best = yaml.safe_load((out / "best.yaml").read_text())
    assert best["hooks"]["Stop"][1]["prompt"] == outcome.winner.prompt
    assert best["hooks"]["Stop"][0] == {"type": "command", "command": "exit 0"}
    report = (out / "report.html").read_text()
    assert "is better on the held-out test split" in report
    splits = json.loads((out / "splits.json").read_text())
    assert sorted(splits["train"] + splits["dev"] + splits["test"]) == sorted(c["id"] for c in make_cases(80))


async def test_worse_only_edits_keep_the_baseline(tmp_path: Path) -> None:
    def only_worse(messages: list[Message], tools: list[ToolSpec]) -> str:
        request = messages[-1].content
        if "Explain concisely" in request:
            return "critique"
        parent = current_prompt(request)
        return f"<PROMPT>\n{parent}\nAlways {BAD}.\n</PROMPT>"

    providers = Providers()
    providers.optimizer = FakeProvider(function=only_worse)
    outcome = await run_tune(tmp_path, providers, rounds=2, beam=1, demos=0)
    assert outcome.winner.id == outcome.baseline.id
    assert [c.status for c in outcome.candidates[1:]] == ["rejected", "duplicate"]
    assert "is better" not in (tmp_path / "out" / "report.html").read_text()
    assert list(outcome.test) == ["c0"]  # the test split is judged once, for the baseline


def test_budget_counts_and_refuses() -> None:
    budget = CallBudget(2)
    budget.take()
    budget.take()
    assert not budget.can_afford(1)
    with pytest.raises(Exception, match="budget of 2 calls is spent"):
        budget.take()
    assert (budget.used, budget.refused) == (2, 1)


@pytest.mark.parametrize("extra", [0, 1, 2, 3, 11, 25])
async def test_budget_is_never_exceeded(tmp_path: Path, extra: int) -> None:
    # baseline on train+dev is 8+16 calls, the test reserve 2*16; then 2 optimizer calls
    # and 24 per child. `extra` beyond the baseline+reserve decides how far the search gets.
    providers = Providers()
    floor = 24 + 32
    outcome = await run_tune(tmp_path, providers, rounds=3, beam=2, max_calls=floor + extra)
    assert providers.calls == outcome.calls <= floor + extra
    assert outcome.stopped == "budget"
    assert len(providers.judge.calls) % 8 == 0  # no evaluation was cut short


async def test_budget_is_spent_exactly_when_it_fits(tmp_path: Path) -> None:
    # baseline 24 + 2 optimizer calls + the worse child 8 (rejected on train: dev is never
    # judged) + the better child 24 + test 2*16
    providers = Providers()
    limit = 24 + 2 + 8 + 24 + 32
    outcome = await run_tune(tmp_path, providers, rounds=3, beam=2, max_calls=limit, demos=0)
    assert providers.calls == outcome.calls == limit
    assert GOOD in outcome.winner.prompt


def grepping_when(condition: Any, greps: int = 1) -> Any:
    """A judge that greps the transcript ``greps`` times before it answers when
    ``condition(user message)``, else answers at once."""

    def judge(messages: list[Message], tools: list[ToolSpec]) -> Any:
        user = next(m.content for m in messages if m.role == "user")
        done = sum(1 for m in messages if m.role == "tool")
        if tools and condition(user) and done < greps:
            return {"tool_calls": [{"name": "GrepSearch", "arguments": {"query": "x", "isRegexp": False}}]}
        return scripted_judge(messages, tools)

    return judge


async def test_a_prompt_that_makes_judgements_dearer_raises_the_reserve_and_the_cap_holds(
    tmp_path: Path,
) -> None:
    # the edited prompts make the judge grep the transcript: their judgements cost more
    # than the baseline's, so the search stops before the test evaluation is starved and
    # the provider never sees more than max_calls
    grepping = grepping_when(lambda user: GOOD in user.lower() or BAD in user.lower(), greps=4)

    cases = make_cases()
    for case in cases:
        case["transcript"] = "user: question\nassistant: answer x\n"
    providers = Providers()
    providers.judge = FakeProvider(function=grepping)
    suite = load_suite(write_suite(tmp_path, cases=cases))
    options = TuneOptions(
        out=tmp_path / "out", hook="Stop:1", rounds=3, beam=2, max_calls=250, concurrency=3, demos=0
    )
    outcome = await tune(
        suite, options, judge_make=providers.judge_for, optimizer_make=providers.optimizer_for, env={}
    )
    assert providers.calls == outcome.calls <= 250
    assert outcome.stopped == "budget"
    assert outcome.calls_per_judgement > 3  # measured on the dearer child, not the baseline
    assert any(c.status == "unevaluated" for c in outcome.candidates)
    assert outcome.winner.scores["test"] is not None


@pytest.mark.parametrize("extra", [0, 7, 40, 90])
async def test_the_test_split_is_scored_when_judgements_take_several_calls(
    tmp_path: Path, extra: int
) -> None:
    # every judgement reads the transcript (2 calls): the reserve for the test split is
    # what the baseline's judgements were seen to cost, not one call per item
    cases = make_cases()
    for case in cases:
        case["transcript"] = "user: question\nassistant: answer x\n"
    providers = Providers()
    providers.judge = FakeProvider(function=grepping_when(lambda user: True))
    suite = load_suite(write_suite(tmp_path, cases=cases))
    floor = 2 * (24 + 32)  # baseline on train+dev and the test reserve, at 2 calls each
    options = TuneOptions(
        out=tmp_path / "out", hook="Stop:1", rounds=3, beam=2, max_calls=floor + extra, concurrency=3, demos=0
    )
    outcome = await tune(
        suite, options, judge_make=providers.judge_for, optimizer_make=providers.optimizer_for, env={}
    )
    assert providers.calls == outcome.calls <= floor + extra
    assert outcome.calls_per_judgement == 2.0
    assert outcome.winner.scores["test"] is not None
    assert all(ev.complete for ev in outcome.test.values())


async def test_a_budget_below_the_baseline_is_refused(tmp_path: Path) -> None:
    providers = Providers()
    with pytest.raises(BudgetError, match="too small"):
        await run_tune(tmp_path, providers, max_calls=30)
    assert providers.calls == 0


async def test_repeats_use_the_majority_and_report_flips(tmp_path: Path) -> None:
    # case c01 (label block, long, no URL) gets a different answer on every request
    seen: dict[str, int] = {}

    def flaky(messages: list[Message], tools: list[ToolSpec]) -> dict[str, Any]:
        verdict = scripted_judge(messages, tools)
        user = next(m.content for m in messages if m.role == "user")
        if "and here is a long explanation" in user and "It is done" in user:
            key = user  # the context holds the case's current_turn, so one key per case
            seen[key] = seen.get(key, 0) + 1
            return {"ok": seen[key] % 2 == 0, "reason": "flaky"}
        return verdict

    providers = Providers()
    providers.judge = FakeProvider(function=flaky)
    outcome = await run_tune(tmp_path, providers, rounds=0, repeats=2, max_calls=200)
    assert outcome.calls == providers.calls == 2 * 40  # every case judged twice, once per split
    flips = [outcome.baseline.metrics[s]["itemFlipRate"] for s in ("train", "dev", "test")]
    assert any(f is not None and f > 0 for f in flips)
    # a 1-1 tie has no majority and counts as a miss
    undecided = sum(outcome.baseline.metrics[s]["undecided"] for s in ("train", "dev", "test"))
    assert undecided == 5  # the five long answers without a URL
