from __future__ import annotations

import pytest

from judge.llm.tiers import DEFAULT_MODELS, ResolvedModel, resolve_model

ANTHROPIC = {"ANTHROPIC_API_KEY": "a"}
OPENAI = {"OPENAI_API_KEY": "o"}


@pytest.mark.parametrize(
    ("name", "tier"),
    [
        ("ReasoningFast", "ReasoningFast"),
        ("reasoningfast", "ReasoningFast"),
        ("REASONING", "Reasoning"),
        ("ReasoningHeavy", "Reasoning"),
        ("Eval", "Reasoning"),
        ("GeneralPurpose", "General"),
        ("SmallFast", "Fast"),
        ("longcontext", "LongContext"),
    ],
)
def test_tiers_and_aliases(name, tier):
    resolved = resolve_model(name, {}, ANTHROPIC)
    assert resolved == ResolvedModel("anthropic", DEFAULT_MODELS["anthropic"][tier], tier)


def test_defaults_follow_available_key():
    assert resolve_model("Fast", {}, OPENAI).label == f"openai:{DEFAULT_MODELS['openai']['Fast']}"
    both = {**ANTHROPIC, **OPENAI}
    assert resolve_model("Fast", {}, both).provider == "anthropic"
    assert resolve_model("Fast", {}, {}).provider == "anthropic"  # its missing key is reported


def test_env_beats_config_beats_default():
    models = {"reasoningfast": "anthropic:claude-x", "Eval": "openai:o-eval"}
    assert resolve_model("ReasoningFast", models, OPENAI).label == "anthropic:claude-x"
    env = {**OPENAI, "JUDGE_MODEL_REASONINGFAST": "openai:gpt-5.4-mini"}
    assert resolve_model("ReasoningFast", models, env).label == "openai:gpt-5.4-mini"
    # an alias key in the config serves its tier
    assert resolve_model("Reasoning", models, OPENAI).label == "openai:o-eval"


def test_explicit_and_bare_models():
    assert resolve_model("openai:gpt-4o", {}, ANTHROPIC).label == "openai:gpt-4o"
    assert resolve_model("anthropic:claude-haiku-4-5", {}, OPENAI).label == "anthropic:claude-haiku-4-5"
    assert resolve_model("my-deployment", {}, OPENAI).label == "openai:my-deployment"
    # colons inside bare names (Ollama tags) do not select a provider
    assert resolve_model("llama3.1:8b", {}, OPENAI).label == "openai:llama3.1:8b"
    assert resolve_model("fake:block:Add tests", {}, {}).label == "fake:block:Add tests"
    env = {"JUDGE_MODEL_FAST": "served-model"}
    assert resolve_model("Fast", {}, {**env, **OPENAI}) == ResolvedModel("openai", "served-model", "Fast")


@pytest.mark.parametrize("bad", ["", "openai:", "  "])
def test_bad_names(bad):
    with pytest.raises(ValueError):
        resolve_model(bad, {}, OPENAI)


def test_a_judge_prefixed_key_serves_where_a_host_removes_the_providers_variables():
    """Copilot CLI removes OPENAI_API_KEY and ANTHROPIC_API_KEY from its hooks'
    environment: JUDGE_OPENAI_API_KEY (read first) chooses and reaches the provider."""
    assert resolve_model("Fast", {}, {"JUDGE_OPENAI_API_KEY": "k"}).provider == "openai"
