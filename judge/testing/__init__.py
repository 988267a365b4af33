"""Test helpers shipped with the package (for this project's tests and users' CI).

:mod:`judge.testing.llm_server` is a local model server speaking the OpenAI and
Anthropic wire formats. For a model without any server, use the fake provider
(``model: fake:allow`` and friends, see :mod:`judge.llm.providers.fake`).
"""

from judge.testing.llm_server import (
    LLMRequest,
    LLMServer,
    Reply,
    ToolCallSpec,
    call,
    calls,
    fail,
    hang,
    say,
    verdict,
)

__all__ = [
    "LLMRequest",
    "LLMServer",
    "Reply",
    "ToolCallSpec",
    "call",
    "calls",
    "fail",
    "hang",
    "say",
    "verdict",
]
