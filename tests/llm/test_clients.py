"""Reused SDK clients (per loop, provider, base URL and key), raw-body parsing, and
the local model server's socket options."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest

from judge.config import Hook
from judge.errors import HookError
from judge.hooks.judging import PromptRequest
from judge.llm import LLMJudge
from judge.llm.providers import leased_provider
from judge.llm.providers.pool import PER_CLIENT, client_count, close_clients
from judge.llm.tiers import ResolvedModel
from judge.testing import LLMServer, Reply, verdict

FORMATS = ["openai", "anthropic"]


@pytest.fixture
def server(llm_server: LLMServer) -> LLMServer:
    return llm_server  # (tests/conftest.py: reset for each test)


def request(timeout: int = 20) -> PromptRequest:
    hook = Hook(type="prompt", prompt="Complete? $ARGUMENTS", timeout=timeout)
    return PromptRequest(hook=hook, context={"hook_event_name": "Stop", "final_output": "done"})


async def client_of(fmt: str, env: dict[str, str]) -> object:
    """The SDK client a judgement with ``env`` would use now."""
    async with leased_provider(ResolvedModel(provider=fmt, name="judge-test"), env) as provider:
        return provider._client  # type: ignore[attr-defined]


@pytest.mark.parametrize("fmt", FORMATS)
def test_one_client_per_loop_closed_when_the_loop_ends(server, fmt):
    env = server.env(fmt)

    async def run() -> tuple[object, object, int]:
        judge = LLMJudge(env=env)
        for _ in range(5):
            await judge.evaluate(request())
        return await client_of(fmt, env), await client_of(fmt, env), client_count()

    first, second, count = asyncio.run(run())
    assert first is second and count == 1
    assert first.is_closed()  # type: ignore[attr-defined]
    assert len(server.requests) == 5

    async def again() -> object:
        await LLMJudge(env=env).evaluate(request())
        return await client_of(fmt, env)

    third = asyncio.run(again())
    assert third is not first and third.is_closed()  # type: ignore[attr-defined]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_changed_key_or_base_url_gets_its_own_client(server, fmt):
    env = server.env(fmt)
    key_var = "OPENAI_API_KEY" if fmt == "openai" else "ANTHROPIC_API_KEY"
    url_var = "OPENAI_BASE_URL" if fmt == "openai" else "ANTHROPIC_BASE_URL"
    base = await client_of(fmt, env)
    other_key = await client_of(fmt, {**env, key_var: "another-key"})
    other_url = await client_of(fmt, {**env, url_var: env[url_var] + "/"})
    assert len({id(base), id(other_key), id(other_url)}) == 3 and client_count() == 3
    verdicts = await asyncio.gather(
        LLMJudge(env=env).evaluate(request()),
        LLMJudge(env={**env, key_var: "another-key"}).evaluate(request()),
    )
    assert [v.ok for v in verdicts] == [True, True]
    keys = {r.headers.get("authorization", r.headers.get("x-api-key", "")) for r in server.requests}
    assert any("another-key" in k for k in keys) and any("test-key" in k for k in keys)
    await close_clients()
    assert client_count() == 0 and base.is_closed()  # type: ignore[attr-defined]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_missing_key_is_a_hook_error_before_any_client(server, fmt):
    env = {k: v for k, v in server.env(fmt).items() if not k.endswith("API_KEY")}
    with pytest.raises(HookError, match="API_KEY is not set"):
        await client_of(fmt, env)
    assert client_count() == 0


@pytest.mark.parametrize("fmt", FORMATS)
async def test_concurrent_judgements_spread_over_clients(server, fmt):
    server.default = Reply(text='{"ok": true}', delay=0.3)
    judge = LLMJudge(env=server.env(fmt))
    n = PER_CLIENT * 2 + 1
    verdicts = await asyncio.gather(*(judge.evaluate(request()) for _ in range(n)))
    assert all(v.ok for v in verdicts) and len(server.requests) == n
    assert client_count() == 3  # at most PER_CLIENT judgements at a time per client
    await judge.evaluate(request())
    assert client_count() == 3  # idle clients are reused, not added


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("body", ["[]", '{"unexpected": true}', "not json at all"])
async def test_malformed_answer_is_retried_then_a_hook_error(server, fmt, body):
    server.default = Reply(raw=body)
    with pytest.raises(HookError, match=r"no choices|no content|not JSON"):
        await LLMJudge(env=server.env(fmt)).evaluate(request(timeout=1))
    assert len(server.requests) > 1  # retried as a transient failure


async def test_openai_text_parts_and_usage_are_read(server):
    body = {
        "choices": [
            {
                "message": {
                    "content": [
                        {"type": "text", "text": '{"ok": false, '},
                        {"type": "text", "text": '"reason": "add tests"}'},
                    ]
                }
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5},
    }
    server.push(Reply(raw=json.dumps(body)))
    result = await LLMJudge(env=server.env("openai")).evaluate(request())
    assert (result.ok, result.reason) == (False, "add tests")
    assert (result.usage.input_tokens, result.usage.output_tokens) == (12, 5)


async def test_anthropic_usage_is_read(server):
    body = {
        "content": [{"type": "text", "text": '{"ok": true}'}],
        "usage": {"input_tokens": 30, "output_tokens": 4},
    }
    server.push(Reply(raw=json.dumps(body)))
    result = await LLMJudge(env=server.env("anthropic")).evaluate(request())
    assert result.ok is True
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 4)


def test_server_sockets_are_tcp_nodelay(server):
    # asyncio turns TCP_NODELAY on for accepted sockets only when the listening socket's
    # proto is IPPROTO_TCP; without it kept-alive responses stall on delayed ACKs.
    sock = server._socket
    assert sock is not None and sock.proto == socket.IPPROTO_TCP
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_both_http_transports_judge_and_retry(server, fmt, transport, monkeypatch):
    from judge.llm.providers.clients import http_transport
    from judge.testing import fail

    monkeypatch.setenv("JUDGE_HTTP_TRANSPORT", transport)
    assert http_transport() == transport
    env = server.env(fmt)

    async def run() -> tuple[object, bool, str | None]:
        client = await client_of(fmt, env)
        server.push(fail(429, retry_after=0), verdict(False, "add the tests"))
        verdict_ = await LLMJudge(env=env).evaluate(request())
        return client, verdict_.ok, verdict_.reason

    client, ok, reason = asyncio.run(run())
    http_class = type(client._client).__name__  # type: ignore[attr-defined]
    assert ("aiohttp" in http_class.lower()) == (transport == "aiohttp")
    assert (ok, reason) == (False, "add the tests")
    assert len(server.requests) == 2  # the 429, then the verdict


async def test_judge_prefixed_provider_variables_are_read_first(server: LLMServer) -> None:
    """JUDGE_OPENAI_API_KEY / JUDGE_OPENAI_BASE_URL reach the server where OPENAI_* are absent
    (Copilot CLI removes them from every hook's environment) or point elsewhere."""
    env = {
        "JUDGE_OPENAI_API_KEY": "test-key",
        "JUDGE_OPENAI_BASE_URL": server.openai_base_url,
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    }
    server.push(verdict(False, "not yet"))
    result = await LLMJudge(env=env).evaluate(request())
    assert (result.ok, result.reason) == (False, "not yet")
    assert server.requests[0].headers["authorization"] == "Bearer test-key"
    with pytest.raises(HookError, match="JUDGE_OPENAI_API_KEY is read first"):
        async with leased_provider(ResolvedModel(provider="openai", name="judge-test"), {}):
            pass
