"""judge: an LLM-as-judge quality gate for AI agents.

The public Python API. Everything a program needs is importable from here::

    from judge import Engine, Gate, AuditLog, load_config, StopGate, SessionFacts

``__all__`` is the promise: these names keep working across releases, whatever moves
inside the package (a test pins the list). The names are imported on first use, so
``import judge`` stays cheap (``judge claude-code`` runs once per tool call). The modules
behind them are internals; so are names not listed here, except the public ``__all__`` of
:mod:`judge.config`, :mod:`judge.evaluation`, :mod:`judge.integrations` and
:mod:`judge.testing`.
"""

from __future__ import annotations

__version__ = "0.1.0"

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing costs milliseconds, and `judge claude-code` runs per hook event)
    from typing import Any

    from judge.config import Config, Hook, config_from_data, load_config
    from judge.context import parse_context
    from judge.decision import Decision, HookOutcome, Usage
    from judge.errors import (
        ApiError,
        CascadeError,
        ConfigError,
        ContextError,
        HookError,
        JudgeError,
        StateUnavailable,
        SuiteError,
        UsageError,
    )
    from judge.hooks.engine import Engine
    from judge.hooks.gate import Gate
    from judge.hooks.judging import PromptJudge, PromptRequest, PromptVerdict
    from judge.integrations.dispatcher import SessionFacts, wrap_dispatcher
    from judge.integrations.stop_gate import StopGate, StopVerdict
    from judge.llm.judge import LLMJudge
    from judge.llm.loop import JudgementTrace
    from judge.logs.audit import AuditLog
    from judge.state import Store, open_store
    from judge.validation import check_config

#: Public name -> the module that defines it (imported on first use).
_LAZY = {
    # the hook engine and the gate around it
    "Engine": "judge.hooks.engine",
    "Gate": "judge.hooks.gate",
    # what the gate answers, and the seam to a prompt judge
    "Decision": "judge.decision",
    "HookOutcome": "judge.decision",
    "Usage": "judge.decision",
    "PromptJudge": "judge.hooks.judging",
    "PromptRequest": "judge.hooks.judging",
    "PromptVerdict": "judge.hooks.judging",
    "parse_context": "judge.context",
    # the LLM judge
    "LLMJudge": "judge.llm.judge",
    "JudgementTrace": "judge.llm.loop",
    # configuration
    "Config": "judge.config",
    "Hook": "judge.config",
    "load_config": "judge.config",
    "config_from_data": "judge.config",
    "check_config": "judge.validation",
    # hand-written agent loops
    "StopGate": "judge.integrations.stop_gate",
    "StopVerdict": "judge.integrations.stop_gate",
    "wrap_dispatcher": "judge.integrations.dispatcher",
    "SessionFacts": "judge.integrations.dispatcher",
    # state and logs
    "AuditLog": "judge.logs.audit",
    "Store": "judge.state",
    "open_store": "judge.state",
    # the exception tree (judge.errors draws it)
    "JudgeError": "judge.errors",
    "ConfigError": "judge.errors",
    "ContextError": "judge.errors",
    "HookError": "judge.errors",
    "StateUnavailable": "judge.errors",
    "CascadeError": "judge.errors",
    "SuiteError": "judge.errors",
    "UsageError": "judge.errors",
    "ApiError": "judge.errors",
}

__all__ = [
    "ApiError",
    "AuditLog",
    "CascadeError",
    "Config",
    "ConfigError",
    "ContextError",
    "Decision",
    "Engine",
    "Gate",
    "Hook",
    "HookError",
    "HookOutcome",
    "JudgeError",
    "JudgementTrace",
    "LLMJudge",
    "PromptJudge",
    "PromptRequest",
    "PromptVerdict",
    "SessionFacts",
    "StateUnavailable",
    "StopGate",
    "StopVerdict",
    "Store",
    "SuiteError",
    "Usage",
    "UsageError",
    "__version__",
    "check_config",
    "config_from_data",
    "load_config",
    "open_store",
    "parse_context",
    "wrap_dispatcher",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
