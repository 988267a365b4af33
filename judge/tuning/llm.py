"""The optimizer's own LLM, served by the same provider layer as the judge.

``--optimizer-model`` is a tier (``Reasoning`` by default) or an explicit model
(``openai:...``, ``anthropic:...``, ``fake:...``), resolved like a hook's ``model``
(environment ``JUDGE_MODEL_<TIER>``, then the config's ``models:``, then defaults).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judge.errors import HookError
from judge.evaluation.spending import Metered, UsdLimit
from judge.llm.providers.base import Message, Provider
from judge.llm.retry import call_with_retries
from judge.llm.tiers import ResolvedModel, resolve_model
from judge.tuning.call_budget import CallBudget

SYSTEM = (
    "You are an expert prompt engineer. You improve the prompts of LLM judges that check "
    "AI agents' work. Follow the requested output format exactly."
)
DEFAULT_TIMEOUT = 180.0


class ProviderLLM:
    """An :class:`~judge.tuning.call_budget.OptimizerLLM` over a provider (with retries)."""

    def __init__(self, provider: Provider, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.provider = provider
        self.timeout = timeout

    async def propose(self, prompt: str) -> str:
        messages = [Message(role="system", content=SYSTEM), Message(role="user", content=prompt)]
        deadline = asyncio.get_running_loop().time() + self.timeout

        async def attempt(remaining: float) -> str:
            completion = await self.provider.complete(messages, [], tool_choice="none", timeout=remaining)
            return completion.text

        return await call_with_retries(attempt, deadline)

    async def aclose(self) -> None:
        """Close the provider's connections (when it has any)."""
        close = getattr(self.provider, "aclose", None)
        if close is not None:
            await close()


def optimizer_llm(
    model: str,
    budget: CallBudget,
    *,
    usd: UsdLimit | None = None,
    models: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    make: Any = None,
) -> tuple[ProviderLLM, ResolvedModel]:
    """The optimizer LLM for ``model``, its requests counted against ``budget`` (and priced
    against ``usd``); ``make`` replaces the provider factory (tests).

    Raises :class:`HookError` for an unknown model or a missing API key.
    """
    env = os.environ if env is None else env
    try:
        resolved = resolve_model(model, models, env)
    except ValueError as exc:
        raise HookError(f"--optimizer-model {model!r}: {exc}") from None
    if make is not None:
        inner: Provider = make(resolved)
    else:
        from judge.llm.providers import make_provider

        # The optimizer answers in free text: the judge's structured verdict output must be off.
        inner = make_provider(resolved, {**env, "JUDGE_STRUCTURED_OUTPUT": "0"}, base_dir)
        if hasattr(inner, "stop_sequences"):
            inner.stop_sequences = ()  # a proposed prompt may hold blank lines: no early stop
    return ProviderLLM(Metered(inner, usd, budget.take)), resolved
