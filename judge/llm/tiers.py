"""Model tiers: which provider and model serve a hook's ``model``.

A hook's ``model`` is either a tier (case-insensitive: ``Reasoning``, ``ReasoningFast``,
``General``, ``Fast``, ``LongContext``, or the platform aliases ``ReasoningHeavy``,
``GeneralPurpose``, ``SmallFast``, ``Eval``) or an explicit model: ``openai:<name>``,
``anthropic:<name>``, ``fake:<spec>`` or a bare name served by the default provider.

A tier resolves, first match wins, through:

1. the environment variable ``JUDGE_MODEL_<TIER>`` (e.g. ``JUDGE_MODEL_REASONINGFAST``),
2. the config file's ``models:`` mapping (keys are tiers or aliases, any case),
3. the built-in defaults of the default provider.

The default provider is Anthropic when ``ANTHROPIC_API_KEY`` is set, else OpenAI when
``OPENAI_API_KEY`` is set, else Anthropic (whose missing key is then reported); a
``JUDGE_``-prefixed key (``JUDGE_ANTHROPIC_API_KEY``) counts as its variable does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

TIERS: tuple[str, ...] = ("Reasoning", "ReasoningFast", "General", "Fast", "LongContext")
ALIASES: dict[str, str] = {
    "reasoningheavy": "Reasoning",
    "generalpurpose": "General",
    "smallfast": "Fast",
    "eval": "Reasoning",
}
#: The aliases as documented (any case is accepted).
ALIAS_NAMES: tuple[str, ...] = ("ReasoningHeavy", "GeneralPurpose", "SmallFast", "Eval")
PROVIDERS: tuple[str, ...] = ("openai", "anthropic", "fake")
#: The variable naming each SDK provider's server (``openai:`` -> ``OPENAI_BASE_URL``).
BASE_URL_VARS: dict[str, str] = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}

#: Built-in tier defaults per provider (override them with env or ``models:``).
DEFAULT_MODELS: dict[str, dict[str, str]] = {
    "anthropic": {
        "Reasoning": "claude-opus-4-5",
        "ReasoningFast": "claude-sonnet-4-5",
        "General": "claude-sonnet-4-5",
        "Fast": "claude-haiku-4-5",
        "LongContext": "claude-sonnet-4-5",
    },
    "openai": {
        "Reasoning": "gpt-5.4",
        "ReasoningFast": "gpt-5.4-mini",
        "General": "gpt-5.4-mini",
        "Fast": "gpt-5.4-nano",
        "LongContext": "gpt-5.4",
    },
}

_BY_KEY: dict[str, str] = {t.lower(): t for t in TIERS} | ALIASES


@dataclass(frozen=True)
class ResolvedModel:
    """A concrete model: ``provider`` is ``openai``, ``anthropic`` or ``fake``."""

    provider: str
    name: str
    tier: str | None = None
    #: the tier's built-in model (no ``JUDGE_MODEL_<TIER>``, no ``models:`` entry): the
    #: provider was picked by which key is set, so the other provider's key would do too
    builtin: bool = field(default=False, compare=False)

    @property
    def label(self) -> str:
        """``provider:name``, e.g. ``openai:gpt-5.4-mini`` (stable; usable as a cache key)."""
        return f"{self.provider}:{self.name}"


def canonical_tier(model: str) -> str | None:
    """The tier a name denotes (``"reasoningfast"`` → ``"ReasoningFast"``), else None."""
    return _BY_KEY.get(model.strip().lower())


def default_provider(env: Mapping[str, str] | None = None) -> str:
    """Anthropic if its key is set, else OpenAI if its key is set, else Anthropic."""
    env = os.environ if env is None else env
    if env.get("JUDGE_ANTHROPIC_API_KEY") or env.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if env.get("JUDGE_OPENAI_API_KEY") or env.get("OPENAI_API_KEY"):
        return "openai"
    return "anthropic"


def parse_model(value: str, env: Mapping[str, str] | None = None) -> ResolvedModel:
    """Parse an explicit model string (``openai:x``, ``anthropic:x``, ``fake:x`` or bare)."""
    text = value.strip()
    prefix, sep, rest = text.partition(":")
    if sep and prefix.lower() in PROVIDERS:
        if not rest.strip():
            raise ValueError(f"model {value!r} names no model after '{prefix}:'")
        return ResolvedModel(prefix.lower(), rest.strip())
    if not text:
        raise ValueError("model name is empty")
    return ResolvedModel(default_provider(env), text)


def resolve_model(
    model: str, models: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None
) -> ResolvedModel:
    """Resolve a hook's ``model`` (tier, alias or model) to a provider and model name.

    Raises ``ValueError`` with a readable message for an empty or malformed name.
    """
    env = os.environ if env is None else env
    tier = canonical_tier(model)
    if tier is None:
        return parse_model(model, env)
    configured = env.get(f"JUDGE_MODEL_{tier.upper()}")
    if not configured:
        for key, value in (models or {}).items():
            if canonical_tier(key) == tier:
                configured = value
                break
    if configured:
        if canonical_tier(configured) is not None:
            raise ValueError(f"tier {tier} maps to another tier ({configured!r}); name a model")
        found = parse_model(configured, env)
    else:
        provider = default_provider(env)
        return ResolvedModel(provider, DEFAULT_MODELS[provider][tier], tier, builtin=True)
    return ResolvedModel(found.provider, found.name, tier)


def model_label(
    model: str, models: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None
) -> str:
    """The ``provider:name`` label a hook's ``model`` resolves to (what decisions, logs,
    prices and the eval cache name it by); ValueError as :func:`resolve_model`."""
    return resolve_model(model, models, env).label


#: How a cascade's stage labels are joined into one label (the eval cache, calibration records).
CASCADE_JOIN = " > "


def hook_model_label(
    model: str | Sequence[str], models: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None
) -> str:
    """The label of a hook's ``model``: :func:`model_label`, or a cascade's stage labels
    joined by :data:`CASCADE_JOIN` (``openai:a > openai:b``); ValueError as :func:`resolve_model`."""
    stages = (model,) if isinstance(model, str) else tuple(model)
    return CASCADE_JOIN.join(model_label(stage, models, env) for stage in stages)
