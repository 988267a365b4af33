"""A missing API key is reported at once, before the provider's SDK is imported (that
import takes seconds, paid by every `judge claude-code` process of a session without a
key), and a tier's built-in model names the other provider's key as a way out too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from judge.errors import HookError
from judge.llm.providers.clients import require_key
from judge.llm.tiers import resolve_model

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import asyncio, json, sys
from judge.config import config_from_data
from judge.hooks.engine import Engine
config = config_from_data({"hooks": {"Stop": [{"prompt": "Check the final answer. $ARGUMENTS"}]}})
decision = asyncio.run(Engine(config).evaluate("Stop", {"final_output": "done"}))
sdks = [m for m in ("anthropic", "openai") if m in sys.modules]
print(json.dumps({"error": decision.hooks[0].error, "sdks": sdks}))
"""


def test_a_missing_key_is_said_without_importing_the_sdk() -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["sdks"] == []
    assert found["error"] == (
        "ANTHROPIC_API_KEY is not set (needed for anthropic:claude-sonnet-4-5, the built-in model of the "
        "tier ReasoningFast; JUDGE_ANTHROPIC_API_KEY is read first); set it, or set OPENAI_API_KEY to have "
        "the tier served by openai:gpt-5.4-mini"
    )


def test_a_model_the_user_named_asks_for_its_own_key_only() -> None:
    for model, env in (
        ("openai:gpt-x", {}),
        ("ReasoningFast", {"JUDGE_MODEL_REASONINGFAST": "anthropic:claude-x"}),
    ):
        resolved = resolve_model(model, {}, env)
        with pytest.raises(HookError) as caught:
            require_key(resolved, env)
        variable = f"{resolved.label.split(':')[0].upper()}_API_KEY"
        assert str(caught.value) == (
            f"{variable} is not set (needed for {resolved.label}; JUDGE_{variable} is read first)"
        )
        require_key(resolved, {**env, f"JUDGE_{variable}": "key"})  # the prefixed variable serves too
