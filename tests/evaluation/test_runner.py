"""The eval runner: order, bounded concurrency, errors, transcripts and the judgement cache."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from judge.config import config_from_data
from judge.decision import Usage
from judge.errors import HookError
from judge.evaluation.cache import CachingJudge, JudgementCache, cache_key
from judge.evaluation.runner import CaseResult, ResultsWriter, read_results, repair_results, run_cases
from judge.evaluation.suite import Case
from judge.hooks.judging import PromptRequest, PromptVerdict

PROMPT_CONFIG: dict[str, Any] = {
    "hooks": {"Stop": [{"type": "prompt", "prompt": "Is it complete? $ARGUMENTS", "model": "fake:allow"}]}
}


class ScriptedJudge:
    """Blocks answers containing BAD, finds those containing NEEDS-USER impossible, errors on
    ERR, allows the rest; counts calls and concurrency."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.transcripts: list[str | None] = []

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            path = request.transcript_path
            self.transcripts.append(path.read_text(encoding="utf-8") if path else None)
            text = str(request.context.get("final_output", ""))
            if "ERR" in text:
                raise HookError("scripted provider failure")
            usage = Usage(inputTokens=10, outputTokens=2)
            if "BAD" in text:
                return PromptVerdict(ok=False, reason=f"incomplete: {text}", model="scripted", usage=usage)
            if "NEEDS-USER" in text:
                reason = "only the user can give the key"
                return PromptVerdict(ok=False, reason=reason, impossible=True, model="scripted", usage=usage)
            return PromptVerdict(ok=True, model="scripted", usage=usage)
        finally:
            self.in_flight -= 1


def make_case(cid: str, output: str, label: str | None = None, **extra: Any) -> Case:
    return Case.model_validate(
        {"id": cid, "context": {"final_output": output, "agent_name": "a"}, "label": label, **extra}
    )


def write_suite(folder: Path, cases: list[dict[str, Any]], config: dict[str, Any] | None = None) -> Path:
    """A suite on disk: suite.yaml, agent.yaml (JSON is YAML), cases.jsonl."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agent.yaml").write_text(json.dumps(config or PROMPT_CONFIG), encoding="utf-8")
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    suite = folder / "suite.yaml"
    suite.write_text("name: t\nconfig: agent.yaml\nevent: Stop\ncases: cases.jsonl\n", encoding="utf-8")
    return suite


def labelled_rows(n: int) -> list[dict[str, Any]]:
    """n cases: every third answer is BAD and labelled block; every fifth label is wrong."""
    rows = []
    for i in range(n):
        bad = i % 3 == 0
        label = "block" if bad else "allow"
        if i % 5 == 4:
            label = "allow" if bad else "block"
        output = f"answer {i} BAD" if bad else f"answer {i} done"
        rows.append({"id": f"c{i:03d}", "context": {"final_output": output}, "label": label, "tags": ["t"]})
    return rows


async def test_results_in_case_order_with_bounded_concurrency(tmp_path: Path) -> None:
    config = config_from_data(PROMPT_CONFIG)
    cases = [make_case(f"c{i}", "BAD" if i % 2 else "fine") for i in range(12)]
    judge = ScriptedJudge(delay=0.01)
    seen: list[CaseResult] = []
    results = await run_cases(
        config, "Stop", cases, base_dir=tmp_path, repeats=2, concurrency=3, judge=judge, on_result=seen.append
    )
    assert [(r.id, r.repeat) for r in results] == [(f"c{i}", r) for i in range(12) for r in range(2)]
    assert judge.calls == 24 and len(seen) == 24
    assert judge.max_in_flight == 3
    assert [r.decision for r in results[::2]] == ["block" if i % 2 else "allow" for i in range(12)]
    assert results[2].reason == "incomplete: BAD"
    assert results[0].usage.input_tokens == 10


async def test_errors_and_transcripts(tmp_path: Path) -> None:
    config = config_from_data(PROMPT_CONFIG)
    (tmp_path / "t.txt").write_text("from a file", encoding="utf-8")
    cases = [
        make_case("inline", "fine", transcript="inline transcript"),
        make_case("file", "fine", transcript_path="t.txt"),
        make_case("none", "fine"),
        make_case("err", "ERR"),
    ]
    judge = ScriptedJudge()
    results = await run_cases(config, "Stop", cases, base_dir=tmp_path, concurrency=1, judge=judge)
    assert judge.transcripts == ["inline transcript", "from a file", None, None]
    err = results[3]
    assert err.decision == "allow"  # failMode allow decided
    assert err.error is not None and "scripted provider failure" in err.error
    assert all(r.error is None for r in results[:3])


async def test_cache_serves_second_run_without_calls_and_command_hooks_still_run(
    tmp_path: Path, hook_writable: Path
) -> None:
    marker = hook_writable / "ran.log"
    config = config_from_data(
        {
            "hooks": {
                "Stop": [
                    PROMPT_CONFIG["hooks"]["Stop"][0],
                    {"type": "command", "command": f"echo x >> {marker}"},
                ]
            }
        }
    )
    cases = [make_case(f"c{i}", "BAD" if i == 1 else "fine", transcript=f"t{i}") for i in range(3)]
    cache = JudgementCache(tmp_path / "cache.sqlite")
    first_judge = ScriptedJudge()
    first = await run_cases(
        config, "Stop", cases, base_dir=tmp_path, judge=first_judge, cache=cache, repeats=2
    )
    assert first_judge.calls == 6 and not any(r.cached for r in first)
    second_judge = ScriptedJudge()
    second = await run_cases(
        config, "Stop", cases, base_dir=tmp_path, judge=second_judge, cache=cache, repeats=2
    )
    assert second_judge.calls == 0
    assert all(r.cached for r in second)
    assert [(r.decision, r.reason, r.usage) for r in second] == [
        (r.decision, r.reason, r.usage) for r in first
    ]
    assert marker.read_text().count("x") == 12  # the command hook ran in both runs
    # a changed transcript is a miss
    changed = [*cases[:2], make_case("c2", "fine", transcript="different")]
    third_judge = ScriptedJudge()
    await run_cases(config, "Stop", changed, base_dir=tmp_path, judge=third_judge, cache=cache)
    assert third_judge.calls == 1
    cache.close()


async def test_failed_judgements_are_not_cached(tmp_path: Path) -> None:
    config = config_from_data(PROMPT_CONFIG)
    cache = JudgementCache(tmp_path / "c.sqlite")
    judge = ScriptedJudge()
    for _ in range(2):
        await run_cases(config, "Stop", [make_case("e", "ERR")], base_dir=tmp_path, judge=judge, cache=cache)
    assert judge.calls == 2
    assert len(cache) == 0


def test_cache_key_covers_what_determines_the_answer(tmp_path: Path) -> None:
    config = config_from_data(PROMPT_CONFIG)
    hook = config.hooks.Stop[0]
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("same", encoding="utf-8")
    b.write_text("same", encoding="utf-8")
    ctx = {"hook_event_name": "Stop", "final_output": "x"}
    base = cache_key(
        PromptRequest(hook=hook, context={**ctx, "execution_summary": str(a)}, transcript_path=a)
    )
    # the same transcript content under another file name hits
    same = cache_key(
        PromptRequest(hook=hook, context={**ctx, "execution_summary": str(b)}, transcript_path=b)
    )
    assert base == same
    variants = [
        PromptRequest(hook=hook, context={**ctx, "final_output": "y"}, transcript_path=a),
        PromptRequest(hook=hook, context=ctx, transcript_path=a, repeat=1),
        PromptRequest(hook=hook, context=ctx, transcript_path=a, models={"ReasoningFast": "fake:block"}),
        PromptRequest(hook=hook.model_copy(update={"model": "fake:block"}), context=ctx, transcript_path=a),
        PromptRequest(
            hook=hook.model_copy(update={"prompt": "Other $ARGUMENTS"}), context=ctx, transcript_path=a
        ),
        PromptRequest(hook=hook, context=ctx, transcript_path=None),
    ]
    keys = {cache_key(v) for v in variants}
    assert base not in keys and len(keys) == len(variants)


async def test_caching_judge_counts(tmp_path: Path) -> None:
    inner = ScriptedJudge()
    judge = CachingJudge(inner, JudgementCache(tmp_path / "c.sqlite"))
    hook = config_from_data(PROMPT_CONFIG).hooks.Stop[0]
    request = PromptRequest(hook=hook, context={"final_output": "ok"})
    assert (await judge.evaluate(request)).ok
    assert (await judge.evaluate(request)).ok
    assert (judge.hits, judge.misses, inner.calls) == (1, 1, 1)


async def test_skip_runs_only_missing_pairs(tmp_path: Path) -> None:
    config = config_from_data(PROMPT_CONFIG)
    cases = [make_case(f"c{i}", "fine") for i in range(3)]
    judge = ScriptedJudge()
    results = await run_cases(
        config,
        "Stop",
        cases,
        base_dir=tmp_path,
        judge=judge,
        repeats=2,
        skip={("c0", 0), ("c1", 1), ("c2", 0)},
    )
    assert [(r.id, r.repeat) for r in results] == [("c0", 1), ("c1", 0), ("c2", 1)]
    assert judge.calls == 3


def test_results_writer_and_repair(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path, truncate=True)
    for i in range(50):
        writer.write(CaseResult(id=f"c{i}", decision="allow"))
    writer.close()
    assert [r.id for r in read_results(path)] == [f"c{i}" for i in range(50)]
    with path.open("ab") as fh:
        fh.write(b'{"id": "cut", "repe')  # a crash mid-line
    repair_results(path)
    assert path.read_bytes().endswith(b"\n")
    writer = ResultsWriter(path)
    writer.write(CaseResult(id="after", decision="block"))
    writer.close()
    ids = [r.id for r in read_results(path)]
    assert ids[-1] == "after" and "cut" not in ids and len(ids) == 51


@pytest.mark.parametrize("bad", [0, -1])
async def test_bad_concurrency_is_refused(tmp_path: Path, bad: int) -> None:
    with pytest.raises(ValueError, match="concurrency"):
        await run_cases(config_from_data(PROMPT_CONFIG), "Stop", [], base_dir=tmp_path, concurrency=bad)


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_a_reason_holding_a_unicode_line_separator_survives_the_results_file(
    tmp_path: Path, separator: str
) -> None:
    # results are written raw (ensure_ascii=False); only "\n" may end a record
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path, truncate=True)
    writer.write(CaseResult(id="a", decision="block", reason=f"stops mid-list:{separator}item 3 is missing"))
    writer.write(CaseResult(id="b", decision="allow"))
    writer.close()
    assert separator in path.read_text(encoding="utf-8")
    results = read_results(path)
    assert [r.id for r in results] == ["a", "b"]
    assert results[0].reason == f"stops mid-list:{separator}item 3 is missing"


@pytest.mark.parametrize(
    ("name", "value", "model"),
    [
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1", "openai:judge-test"),
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9", "anthropic:judge-test"),
        ("JUDGE_TEMPERATURE", "0", "fake:allow"),
        ("JUDGE_MAX_OUTPUT_TOKENS", "512", "fake:allow"),
        ("JUDGE_TEXT_TOOL_CALLS", "0", "fake:allow"),
    ],
)
def test_cache_key_covers_the_server_and_the_sampling_settings(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, model: str
) -> None:
    # the same model name on another server, or sampled otherwise, is another judge
    monkeypatch.delenv(name, raising=False)
    hook = config_from_data(PROMPT_CONFIG).hooks.Stop[0].model_copy(update={"model": model})
    request = PromptRequest(hook=hook, context={"final_output": "x"})
    before = cache_key(request)
    monkeypatch.setenv(name, value)
    assert cache_key(request) != before


def test_cache_key_ignores_a_server_the_hook_never_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    for model in ("anthropic:judge-test", "fake:allow"):
        hook = config_from_data(PROMPT_CONFIG).hooks.Stop[0].model_copy(update={"model": model})
        request = PromptRequest(hook=hook, context={"final_output": "x"})
        before = cache_key(request)
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        assert cache_key(request) == before
        monkeypatch.delenv("OPENAI_BASE_URL")
    openai_hook = config_from_data(PROMPT_CONFIG).hooks.Stop[0].model_copy(update={"model": "openai:m"})
    request = PromptRequest(hook=openai_hook, context={"final_output": "x"})
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    with_slash = cache_key(request)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    assert cache_key(request) == with_slash


def test_cache_key_ignores_the_timeout() -> None:
    # a cascade's later stage gets the time the earlier one left: the same question
    hook = config_from_data(PROMPT_CONFIG).hooks.Stop[0]
    request = PromptRequest(hook=hook, context={"final_output": "x"})
    longer = PromptRequest(hook=hook.model_copy(update={"timeout": 7}), context={"final_output": "x"})
    assert cache_key(request) == cache_key(longer)


class CoinJudge:
    """Blocks on odd calls, allows on even ones: every call is a fresh sample."""

    def __init__(self) -> None:
        self.calls = 0

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        self.calls += 1
        return PromptVerdict(ok=self.calls % 2 == 0, reason="odd call", model="coin")


PROMPT = {"hooks": {"Stop": [{"type": "prompt", "prompt": "Complete? $ARGUMENTS", "model": "fake:allow"}]}}


async def test_cases_with_identical_content_are_judged_independently_with_the_cache(tmp_path: Path) -> None:
    cases = [
        Case.model_validate({"id": cid, "context": {"final_output": "same answer"}}) for cid in ("a", "b")
    ]
    judge = CoinJudge()
    cache = JudgementCache(tmp_path / "cache.sqlite")
    try:
        first = await run_cases(
            config_from_data(PROMPT), "Stop", cases, base_dir=tmp_path, repeats=2, judge=judge, cache=cache
        )
        assert judge.calls == 4  # a#0, a#1, b#0, b#1: none answered from another case's entry
        again = await run_cases(
            config_from_data(PROMPT), "Stop", cases, base_dir=tmp_path, repeats=2, judge=judge, cache=cache
        )
    finally:
        cache.close()
    assert judge.calls == 4 and all(r.cached for r in again)  # the cache still works per case
    assert [r.decision for r in again] == [r.decision for r in first]
