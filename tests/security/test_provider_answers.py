"""A provider's answer is read up to a size cap: a server that sends an endless (or a
declared gigabyte-sized) body gets a hook error naming the cap, through either HTTP
transport, instead of the judge reading it all into memory. A raw local server plays the
provider; the real SDKs talk to it."""

from __future__ import annotations

import asyncio
import importlib
import resource
from collections.abc import AsyncIterator

import pytest

from judge.config import Hook
from judge.errors import HookError
from judge.hooks.judging import PromptRequest
from judge.llm import LLMJudge
from judge.llm.providers.clients import MAX_RESPONSE_BYTES

FORMATS = ["openai", "anthropic"]
for _sdk in FORMATS:
    importlib.import_module(_sdk)

CHUNK = b"x" * 65536


async def _serve(writer: asyncio.StreamWriter, declared: bool) -> None:
    if declared:
        head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {4 << 30}\r\n\r\n"
        writer.write(head.encode())
    else:
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
        )
    piece = CHUNK if declared else f"{len(CHUNK):x}\r\n".encode() + CHUNK + b"\r\n"
    writer.write(b'{"id": "' if declared else b'8\r\n{"id": "\r\n')
    try:
        while True:  # endless: 64 kB at a time, as fast as the client takes it
            writer.write(piece)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def _endless_provider(declared: bool) -> AsyncIterator[int]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await _serve(writer, declared)

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


def _env(fmt: str, port: int, transport: str) -> dict[str, str]:
    prefix = "OPENAI" if fmt == "openai" else "ANTHROPIC"
    path = "/v1" if fmt == "openai" else ""
    return {
        f"{prefix}_BASE_URL": f"http://127.0.0.1:{port}{path}",
        f"{prefix}_API_KEY": "k",
        "JUDGE_MODEL_REASONINGFAST": f"{fmt}:m",
        "JUDGE_HTTP_TRANSPORT": transport,
    }


@pytest.mark.parametrize("declared", [False, True], ids=["endless", "declared-4GiB"])
@pytest.mark.parametrize("transport", ["httpx", "aiohttp"])
@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_huge_answer_is_a_hook_error_not_a_memory_hog(
    fmt: str, transport: str, declared: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_HTTP_TRANSPORT", transport)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    async for port in _endless_provider(declared):
        hook = Hook(type="prompt", prompt="ok? $ARGUMENTS", timeout=60)
        request = PromptRequest(hook=hook, context={"hook_event_name": "Stop", "final_output": "done"})
        with pytest.raises(HookError, match=r"larger than|declares"):
            await LLMJudge(env=_env(fmt, port, transport)).evaluate(request)
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb * 1024 < 20 * MAX_RESPONSE_BYTES, grown_kb
