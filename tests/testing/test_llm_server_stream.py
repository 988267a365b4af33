"""The test model server's Anthropic streaming, read by the official SDK (as Claude Code
reads it): text and tool_use blocks, stop reasons, token counting, and probes."""

from __future__ import annotations

import urllib.request

from anthropic import Anthropic

from judge.testing import LLMServer, Reply, ToolCallSpec, say


def _client(server: LLMServer) -> Anthropic:
    return Anthropic(base_url=server.anthropic_base_url, api_key="test-key", max_retries=0)


def test_a_streamed_text_answer_arrives_as_events() -> None:
    with LLMServer() as server:
        server.push(say("Hello from the stream."))
        with _client(server).messages.stream(
            model="claude-test", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            kinds = [event.type for event in stream]
            final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert "content_block_delta" in kinds
    assert final.content[0].type == "text" and final.content[0].text == "Hello from the stream."
    assert final.stop_reason == "end_turn"
    assert server.requests[0].body["stream"] is True


def test_a_streamed_tool_call_carries_its_input_in_json_pieces() -> None:
    arguments = {"command": "echo " + "x" * 100, "description": "a long command"}
    with LLMServer() as server:
        server.push(Reply(text="Running it.", tool_calls=(ToolCallSpec("Bash", arguments, id="toolu_abc"),)))
        with _client(server).messages.stream(
            model="claude-test", max_tokens=100, messages=[{"role": "user", "content": "run"}]
        ) as stream:
            pieces = [e for e in stream if e.type == "input_json"]
            final = stream.get_final_message()
    assert len(pieces) > 1
    assert [block.type for block in final.content] == ["text", "tool_use"]
    call = final.content[1]
    assert call.type == "tool_use" and call.id == "toolu_abc" and call.input == arguments
    assert final.stop_reason == "tool_use"


def test_count_tokens_and_probes_are_answered_and_recorded_apart() -> None:
    with LLMServer() as server:
        counted = _client(server).messages.count_tokens(
            model="claude-test", messages=[{"role": "user", "content": "count me"}]
        )
        with urllib.request.urlopen(urllib.request.Request(server.url + "/", method="HEAD")) as probe:
            assert probe.status == 200
        assert counted.input_tokens > 0
        assert server.requests == []
        assert [r.path for r in server.side_requests] == ["POST /v1/messages/count_tokens", "HEAD /"]
