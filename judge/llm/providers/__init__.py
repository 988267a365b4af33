"""Model providers behind one small interface (see :mod:`judge.llm.providers.base`).

A provider's SDK is imported only when that provider is chosen.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
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
from judge.llm.tiers import ResolvedModel

__all__ = [
    "Completion",
    "Message",
    "Provider",
    "ToolCall",
    "ToolSpec",
    "TransientError",
    "make_provider",
]


def make_provider(
    model: ResolvedModel, env: Mapping[str, str] | None = None, base_dir: Path | None = None
) -> Provider:
    """A provider for ``model``; raises :class:`HookError` for a missing key or provider."""
    env = os.environ if env is None else env
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
