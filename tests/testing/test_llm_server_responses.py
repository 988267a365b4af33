"""The test model server's OpenAI Responses API, driven by the official SDK (what Codex CLI speaks)."""

from __future__ import annotations

import openai
import pytest

from judge.testing import LLMServer, call, say


@pytest.fixture
def server(llm_server: LLMServer) -> LLMServer:
    return llm_server


def test_a_whole_response_with_text_or_a_tool_call(server: LLMServer) -> None:
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="test-key", max_retries=0)
    server.push(say("hello"), call("exec_command", cmd="ls"))
    assert client.responses.create(model="m", input="hi").output_text == "hello"
    tools = [{"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {}}}]
    (item,) = client.responses.create(model="m", input="list", tools=tools).output  # type: ignore[arg-type]
    assert (item.type, getattr(item, "name", None), getattr(item, "arguments", None)) == (
        "function_call",
        "exec_command",
        '{"cmd": "ls"}',
    )


def test_a_streamed_response_and_what_the_next_request_sends_back(server: LLMServer) -> None:
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="test-key", max_retries=0)
    server.push(call("exec_command", cmd="ls"), say("two files"))
    with client.responses.stream(model="m", input="list") as stream:
        first = stream.get_final_response()
    (item,) = first.output
    assert item.type == "function_call"
    back = [
        {"role": "user", "content": [{"type": "input_text", "text": "list"}]},
        {
            "type": "function_call",
            "call_id": item.call_id,
            "name": "exec_command",
            "arguments": item.arguments,
        },
        {"type": "function_call_output", "call_id": item.call_id, "output": "a.txt b.txt"},
    ]
    events = [event.type for event in client.responses.create(model="m", input=back, stream=True)]  # type: ignore[arg-type]
    assert events[0] == "response.created" and events[-1] == "response.completed"
    assert "response.output_text.delta" in events
    assert server.requests[1].tool_results == ["a.txt b.txt"]
    assert "list" in server.requests[1].text
