"""Building the SDK clients: API settings from the environment, the HTTP transport, TLS.

Every client is made with ``max_retries=0`` (:mod:`judge.llm.retry` owns retries), the
SDK's aiohttp transport where installed, and one shared TLS context (none for a plain
``http://`` server).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import ssl
from collections.abc import Mapping
from typing import Any

from judge.errors import HookError


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


def sdk_client(sdk: Any, client_class: Any, api_key: str, base_url: str | None) -> Any:
    """An async SDK client (no SDK retries: :mod:`judge.llm.retry` owns them)."""
    http_client_class = sdk.DefaultAsyncHttpxClient
    if http_transport() == "aiohttp":
        http_client_class = getattr(sdk, "DefaultAioHttpClient", http_client_class)
    return client_class(
        api_key=api_key,
        base_url=base_url,
        max_retries=0,
        http_client=http_client_class(verify=tls_verify(base_url)),
    )
