"""wrap_dispatcher and StopGate for hand-written agent loops."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from judge.config import config_from_data
from judge.errors import HookError
from judge.hooks.engine import Engine
from judge.hooks.gate import Gate
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.integrations import SessionFacts, StopGate, wrap_dispatcher
from judge.state import Store

FREE_USER = SessionFacts(user_id="u-1", tier="free", session_id="sess-1", agent_name="support")


class PolicyJudge:
    """A scripted judge: ``rules`` maps a hook prompt to a function of the request."""

    def __init__(self, rules: dict[str, Any]) -> None:
        self.rules = rules
        self.seen: list[tuple[str, dict[str, Any]]] = []

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        prompt = request.hook.prompt or ""
        self.seen.append((prompt, request.context))
        verdict = self.rules[prompt](request)
        if isinstance(verdict, Exception):
            raise verdict
        ok, reason = verdict
        return PromptVerdict(ok=ok, reason=reason, model="scripted")


def engine_with(hooks: dict[str, Any], judge: Any) -> Engine:
    return Engine(config_from_data({"hooks": hooks}), judge=judge)


def tool_use(tool_id: str, name: str, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


class Dispatcher:
    """A tiny agent dispatcher: one Python function per tool."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def call_tool(self, block: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(block)
        output = f"{block['name']} ran with {json.dumps(block['input'], sort_keys=True)}"
        return {"type": "tool_result", "tool_use_id": block["id"], "content": output}


def tier_policy(request: PromptRequest) -> tuple[bool, str | None]:
    ctx = request.context
    if ctx["tool_name"] == "prepare_case_file" and ctx["trusted"]["tier"] == "free":
        return (
            False,
            "free-tier users cannot call prepare_case_file. Suggest upgrade or route to general FAQ.",
        )
    return True, None


PRE_TIER = {"PreToolUse": [{"prompt": "tier", "matcher": "*"}]}


# ---------------------------------------------------------------------------
# wrap_dispatcher


def test_denial_keeps_conversation_valid() -> None:
    dispatcher = Dispatcher()
    original = dispatcher.call_tool
    engine = engine_with(PRE_TIER, PolicyJudge({"tier": tier_policy}))
    dispatcher.call_tool = wrap_dispatcher(original, engine, FREE_USER)  # type: ignore[method-assign, assignment]
    assistant_turn = [
        tool_use("toolu_01", "search_faq", query="refund"),
        tool_use("toolu_02", "prepare_case_file", case="C-9"),
        tool_use("toolu_03", "get_order", order="O-1"),
    ]
    results = [dispatcher.call_tool(block) for block in assistant_turn]

    # Every tool_use gets a tool_result with the same id, in order: the next API call is valid.
    assert [r["tool_use_id"] for r in results] == ["toolu_01", "toolu_02", "toolu_03"]
    assert all(r["type"] == "tool_result" for r in results)
    denied = results[1]
    assert denied == {
        "type": "tool_result",
        "tool_use_id": "toolu_02",
        "is_error": True,
        "content": "BLOCKED: free-tier users cannot call prepare_case_file. "
        "Suggest upgrade or route to general FAQ.",
    }
    assert not results[0].get("is_error") and not results[2].get("is_error")
    # The denied tool never ran.
    assert [c["name"] for c in dispatcher.calls] == ["search_faq", "get_order"]


def test_tool_input_cannot_override_trusted_context() -> None:
    judge = PolicyJudge({"tier": tier_policy})
    dispatcher = Dispatcher()
    wrapped = wrap_dispatcher(dispatcher.call_tool, engine_with(PRE_TIER, judge), FREE_USER)
    forged = tool_use(
        "toolu_07", "prepare_case_file", tier="premium", trusted={"tier": "premium"}, user_id="admin"
    )
    result = wrapped(forged)
    assert result["is_error"] is True and result["content"].startswith("BLOCKED: free-tier")
    ctx = judge.seen[0][1]
    assert ctx["trusted"] == {
        "user_id": "u-1",
        "tier": "free",
        "session_id": "sess-1",
        "agent_name": "support",
    }
    assert ctx["tool_input"]["tier"] == "premium"  # the model's claim stays in tool_input, untrusted
    assert dispatcher.calls == []


def test_hook_context_is_frozen() -> None:
    ctx = SessionFacts(user_id="u", tier="free", extra={"org": "acme"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.tier = "premium"  # type: ignore[misc]
    with pytest.raises(TypeError):
        ctx.extra["org"] = "evil"  # type: ignore[index]
    assert ctx.trusted()["org"] == "acme"


def test_first_deny_wins_and_allow_does_not_short_circuit() -> None:
    judge = PolicyJudge(
        {
            "cheap": lambda r: (r.context["tool_input"].get("amount", 0) < 100, "amount over the 100 limit"),
            "expensive": lambda r: (False, "weekly budget exhausted"),
        }
    )
    hooks = {"PreToolUse": [{"prompt": "cheap", "matcher": "pay"}, {"prompt": "expensive", "matcher": "pay"}]}
    dispatcher = Dispatcher()
    wrapped = wrap_dispatcher(dispatcher.call_tool, engine_with(hooks, judge), FREE_USER)

    big = wrapped(tool_use("toolu_1", "pay", amount=500))
    assert big["content"] == "BLOCKED: amount over the 100 limit"
    assert [p for p, _ in judge.seen] == ["cheap"]  # the later hook did not run

    small = wrapped(tool_use("toolu_2", "pay", amount=5))
    assert small["content"] == "BLOCKED: weekly budget exhausted"  # every hook must pass
    assert [p for p, _ in judge.seen] == ["cheap", "cheap", "expensive"]
    assert dispatcher.calls == []


def test_failing_pre_tool_use_hook_fails_closed(caplog: pytest.LogCaptureFixture) -> None:
    judge = PolicyJudge({"policy": lambda r: HookError("policy service unreachable")})
    hooks = {"PreToolUse": [{"prompt": "policy", "matcher": "*"}]}
    dispatcher = Dispatcher()
    wrapped = wrap_dispatcher(dispatcher.call_tool, engine_with(hooks, judge), FREE_USER)
    with caplog.at_level(logging.WARNING, logger="judge.integrations"):
        result = wrapped(tool_use("toolu_1", "delete_user", id="u-2"))
    assert result["is_error"] is True
    assert result["content"].startswith("BLOCKED: Hook error: policy service unreachable")
    assert dispatcher.calls == []
    assert "policy service unreachable" in caplog.text


class BrokenGate(Gate):
    def __init__(self, engine: Engine, broken_event: str) -> None:
        super().__init__(engine)
        self.broken_event = broken_event

    async def decide(self, event: str, context: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        if event == self.broken_event:
            raise RuntimeError("state database is locked")
        return await super().decide(event, context, *args, **kwargs)


def test_pre_tool_use_gate_failure_fails_closed(caplog: pytest.LogCaptureFixture) -> None:
    dispatcher = Dispatcher()
    gate = BrokenGate(engine_with({}, PolicyJudge({})), "PreToolUse")
    wrapped = wrap_dispatcher(dispatcher.call_tool, gate, FREE_USER)
    with caplog.at_level(logging.ERROR, logger="judge.integrations"):
        result = wrapped(tool_use("toolu_1", "search_faq"))
    assert result["is_error"] is True and result["tool_use_id"] == "toolu_1"
    assert "BLOCKED:" in result["content"] and "state database is locked" in result["content"]
    assert dispatcher.calls == []
    assert "state database is locked" in caplog.text


def test_failing_post_tool_use_hook_is_logged_and_swallowed(caplog: pytest.LogCaptureFixture) -> None:
    judge = PolicyJudge({"audit": lambda r: HookError("audit sink down")})
    hooks = {"PostToolUse": [{"prompt": "audit", "matcher": "*"}]}
    dispatcher = Dispatcher()
    wrapped = wrap_dispatcher(dispatcher.call_tool, engine_with(hooks, judge), FREE_USER)
    with caplog.at_level(logging.WARNING, logger="judge.integrations"):
        result = wrapped(tool_use("toolu_1", "get_order", order="O-1"))
    assert result == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": 'get_order ran with {"order": "O-1"}',
    }
    assert "audit sink down" in caplog.text
    assert len(dispatcher.calls) == 1

    broken = wrap_dispatcher(
        dispatcher.call_tool, BrokenGate(engine_with({}, judge), "PostToolUse"), FREE_USER
    )
    with caplog.at_level(logging.ERROR, logger="judge.integrations"):
        again = broken(tool_use("toolu_2", "get_order", order="O-2"))
    assert again["content"] == 'get_order ran with {"order": "O-2"}' and not again.get("is_error")
    assert "state database is locked" in caplog.text


def test_post_tool_use_block_replaces_content() -> None:
    judge = PolicyJudge(
        {"pii": lambda r: ("@" not in str(r.context["tool_result"]), "the result contains an e-mail")}
    )
    hooks = {"PostToolUse": [{"prompt": "pii", "matcher": "lookup"}]}

    def lookup(block: dict[str, Any]) -> str:
        return "customer: ann@example.com"  # a plain return value is wrapped as a tool_result

    wrapped = wrap_dispatcher(lookup, engine_with(hooks, judge), FREE_USER)
    result = wrapped(tool_use("toolu_5", "lookup", customer="Ann"))
    assert result == {
        "type": "tool_result",
        "tool_use_id": "toolu_5",
        "content": "[Hook Blocked Tool Result] the result contains an e-mail",
    }
    assert judge.seen[0][1]["tool_result"] == "customer: ann@example.com"


def test_additional_context_and_rewritten_input(tmp_path: Path) -> None:
    answer_pre = {
        "decision": "allow",
        "hookSpecificOutput": {"updatedInput": {"query": "refund policy", "limit": 5}},
    }
    answer_post = {"decision": "allow", "hookSpecificOutput": {"additionalContext": "Cite the FAQ id."}}
    hooks = {
        "PreToolUse": [
            {"type": "command", "matcher": "*", "command": f"cat >/dev/null; echo '{json.dumps(answer_pre)}'"}
        ],
        "PostToolUse": [
            {
                "type": "command",
                "matcher": "*",
                "command": f"cat >/dev/null; echo '{json.dumps(answer_post)}'",
            }
        ],
    }
    dispatcher = Dispatcher()
    received: list[tuple[str, str]] = []
    engine = engine_with(hooks, PolicyJudge({}))
    wrapped = wrap_dispatcher(
        dispatcher.call_tool,
        engine,
        FREE_USER,
        on_additional_context=lambda text, block: received.append((text, block["id"])),
    )
    result = wrapped(tool_use("toolu_1", "search_faq", query="refund"))
    assert dispatcher.calls[0]["input"] == {"query": "refund policy", "limit": 5}
    assert received == [("Cite the FAQ id.", "toolu_1")]
    assert result["content"] == 'search_faq ran with {"limit": 5, "query": "refund policy"}'

    # Without a callback the context travels with the result as a text block.
    plain = wrap_dispatcher(dispatcher.call_tool, engine, FREE_USER)
    result = plain(tool_use("toolu_2", "search_faq", query="x"))
    assert result["content"][-1] == {"type": "text", "text": "Cite the FAQ id."}
    assert result["tool_use_id"] == "toolu_2"


def test_original_called_exactly_once_and_name_lookup_recursion_is_caught() -> None:
    dispatcher = Dispatcher()
    engine = engine_with(PRE_TIER, PolicyJudge({"tier": tier_policy}))
    original = dispatcher.call_tool  # save the reference FIRST
    dispatcher.call_tool = wrap_dispatcher(original, engine, FREE_USER)  # type: ignore[method-assign, assignment]
    dispatcher.call_tool(tool_use("toolu_1", "search_faq", query="a"))
    assert len(dispatcher.calls) == 1

    # The mistake docs/python.md warns about: a wrapper that looks the name up again.
    looked_up = Dispatcher()
    looked_up.call_tool = wrap_dispatcher(  # type: ignore[method-assign, assignment]
        lambda block: looked_up.call_tool(block), engine, FREE_USER
    )
    with pytest.raises(RecursionError, match="save the original"):
        looked_up.call_tool(tool_use("toolu_2", "search_faq", query="b"))
    assert looked_up.calls == []


def test_a_call_that_is_not_a_tool_use_block_is_a_clear_type_error() -> None:
    dispatcher = Dispatcher()
    wrapped = wrap_dispatcher(dispatcher.call_tool, engine_with(PRE_TIER, PolicyJudge({})), FREE_USER)
    for junk in ("search_faq", None, ["tool_use"]):
        with pytest.raises(TypeError, match="call_tool takes a tool_use block"):
            wrapped(junk)  # type: ignore[arg-type]
    assert dispatcher.calls == []


async def test_async_call_tool_and_sync_wrapper_inside_a_loop() -> None:
    judge = PolicyJudge({"tier": tier_policy})
    calls: list[str] = []

    async def call_tool(block: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0)
        calls.append(block["id"])
        return {"type": "tool_result", "tool_use_id": block["id"], "content": "ok"}

    wrapped = wrap_dispatcher(call_tool, engine_with(PRE_TIER, judge), FREE_USER)
    results = await asyncio.gather(
        wrapped(tool_use("toolu_1", "search_faq")),  # type: ignore[arg-type]
        wrapped(tool_use("toolu_2", "prepare_case_file")),  # type: ignore[arg-type]
    )
    assert results[0]["content"] == "ok"
    assert results[1]["content"].startswith("BLOCKED: ")
    assert calls == ["toolu_1"]

    # A synchronous dispatcher called from async code still works.
    sync_wrapped = wrap_dispatcher(Dispatcher().call_tool, engine_with(PRE_TIER, judge), FREE_USER)
    result = sync_wrapped(tool_use("toolu_3", "prepare_case_file"))
    assert result["is_error"] is True  # type: ignore[index]


# ---------------------------------------------------------------------------
# StopGate


def stop_engine(judge: Any, max_rejections: int = 3) -> Engine:
    hooks = {"Stop": [{"prompt": "complete", "maxRejections": max_rejections}]}
    return engine_with(hooks, judge)


class TranscriptJudge:
    """Rejects until the final answer mentions a source; records what it read."""

    def __init__(self, always_reject: bool = False) -> None:
        self.always_reject = always_reject
        self.transcripts: list[str] = []
        self.counts: list[int] = []

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        assert request.transcript_path is not None
        self.transcripts.append(request.transcript_path.read_text(encoding="utf-8"))
        self.counts.append(request.context["stop_rejection_count"])
        if self.always_reject or "source:" not in request.context["final_output"]:
            return PromptVerdict(ok=False, reason="Cite the source of the weather data.")
        return PromptVerdict(ok=True)


async def test_stop_gate_anthropic_messages() -> None:
    judge = TranscriptJudge()
    gate = StopGate(stop_engine(judge), SessionFacts(session_id="a-1"))
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "What is the weather in Oslo?"},
        {"role": "assistant", "content": [tool_use("toolu_1", "get_weather", city="Oslo")]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "4°C, rain"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "It is 4°C and raining."}]},
    ]
    verdict = await gate.check("It is 4°C and raining.", messages)
    assert verdict.action == "continue" and not verdict.stop
    assert verdict.rejection_count == 1 and gate.rejection_count() == 1
    message = verdict.anthropic_message
    assert message is not None and message["role"] == "user"
    assert message["content"][0]["type"] == "text"
    assert "Cite the source of the weather data." in message["content"][0]["text"]
    transcript = judge.transcripts[0]
    assert "USER: What is the weather in Oslo?" in transcript
    assert 'TOOL CALL get_weather [toolu_1]: {"city": "Oslo"}' in transcript
    assert "TOOL RESULT [toolu_1]: 4°C, rain" in transcript

    messages.append(message)
    verdict = await gate.check("It is 4°C and raining (source: met.no).", messages)
    assert verdict.stop and not verdict.forced
    assert verdict.anthropic_message is None
    assert judge.counts == [0, 1]
    assert gate.rejection_count() == 0
    assert "Cite the source" in judge.transcripts[1]  # the appended feedback is part of the transcript


async def test_stop_gate_openai_messages_forced_stop() -> None:
    judge = TranscriptJudge(always_reject=True)
    gate = StopGate(stop_engine(judge, max_rejections=2), SessionFacts(session_id="o-1"))
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a weather bot."},
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "4°C, rain"},
    ]
    first = await gate.check("Rainy.", messages)
    assert not first.stop
    assert first.openai_message == {"role": "user", "content": first.feedback}
    assert first.feedback is not None and "Cite the source" in first.feedback
    assert 'TOOL CALL get_weather [call_1]: {"city": "Oslo"}' in judge.transcripts[0]
    assert "TOOL RESULT [call_1]: 4°C, rain" in judge.transcripts[0]

    messages.append(first.message("openai"))  # type: ignore[arg-type]
    second = await gate.check("Rainy, 4°C.", messages)  # (another answer: not a stalled loop)
    assert second.stop and second.forced
    assert second.reason == "Cite the source of the weather data."
    assert second.rejection_count == 2
    assert gate.rejection_count() == 0  # a new loop starts after the forced stop


async def test_stop_gate_counts_per_session_and_in_a_store(tmp_path: Path) -> None:
    judge = TranscriptJudge(always_reject=True)
    store = Store(tmp_path / "state.sqlite")
    gate = StopGate(stop_engine(judge, max_rejections=3), store=store)
    await gate.check("draft 1", [], session_id="x")
    await gate.check("draft 1", [], session_id="y")
    await gate.check("draft 2", [], session_id="x")
    assert store.rejection_count("x") == 2 and store.rejection_count("y") == 1

    # A new StopGate (e.g. after a restart) continues from the stored count.
    restarted = StopGate(stop_engine(judge, max_rejections=3), store=store)
    verdict = await restarted.check("draft 3", [], session_id="x")
    assert verdict.forced and verdict.stop
    assert store.rejection_count("x") == 0


def test_stop_gate_sync_without_transcript() -> None:
    judge = PolicyJudge(
        {
            "complete": lambda r: (
                r.context["final_output"].endswith("Task complete."),
                "End with 'Task complete.'",
            )
        }
    )
    gate = StopGate(stop_engine(judge), SessionFacts(session_id="s", user_id="u-1", tier="premium"))
    verdict = gate.check_sync("All done.")
    assert not verdict.stop and verdict.reason == "End with 'Task complete.'"
    assert judge.seen[0][1]["trusted"]["tier"] == "premium"
    assert "execution_summary" not in judge.seen[0][1]
    assert gate.check_sync("All done. Task complete.").stop


def test_stop_gate_refuses_messages_that_are_not_a_message_list() -> None:
    judge = PolicyJudge({"complete": lambda r: (True, None)})
    gate = StopGate(stop_engine(judge), SessionFacts(session_id="s"))
    for junk in ("user: hi", {"role": "user", "content": "hi"}, b"bytes", 42):
        with pytest.raises(TypeError, match="messages must be a list of message dicts"):
            gate.check_sync("All done.", junk)  # type: ignore[arg-type]
    assert judge.seen == []
    assert gate.check_sync("All done.", ({"role": "user", "content": "hi"},)).stop


def test_a_post_tool_use_gate_failure_withholds_the_result_when_a_hook_says_block(
    caplog: pytest.LogCaptureFixture,
) -> None:
    hooks = {"PostToolUse": [{"prompt": "audit", "matcher": "*", "failMode": "block"}]}
    dispatcher = Dispatcher()
    gate = BrokenGate(engine_with(hooks, PolicyJudge({})), "PostToolUse")
    wrapped = wrap_dispatcher(dispatcher.call_tool, gate, FREE_USER)
    with caplog.at_level(logging.ERROR, logger="judge.integrations"):
        result = wrapped(tool_use("toolu_1", "get_order", order="O-1"))
    assert result["content"].startswith("[Hook Blocked Tool Result] Hook error: ")
    assert "state database is locked" in result["content"] and "withholding the result" in caplog.text
    assert len(dispatcher.calls) == 1  # the tool ran; its result is what is withheld


def test_stop_gate_logs_the_errors_of_its_hooks(caplog: pytest.LogCaptureFixture) -> None:
    judge = PolicyJudge({"complete": lambda r: HookError("provider down")})
    gate = StopGate(stop_engine(judge), SessionFacts(session_id="s"))
    with caplog.at_level(logging.WARNING, logger="judge.integrations"):
        verdict = gate.check_sync("All done.")
    assert verdict.stop and verdict.decision.hooks[0].error == "provider down"
    assert "Stop[0] hook error: provider down" in caplog.text


def test_an_unwritable_audit_log_is_logged_and_the_decision_stands(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from judge.logs.audit import AuditLog

    (tmp_path / "audit_log.jsonl").mkdir()  # a directory where the log file goes
    judge = PolicyJudge({"pii": lambda r: (False, "the result contains an e-mail")})
    engine = engine_with({"PostToolUse": [{"prompt": "pii", "matcher": "*"}]}, judge)
    wrapped = wrap_dispatcher(Dispatcher().call_tool, Gate(engine, audit=AuditLog(tmp_path)), FREE_USER)
    with caplog.at_level(logging.ERROR):
        result = wrapped(tool_use("toolu_1", "lookup"))
    assert result["content"] == "[Hook Blocked Tool Result] the result contains an e-mail"
    assert "could not write the audit log" in caplog.text
