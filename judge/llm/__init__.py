"""The prompt judge: a model asked whether a hook passes, reading the transcript through tools.

* :mod:`~judge.llm.judge` — :class:`~judge.llm.judge.LLMJudge`, the judge the engine calls;
* :mod:`~judge.llm.loop` — one judgement's conversation: tool rounds, the verdict turn,
  repairs, retries (:mod:`~judge.llm.retry`);
* :mod:`~judge.llm.prompts`, :mod:`~judge.llm.template_limits` — the hook's prompt
  rendered, with bounds;
* :mod:`~judge.llm.verdicts`, :mod:`~judge.llm.evidence`, :mod:`~judge.llm.written_calls` —
  what the model answered: its verdict, its citations, tool calls it wrote as text;
* :mod:`~judge.llm.tiers` — which provider and model a hook's ``model`` names;
* :mod:`~judge.llm.providers` — one small provider protocol, the SDK adapters, the fakes;
* :mod:`~judge.llm.tools` — ReadFile and GrepSearch over one transcript.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge.llm.judge import LLMJudge, ProviderFactory, TraceObserver
    from judge.llm.loop import JudgementTrace
    from judge.llm.tiers import ResolvedModel, resolve_model

__all__ = ["JudgementTrace", "LLMJudge", "ProviderFactory", "ResolvedModel", "TraceObserver", "resolve_model"]

# Imported on first use: ``judge.llm.tiers`` (model names, for validation) must not pull in
# the judge, its templates and its retries.
_LAZY = {
    "LLMJudge": "judge.llm.judge",
    "ProviderFactory": "judge.llm.judge",
    "TraceObserver": "judge.llm.judge",
    "JudgementTrace": "judge.llm.loop",
    "ResolvedModel": "judge.llm.tiers",
    "resolve_model": "judge.llm.tiers",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
