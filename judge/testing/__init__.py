"""Test helpers shipped with the package (for this project's tests and users' CI).

:class:`LLMServer` is a local model server speaking the OpenAI and Anthropic wire
formats, scripted with :func:`say`, :func:`call`, :func:`verdict` and friends. For a
model without any server, hooks can say ``model: fake:allow`` and friends, and a program
can script its own agent with :class:`FakeProvider` (the provider behind ``fake:``) and
the provider-neutral :class:`Message`, :class:`ToolCall` and :class:`ToolSpec`.
"""

from judge.llm.providers.base import Message, ToolCall, ToolSpec
from judge.llm.providers.fake import FakeProvider
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
    "FakeProvider",
    "LLMRequest",
    "LLMServer",
    "Message",
    "Reply",
    "ToolCall",
    "ToolCallSpec",
    "ToolSpec",
    "call",
    "calls",
    "fail",
    "hang",
    "say",
    "verdict",
]
