"""Provider errors say what happened, through the real SDKs and both HTTP transports:
a refused port, an unknown host, TLS spoken to a plain HTTP server, a key the server
rejects (401/403), a request that hangs; each names provider, model and base URL, and
connection failures are retried a few times, briefly."""

from __future__ import annotations

import asyncio
import itertools
import socket
import time

import pytest

from judge.config import Hook
from judge.errors import HookError
from judge.hooks.judging import PromptRequest
from judge.llm import LLMJudge
from judge.llm.providers.base import ConnectionFailure
from judge.llm.providers.failures import transport_failure
from judge.llm.retry import CONNECT_ATTEMPTS, attempt_timeout, call_with_retries
from judge.testing import LLMServer, fail, hang, verdict

FORMATS = ["openai", "anthropic"]
KEY_VARS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
URL_VARS = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}


@pytest.fixture(params=["aiohttp", "httpx"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("JUDGE_HTTP_TRANSPORT", request.param)
    return str(request.param)


def request(timeout: int = 20) -> PromptRequest:
    hook = Hook(type="prompt", prompt="Complete? $ARGUMENTS", timeout=timeout)
    return PromptRequest(hook=hook, context={"hook_event_name": "Stop", "final_output": "done"})


def closed_port() -> int:
    """A port nothing listens on: bound, then closed."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    sock.close()
    return port


def env_for(fmt: str, url: str, key: str = "test-key") -> dict[str, str]:
    return {KEY_VARS[fmt]: key, URL_VARS[fmt]: url, "JUDGE_MODEL_REASONINGFAST": f"{fmt}:judge-test"}


async def judge_error(env: dict[str, str], timeout: int = 20) -> str:
    with pytest.raises(HookError) as caught:
        await LLMJudge(env=env).evaluate(request(timeout))
    return str(caught.value)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_refused_connection_is_named_with_the_url_and_retried_briefly(fmt: str, transport: str) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    started = time.monotonic()
    message = await judge_error(env_for(fmt, url), timeout=30)
    elapsed = time.monotonic() - started
    assert message == (
        f"provider failed after {CONNECT_ATTEMPTS} attempts: {fmt}:judge-test: connection refused by {url}"
    )
    assert "timed out" not in message
    assert elapsed < 5  # a few short attempts, not the 30 s hook timeout


async def test_connection_failures_are_retried_a_few_times_quickly_then_recover() -> None:
    seen: list[float] = []

    async def attempt(timeout: float) -> str:
        seen.append(time.monotonic())
        if len(seen) < CONNECT_ATTEMPTS:
            raise ConnectionFailure("openai:m: connection refused by http://127.0.0.1:1/v1")
        return "answer"

    assert await call_with_retries(attempt, asyncio.get_running_loop().time() + 30) == "answer"
    gaps = [b - a for a, b in itertools.pairwise(seen)]
    assert len(seen) == CONNECT_ATTEMPTS and all(0.2 <= gap < 2 for gap in gaps)


def test_unknown_host_is_a_dns_failure_naming_host_and_url() -> None:
    """How the SDKs report a failed lookup (no lookup here: tests stay off the network)."""
    import openai

    def sdk_error() -> openai.APIConnectionError:
        try:
            try:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            except socket.gaierror as exc:
                raise OSError("Cannot connect to host llm.internal:443") from exc
        except OSError as exc:
            try:
                raise openai.APIConnectionError(request=httpx_request()) from exc
            except openai.APIConnectionError as wrapped:
                return wrapped

    error = transport_failure(sdk_error(), "openai:gpt-x", "https://llm.internal/v1")
    assert isinstance(error, ConnectionFailure)  # retried briefly, like a refused connection
    assert str(error) == (
        "openai:gpt-x: DNS lookup failed for llm.internal (https://llm.internal/v1): "
        "Name or service not known"
    )


def httpx_request() -> object:
    import openai

    return openai.DefaultAsyncHttpxClient().build_request("POST", "https://llm.internal/v1/chat/completions")


@pytest.mark.parametrize("fmt", FORMATS)
async def test_tls_failure_is_named_and_not_retried(fmt: str, transport: str) -> None:
    with LLMServer() as server:  # plain HTTP: the TLS handshake fails
        url = f"https://127.0.0.1:{server.port}/v1"
        message = await judge_error(env_for(fmt, url))
    assert message.startswith(f"{fmt}:judge-test: TLS failure with {url}: ")
    assert "WRONG_VERSION_NUMBER" in message or "wrong version number" in message.lower()


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_rejected_key_is_a_401_naming_the_url_and_the_variable(fmt: str, transport: str) -> None:
    with LLMServer(api_key="the-right-key") as server:
        url = server.openai_base_url if fmt == "openai" else server.anthropic_base_url
        message = await judge_error(env_for(fmt, url, key="a-wrong-key"))
        assert server.requests == []  # refused before any answer, and not retried
        ok = await LLMJudge(env=env_for(fmt, url, key="the-right-key")).evaluate(request())
    assert message == (
        f"{fmt}:judge-test: key rejected by {url} (HTTP 401); check {KEY_VARS[fmt]}: invalid api key"
    )
    assert ok.ok is True


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_forbidden_key_is_a_403_naming_the_url(fmt: str) -> None:
    with LLMServer() as server:
        server.push(fail(403, "this key may not use judge-test"))
        url = server.openai_base_url if fmt == "openai" else server.anthropic_base_url
        message = await judge_error(env_for(fmt, url))
        assert len(server.requests) == 1
    assert message == (
        f"{fmt}:judge-test: key rejected by {url} (HTTP 403); check {KEY_VARS[fmt]}: "
        "this key may not use judge-test"
    )


@pytest.mark.parametrize("fmt", FORMATS)
async def test_server_errors_name_provider_model_and_url(fmt: str) -> None:
    with LLMServer() as server:
        server.default = fail(500, "backend exploded")
        url = server.openai_base_url if fmt == "openai" else server.anthropic_base_url
        message = await judge_error(env_for(fmt, url), timeout=2)
    assert f"{fmt}:judge-test at {url}: HTTP 500: backend exploded" in message


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_hung_attempt_is_abandoned_and_retried_within_the_hook_timeout(fmt: str) -> None:
    with LLMServer() as server:
        server.push(hang(), verdict(False, "second attempt answered"))
        url = server.openai_base_url if fmt == "openai" else server.anthropic_base_url
        started = time.monotonic()
        answer = await LLMJudge(env=env_for(fmt, url)).evaluate(request(timeout=3))
        elapsed = time.monotonic() - started
        assert len(server.requests) == 2
    assert (answer.ok, answer.reason) == (False, "second attempt answered")
    assert 1.5 < elapsed < 3  # the first attempt had 2/3 of the 3 s, the retry the rest


async def test_attempts_get_a_share_of_the_remaining_time_and_the_last_one_all_of_it() -> None:
    assert attempt_timeout(30) == pytest.approx(20)
    assert attempt_timeout(3) == pytest.approx(2)
    assert attempt_timeout(1) == 1  # a third of it would be too short for a retry


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_model_that_never_answers_is_named_when_the_hook_times_out(fmt: str) -> None:
    with LLMServer(default=hang()) as server:
        url = server.openai_base_url if fmt == "openai" else server.anthropic_base_url
        message = await judge_error(env_for(fmt, url), timeout=1)
    assert message == f"the judgement timed out after 1s waiting for {fmt}:judge-test" or (
        message.startswith("provider failed after ")
        and f"{fmt}:judge-test: no answer from {url} in time" in message
    )
