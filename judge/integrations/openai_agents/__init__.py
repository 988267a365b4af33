"""judge in the OpenAI Agents SDK (``pip install 'judge-hooks[openai-agents]'``): the Stop gate as an
output guardrail with the retry loop it needs, and the tool hooks as tool guardrails.

::

    from agents import Agent
    from judge import Engine, Gate, StopGate, SessionFacts, load_config
    from judge.integrations.openai_agents import judged_tools, run_until_judged

    gate = Gate(Engine(load_config("judge.yaml")))
    facts = SessionFacts(user_id="u-17", tier="free", session_id="conv-42")
    agent = Agent(name="support", instructions="...", tools=judged_tools([search_faq], gate, facts))
    result = await run_until_judged(agent, "How long do refunds take?", StopGate(gate, facts))

* :mod:`~judge.integrations.openai_agents.stop` - :func:`stop_guardrail`,
  :func:`run_until_judged` (and ``_sync``), :class:`TranscriptHooks`;
* :mod:`~judge.integrations.openai_agents.tools` - :func:`tool_guardrails`, :func:`judged_tools`;
* :mod:`~judge.integrations.openai_agents.messages` - the SDK's items as the chat messages
  judge's transcript reader understands (:func:`chat_messages`).

Importing this package imports the SDK (the ``agents`` package); nothing else in judge does.
"""

from __future__ import annotations

try:
    import agents as _agents  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError(
        "judge.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'judge-hooks[openai-agents]'"
    ) from exc

from judge.integrations.openai_agents.messages import chat_messages
from judge.integrations.openai_agents.stop import (
    TranscriptHooks,
    run_until_judged,
    run_until_judged_sync,
    stop_guardrail,
)
from judge.integrations.openai_agents.tools import judged_tools, tool_guardrails

__all__ = [
    "TranscriptHooks",
    "chat_messages",
    "judged_tools",
    "run_until_judged",
    "run_until_judged_sync",
    "stop_guardrail",
    "tool_guardrails",
]
