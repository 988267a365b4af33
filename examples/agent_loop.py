"""A hand-written agent loop with judge's tool-call hooks and Stop gate — offline.

Run:  python examples/agent_loop.py

Everything here runs without an API key:

* the *agent's* model is the packaged fake provider with a fixed script (it asks for two
  tools, then answers, then fixes its answer when the gate sends it back);
* the *judge's* Stop hook uses ``model: fake:heuristic`` (see ``agent_loop.yaml``), the
  packaged offline judge. Point it at a real model by changing ``model`` to a tier such as
  ``ReasoningFast`` and setting ``ANTHROPIC_API_KEY`` or ``OPENAI_API_KEY``.

What it shows: the dispatcher is wrapped with :func:`judge.wrap_dispatcher`
(the free-tier user's ``prepare_case_file`` call is denied with a synthetic ``BLOCKED:``
tool_result, so the conversation stays valid), a PostToolUse hook adds context, every tool
call is written to the audit log, and :class:`judge.StopGate` sends the first
final answer back because it does not end with "Task complete.".
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from judge import AuditLog, Engine, Gate, SessionFacts, StopGate, load_config, wrap_dispatcher
from judge.testing import FakeProvider, Message, ToolCall, ToolSpec

HERE = Path(__file__).resolve().parent

# The agent's scripted model: one reply per assistant turn (FakeProvider counts turns).
AGENT_SCRIPT: list[Any] = [
    {
        "text": "Let me look that up.",
        "tool_calls": [
            {"id": "toolu_01", "name": "search_faq", "arguments": {"query": "refund time"}},
            {"id": "toolu_02", "name": "prepare_case_file", "arguments": {"order": "O-1042"}},
        ],
    },
    "Refunds are processed within 5 business days (FAQ-12). Opening a case file needs a premium plan.",
    "Refunds are processed within 5 business days (FAQ-12). Opening a case file needs a premium plan; "
    "the general FAQ covers the rest. Task complete.",
]

TOOLS = [
    ToolSpec(
        "search_faq", "Search the FAQ.", {"type": "object", "properties": {"query": {"type": "string"}}}
    ),
    ToolSpec(
        "prepare_case_file", "Open a case.", {"type": "object", "properties": {"order": {"type": "string"}}}
    ),
]


class Dispatcher:
    """The agent's own tool dispatcher (unchanged by the hooks)."""

    def call_tool(self, block: dict[str, Any]) -> dict[str, Any]:
        if block["name"] == "search_faq":
            output = "FAQ-12: refunds are processed within 5 business days."
        else:
            output = f"case opened for {block['input'].get('order')}"
        return {"type": "tool_result", "tool_use_id": block["id"], "content": output}


def to_neutral(messages: list[dict[str, Any]]) -> list[Message]:
    """Anthropic-style messages -> the provider-neutral form the fake model reads."""
    out: list[Message] = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            out.append(Message(message["role"], content))
            continue
        texts = [b["text"] for b in content if b["type"] == "text"]
        calls = tuple(
            ToolCall(b["id"], b["name"], b["input"], json.dumps(b["input"]))
            for b in content
            if b["type"] == "tool_use"
        )
        if message["role"] == "assistant":
            out.append(Message("assistant", "\n".join(texts), tool_calls=calls))
            continue
        for block in content:
            if block["type"] == "tool_result":
                out.append(Message("tool", json.dumps(block["content"]), tool_call_id=block["tool_use_id"]))
        if texts:
            out.append(Message("user", "\n".join(texts)))
    return out


async def run(data_dir: Path) -> str:
    config = load_config(HERE / "agent_loop.yaml")
    gate = Gate(Engine(config), audit=AuditLog(data_dir))
    trusted = SessionFacts(user_id="u-17", tier="free", session_id="demo-session", agent_name="support")

    dispatcher = Dispatcher()
    original = dispatcher.call_tool  # save the reference FIRST
    extra_context: list[str] = []
    dispatcher.call_tool = wrap_dispatcher(  # type: ignore[method-assign, assignment]
        original, gate, trusted, on_additional_context=lambda text, block: extra_context.append(text)
    )
    stop_gate = StopGate(gate, trusted)
    model = FakeProvider(AGENT_SCRIPT, label="fake:agent-script")

    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "How long do refunds take? Open a case for O-1042."}
    ]
    print(f"USER: {messages[0]['content']}")
    for turn in range(1, 10):
        reply = await model.complete(to_neutral(messages), TOOLS)
        blocks: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
        blocks += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments or {}}
            for c in reply.tool_calls
        ]
        messages.append({"role": "assistant", "content": blocks})
        print(f"\n[turn {turn}] AGENT (fake model): {reply.text}")

        if reply.tool_calls:
            results: list[dict[str, Any]] = []
            for block in blocks[1 if reply.text else 0 :]:
                result = await asyncio.to_thread(dispatcher.call_tool, block)
                results.append(result)
                print(f"  tool {block['name']}({json.dumps(block['input'])}) -> {result['content']}")
            user_blocks: list[dict[str, Any]] = list(results)
            for text in extra_context:
                print(f"  hook context: {text}")
                user_blocks.append({"type": "text", "text": text})
            extra_context.clear()
            messages.append({"role": "user", "content": user_blocks})
            continue

        verdict = await stop_gate.check(reply.text, messages, current_turn=turn)
        if verdict.stop:
            note = f" ({verdict.notice})" if verdict.notice else ""  # forced, impossible, stalled, ...
            print(f"  Stop gate (fake:heuristic judge): stop{note}")
            return reply.text
        print(f"  Stop gate (fake:heuristic judge): continue — {verdict.reason}")
        assert verdict.anthropic_message is not None
        messages.append(verdict.anthropic_message)
    raise RuntimeError("the agent did not finish in 10 turns")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="judge-agent-loop-") as tmp:
        answer = asyncio.run(run(Path(tmp)))
        audit = (Path(tmp) / "audit_log.jsonl").read_text(encoding="utf-8").splitlines()
        summaries = (Path(tmp) / "session_summaries.jsonl").read_text(encoding="utf-8").splitlines()
    print(f"\nFINAL ANSWER: {answer}")
    print(
        f"audit log: {len(audit)} tool call(s) recorded; session summaries: {len(summaries)} Stop decision(s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
