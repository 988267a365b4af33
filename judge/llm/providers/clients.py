"""Building the SDK clients: API settings from the environment, the HTTP transport, TLS.

Every client is made with ``max_retries=0`` (:mod:`judge.llm.retry` owns retries), the
SDK's aiohttp transport where installed, one shared TLS context (none for a plain
``http://`` server) and a cap on the size of an answer (:data:`MAX_RESPONSE_BYTES`).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import ssl
import sys
from collections.abc import AsyncIterator, Mapping
from typing import Any

from judge.errors import HookError
from judge.llm.providers.failures import ResponseTooLarge
from judge.llm.tiers import DEFAULT_MODELS, ResolvedModel


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """One TLS context for every SDK client (building one per client costs ~50 ms).

    Honours ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``; otherwise uses certifi's bundle when
    installed (as the SDKs' HTTP client does), else the system store.
    """
    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    if cafile is None and capath is None:
        try:
            import certifi

            cafile = certifi.where()
        except ImportError:
            pass
    return ssl.create_default_context(cafile=cafile, capath=capath)


#: Each SDK provider's key and base-URL variables (the SDKs' own names).
KEY_VARS: dict[str, tuple[str, str]] = {
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
}


def require_key(model: ResolvedModel, env: Mapping[str, str]) -> None:
    """A :class:`HookError` when ``model``'s provider has no key (``JUDGE_<var>`` or
    ``<var>``, as :func:`api_settings` reads them), before its SDK is even imported (that
    takes seconds, for every judgement of a run without a key). A tier's built-in model
    names the other provider's key as a way out too."""
    names = KEY_VARS.get(model.provider)
    if names is None or env.get(f"JUDGE_{names[0]}") or env.get(names[0]):
        return
    message = f"{names[0]} is not set (needed for {model.label}"
    if model.builtin and model.tier is not None:
        other = next(p for p in KEY_VARS if p != model.provider)
        other_label = f"{other}:{DEFAULT_MODELS[other][model.tier]}"
        message += (
            f", the built-in model of the tier {model.tier}; JUDGE_{names[0]} is read first); set it, "
            f"or set {KEY_VARS[other][0]} to have the tier served by {other_label}"
        )
    else:
        message += f"; JUDGE_{names[0]} is read first)"
    raise HookError(message)


def api_settings(env: Mapping[str, str], key_var: str, url_var: str, label: str) -> tuple[str, str | None]:
    """``(api key, base URL or None)`` from the environment; HookError without a key.

    ``JUDGE_<var>`` (``JUDGE_OPENAI_API_KEY``, ``JUDGE_OPENAI_BASE_URL``, ...) is read before
    ``<var>``: some agent hosts keep the model providers' variables from their hooks (Copilot
    CLI removes ``OPENAI_API_KEY`` and ``ANTHROPIC_API_KEY`` from every hook's environment)."""
    key = env.get(f"JUDGE_{key_var}") or env.get(key_var)
    if not key:
        raise HookError(f"{key_var} is not set (needed for {label}; JUDGE_{key_var} is read first)")
    return key, env.get(f"JUDGE_{url_var}") or env.get(url_var) or None


@functools.cache
def _aiohttp_installed() -> bool:
    return importlib.util.find_spec("aiohttp") is not None


def http_transport(env: Mapping[str, str] | None = None) -> str:
    """The SDKs' HTTP transport: ``aiohttp`` when installed (the SDKs' own option for
    high concurrency; about half the CPU per call of the default), else ``httpx``.
    ``JUDGE_HTTP_TRANSPORT=httpx`` forces the default transport."""
    env = os.environ if env is None else env
    if env.get("JUDGE_HTTP_TRANSPORT", "").strip().lower() == "httpx" or not _aiohttp_installed():
        return "httpx"
    return "aiohttp"


def tls_verify(base_url: str | None) -> ssl.SSLContext | bool:
    """The ``verify`` setting for a client of ``base_url``: the shared TLS context, or
    ``False`` for a plain ``http://`` URL (a local server: no TLS, so no certificates to
    load — loading them costs tens of milliseconds per process)."""
    if base_url is not None and base_url.strip().lower().startswith("http://"):
        return False
    return shared_ssl_context()


#: Largest answer read from a provider (a judge's answer is a few kB; a server sending a
#: gigabyte would otherwise be read whole, in memory, twice).
MAX_RESPONSE_BYTES = 8 << 20


class _Capped:
    """A response body stream that stops with :class:`ResponseTooLarge` past ``limit`` bytes."""

    def __init__(self, inner: Any, limit: int) -> None:
        self.inner, self.limit = inner, limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self.inner:
            seen += len(chunk)
            if seen > self.limit:
                raise ResponseTooLarge(f"the answer is larger than {self.limit} bytes; not read further")
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


async def cap_response(response: Any) -> None:
    """An ``httpx`` response hook: a body over :data:`MAX_RESPONSE_BYTES` (declared, or
    as it arrives) raises :class:`ResponseTooLarge` instead of being read whole."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_RESPONSE_BYTES:
        raise ResponseTooLarge(f"the answer declares {declared} bytes, over {MAX_RESPONSE_BYTES}")
    package = sys.modules[type(response).__module__.partition(".")[0]]  # (httpx, or the SDKs' fork)
    response.stream = _capped_class(package.AsyncByteStream)(response.stream, MAX_RESPONSE_BYTES)


@functools.cache
def _capped_class(stream_base: type) -> type:
    """:class:`_Capped` as the HTTP library's async stream (which it checks the type of)."""
    return type("CappedStream", (_Capped, stream_base), {})


def sdk_client(sdk: Any, client_class: Any, api_key: str, base_url: str | None) -> Any:
    """An async SDK client (no SDK retries: :mod:`judge.llm.retry` owns them), reading at
    most :data:`MAX_RESPONSE_BYTES` of an answer."""
    http_client_class = sdk.DefaultAsyncHttpxClient
    if http_transport() == "aiohttp":
        http_client_class = getattr(sdk, "DefaultAioHttpClient", http_client_class)
    return client_class(
        api_key=api_key,
        base_url=base_url,
        max_retries=0,
        http_client=http_client_class(verify=tls_verify(base_url), event_hooks={"response": [cap_response]}),
    )
