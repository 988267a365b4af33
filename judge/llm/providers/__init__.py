"""Model providers behind one small interface (see :mod:`judge.llm.providers.base`).

A provider's SDK is imported only when that provider is chosen. :func:`make_provider`
builds a provider with its own SDK client (close it with ``aclose()``);
:func:`leased_provider` puts it on a client the running loop reuses (see
:mod:`judge.llm.providers.pool`).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

from judge.errors import HookError
from judge.llm.providers.base import (
    Completion,
    Message,
    Provider,
    ToolCall,
    ToolSpec,
    TransientError,
)
from judge.llm.providers.clients import require_key
from judge.llm.providers.pool import lease_client
from judge.llm.tiers import ResolvedModel

__all__ = [
    "Completion",
    "Message",
    "Provider",
    "ToolCall",
    "ToolSpec",
    "TransientError",
    "leased_provider",
    "make_provider",
]


def make_provider(
    model: ResolvedModel, env: Mapping[str, str] | None = None, base_dir: Path | None = None
) -> Provider:
    """A provider for ``model``; raises :class:`HookError` for a missing key or provider."""
    env = os.environ if env is None else env
    require_key(model, env)
    if model.provider == "openai":
        from judge.llm.providers.openai import OpenAIProvider

        return OpenAIProvider(model.name, env)
    if model.provider == "anthropic":
        from judge.llm.providers.anthropic import AnthropicProvider

        return AnthropicProvider(model.name, env)
    if model.provider == "fake":
        from judge.llm.providers.fake import fake_provider

        return fake_provider(model.name, base_dir)
    raise HookError(f"unknown provider {model.provider!r} (use openai, anthropic or fake)")


@asynccontextmanager
async def leased_provider(
    model: ResolvedModel, env: Mapping[str, str] | None = None, base_dir: Path | None = None
) -> AsyncIterator[Provider]:
    """Like :func:`make_provider`, on an SDK client the running loop reuses for the same
    provider, base URL and key (see :mod:`judge.llm.providers.pool`), for the block."""
    env = os.environ if env is None else env
    require_key(model, env)
    if model.provider == "openai":
        from judge.llm.providers import openai

        key, url = openai.client_settings(model.name, env)
        async with lease_client(("openai", url, key), partial(openai.new_client, key, url)) as client:
            yield openai.OpenAIProvider(model.name, env, client=client)
    elif model.provider == "anthropic":
        from judge.llm.providers import anthropic

        key, url = anthropic.client_settings(model.name, env)
        async with lease_client(("anthropic", url, key), partial(anthropic.new_client, key, url)) as client:
            yield anthropic.AnthropicProvider(model.name, env, client=client)
    else:
        yield make_provider(model, env, base_dir)
