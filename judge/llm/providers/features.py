"""Request features a server may not support, and how a rejected one is dropped.

The judge asks for three optional things: the verdict schema as structured output, a
``tool_choice``, and ``tools`` themselves (and a ``temperature`` when
``JUDGE_TEMPERATURE`` sets one). Hosted APIs accept them all; local and
compatible servers often do not, and say so in an error answer:

- llama.cpp without ``--jinja``: HTTP 500 ``tools param requires --jinja flag`` (older
  builds: ``Unsupported param: tools``); a schema it cannot turn into a grammar: HTTP 400
  (or 500) mentioning the grammar / JSON schema.
- vLLM without ``--enable-auto-tool-choice --tool-call-parser``: HTTP 400 ``"auto" tool
  choice requires --enable-auto-tool-choice and --tool-call-parser to be set``.
- Reasoning models (OpenAI's o-series and gpt-5 family) accept only their default
  temperature: HTTP 400 ``Unsupported value: 'temperature' ...``.
- Ollama with a model whose template has no tools: HTTP 400 ``<model> does not support
  tools``; older OpenAI-compatible layers reject unknown fields such as
  ``response_format``/``tool_choice`` with a 400/422.

:func:`rejected_feature` reads such an answer and names the ONE feature to drop (the
provider then repeats the request without it and never sends it again; providers on one
shared SDK client share what was learned, see :func:`shared_features`, and ``judge
claude-code`` keeps it across its processes, see
:mod:`judge.llm.providers.features_memo`); a tool the model can no longer call
structurally is still reachable as a text tool call (:mod:`judge.llm.written_calls`). A
server that ignores ``tool_choice: "required"`` is asked for the call as structured
output instead (:func:`judge.llm.providers.schemas.call_schema`). The bounded form of the
verdict schema (``schema_limits``), where a server rejects it, is dropped before the
schema itself (:mod:`judge.llm.providers.schemas`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from judge.errors import HookError

Feature = Literal[
    "structured_output",
    "schema_limits",
    "tool_choice",
    "tools",
    "temperature",
    "required_tool_choice",
    "stop",
]

#: Where a local server's answer ends early: three blank lines. Small models at temperature
#: 0 often follow a short answer (a fenced verdict) with newlines up to the token limit —
#: half a minute of a 1.5B model on 2 cores for nothing; no verdict or tool call has them.
STOP_SEQUENCES = ("\n\n\n\n",)

#: Statuses a server answers an unsupported feature with (llama.cpp uses 500/501).
FEATURE_STATUSES = (400, 422, 500, 501)

_TOOL_CHOICE_HINTS = ("tool_choice", "tool choice", "enable-auto-tool-choice", "tool-call-parser")
_TOOLS_HINTS = (
    "--jinja",
    "param: tools",
    "support tools",
    "supports tools",
    "tools param",
    "'tools'",
    '"tools"',
)
_STOP_HINTS = ("stop_sequence", "'stop'", '"stop"', "param: stop", "parameter: stop", "stop sequence")
_SCHEMA_HINTS = ("response_format", "json_schema", "grammar", "schema", "output_config", "structured")


@dataclass
class Features:
    """What this provider still sends (each is switched off for good once rejected)."""

    structured_output: bool = True
    #: whether the verdict schema is still sent in its bounded form (an allow alone, a
    #: block with a ``maxLength`` reason; :func:`judge.llm.providers.schemas.limited`)
    schema_limits: bool = True
    tool_choice: bool = True
    tools: bool = True
    temperature: bool = True
    #: whether the server enforces ``tool_choice: "required"``; switched off (for good)
    #: when it answered such a request without a tool call
    required_tool_choice: bool = True
    #: whether :data:`STOP_SEQUENCES` are sent (to local servers only)
    stop: bool = True
    #: called after a feature was switched off (:mod:`judge.llm.providers.features_memo`)
    on_drop: Callable[[Features], None] | None = field(default=None, repr=False, compare=False)

    def drop(self, feature: Feature) -> None:
        if getattr(self, feature):
            setattr(self, feature, False)
            if self.on_drop is not None:
                self.on_drop(self)

    def off(self) -> list[str]:
        """The features switched off."""
        return [f.name for f in fields(self) if f.name != "on_drop" and getattr(self, f.name) is False]


_LEARNED: weakref.WeakKeyDictionary[Any, dict[tuple[str, bool], Features]] = weakref.WeakKeyDictionary()
_LEARNED_LOCK = threading.Lock()


def shared_features(client: Any, model: str, structured_output: bool) -> Features:
    """The :class:`Features` of ``model`` behind a shared SDK client: what the server has
    shown it does not support is learned once, not again in every judgement (a server
    without ``--jinja`` would otherwise fail the first request of each). Kept as long as
    the client (:mod:`judge.llm.providers.pool`: one event loop's clients)."""
    with _LEARNED_LOCK:
        models = _LEARNED.setdefault(client, {})
        return models.setdefault((model, structured_output), Features(structured_output=structured_output))


def rejected_feature(
    status: int, message: str, body: dict[str, Any], fields: dict[Feature, str]
) -> Feature | None:
    """The feature a server rejected, judged from its error answer; ``None`` otherwise.

    ``fields`` maps each feature to the request field carrying it (only features present
    in ``body`` can be blamed). A plain 400 while structured output was asked for blames
    structured output (older models and gateways reject it without a precise message).
    """
    if status not in FEATURE_STATUSES:
        return None
    text = message.lower()
    present = {feature for feature, key in fields.items() if key in body}
    if any(hint in text for hint in _TOOL_CHOICE_HINTS):
        # Without tool_choice vLLM still applies "auto" to tools: then drop the tools too.
        if "tool_choice" in present:
            return "tool_choice"
        if "tools" in present:
            return "tools"
    if "temperature" in present and "temperature" in text:
        return "temperature"
    if "stop" in present and any(hint in text for hint in _STOP_HINTS):
        return "stop"
    if "tools" in present and any(hint in text for hint in _TOOLS_HINTS):
        return "tools"
    if "structured_output" in present and (status == 400 or any(hint in text for hint in _SCHEMA_HINTS)):
        return "structured_output"
    return None


def blames_limits(message: str) -> bool:
    """Whether a rejection of a request with structured output may be about the reason's
    length limit rather than the schema as such: it names ``maxLength``, or nothing precise
    (a plain 400). The limit is then dropped first, the schema only if rejected again."""
    text = message.lower()
    return "maxlength" in text or not any(hint in text for hint in _SCHEMA_HINTS)


#: Most tokens one answer may take (``JUDGE_MAX_OUTPUT_TOKENS``). A verdict or a tool call
#: needs a few hundred; a small model that rambles on a slow CPU spends minutes on more.
DEFAULT_MAX_OUTPUT_TOKENS = 4096
MAX_OUTPUT_TOKENS_VAR = "JUDGE_MAX_OUTPUT_TOKENS"


def max_output_tokens(env: Mapping[str, str]) -> int:
    """The answer-length cap from the environment (HookError for a bad value)."""
    raw = env.get(MAX_OUTPUT_TOKENS_VAR, "").strip()
    if not raw:
        return DEFAULT_MAX_OUTPUT_TOKENS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 16 <= value <= 1_000_000:
        raise HookError(f"{MAX_OUTPUT_TOKENS_VAR} must be a whole number of tokens from 16 up, got {raw!r}")
    return value


#: Sampling temperature sent with every request (``JUDGE_TEMPERATURE``); unset: the
#: server's default. Local servers sample at their own default (llama.cpp: 0.8), so two
#: runs of the same judgement can differ; 0 makes a judge repeatable where the model
#: allows it. A model that rejects the field gets its default (see :func:`rejected_feature`).
TEMPERATURE_VAR = "JUDGE_TEMPERATURE"


def temperature(env: Mapping[str, str]) -> float | None:
    """The sampling temperature from the environment, or ``None`` (HookError for a bad value)."""
    raw = env.get(TEMPERATURE_VAR, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 2.0:
        raise HookError(f"{TEMPERATURE_VAR} must be a number from 0 to 2, got {raw!r}")
    return value
