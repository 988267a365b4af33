"""A fake, scripted provider: deterministic judgements without any API key.

Use it from Python (like pydantic-ai's ``TestModel`` / ``FunctionModel``)::

    FakeProvider(['{"ok": true}'])                          # the same verdict every time
    FakeProvider([{"tool_calls": [{"name": "GrepSearch",
                                   "arguments": {"query": "error", "isRegexp": False}}]},
                  {"ok": False, "reason": "Fix the error first."}])   # one reply per turn
    FakeProvider(function=lambda messages, tools: {"ok": True})

or from a config / the environment as a model string (``model: fake:allow`` or
``JUDGE_MODEL_REASONINGFAST=fake:heuristic``):

``fake:allow``
    always ``{"ok": true}``.
``fake:block`` / ``fake:block:<reason>``
    always ``{"ok": false, "reason": ...}``.
``fake:reasonless``
    always ``{"ok": false}`` (a reasonless rejection, which the Stop gate treats as allow).
``fake:impossible`` / ``fake:impossible:<reason>``
    always ``{"ok": false, "impossible": true, "reason": ...}`` (work that cannot be
    finished without the user: a Stop ends with the outcome ``impossible``).
``fake:error``
    every call fails (a hook error: exercises ``failMode``).
``fake:heuristic``
    a deterministic rule-of-thumb judge for Stop events: blocks an empty final answer,
    an answer missing a marker the hook prompt asks it to end with (``ends with
    "Task complete."``), an answer holding a phrase the prompt says to block (a line
    like ``Block an answer that says "pending".``, as an edit or a few-shot example's
    rationale writes it) and an answer that looks unfinished (TODO, TBD, "I will",
    "let me", "next step", "still need", "not yet", "in progress") unless it holds a
    phrase the prompt says to allow (``Allow an answer that says "..."``); allows the rest.
``fake:optimizer``
    the optimizer of ``judge tune`` offline (:mod:`judge.llm.providers.fake_optimizer`).
``fake:<file.json|yaml>``
    a script: a list of replies (one per turn; the last repeats), or
    ``{"rules": [{"match": "<regex>", "reply": ... | "steps": [...]}], "default": ...}``
    where ``match`` is searched (case-insensitively) in the rendered hook prompt.
    Relative paths are taken from the config file's folder, else the working folder.

A reply is a string (the model's text), a verdict object (``{"ok": ...}``), or
``{"text": "...", "tool_calls": [{"name": ..., "arguments": {...}}]}``.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from judge.decision import Usage
from judge.errors import HookError
from judge.files import read_text
from judge.llm.providers.base import Completion, Message, ToolCall, ToolChoice, ToolSpec

FakeReply = str | dict[str, Any] | Completion
FakeFunction = Callable[[list[Message], list[ToolSpec]], FakeReply | Awaitable[FakeReply]]

DEFAULT_BLOCK_REASON = "Blocked by the fake judge (fake:block)."
DEFAULT_IMPOSSIBLE_REASON = "The fake judge (fake:impossible) says this needs the user."
UNFINISHED = re.compile(
    r"\b(TODO|TBD|FIXME|I will|I'll|let me|next step|still need|not yet|in progress)\b",
    re.IGNORECASE,
)
ENDS_WITH = re.compile(r"ends? with\s+[\"'“‘]([^\"'”’\n]+)[\"'”’]", re.IGNORECASE)
CONTEXT_BLOCK = re.compile(r"<hook_context[^>]*>\s*(\{.*?\})\s*</hook_context>", re.DOTALL)
PHRASE_RULE = re.compile(
    r"\b(block|allow)\b[^\n\"“]{0,80}?\bsays?\s+[\"“]([^\"”\n]{2,80})[\"”]", re.IGNORECASE
)


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def to_completion(reply: FakeReply, prompt_chars: int = 0) -> Completion:
    """A :class:`Completion` from a reply spec (see the module docstring)."""
    if isinstance(reply, Completion):
        return reply
    if isinstance(reply, str):
        return Completion(text=reply, usage=Usage(inputTokens=prompt_chars // 4, outputTokens=_tokens(reply)))
    if not isinstance(reply, dict):
        raise HookError(f"fake reply must be a string or a mapping, got {type(reply).__name__}")
    if "ok" in reply or "decision" in reply:
        text = json.dumps(reply)
        return Completion(text=text, usage=Usage(inputTokens=prompt_chars // 4, outputTokens=_tokens(text)))
    calls: list[ToolCall] = []
    for number, call in enumerate(reply.get("tool_calls") or [], 1):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise HookError("fake tool call must be a mapping with a 'name'")
        arguments = call.get("arguments") or {}
        calls.append(
            ToolCall(
                id=str(call.get("id") or f"fake_call_{number}"),
                name=call["name"],
                arguments=arguments if isinstance(arguments, dict) else None,
                raw_arguments=json.dumps(arguments),
            )
        )
    text = str(reply.get("text") or "")
    return Completion(
        text=text,
        tool_calls=tuple(calls),
        usage=Usage(inputTokens=prompt_chars // 4, outputTokens=_tokens(text or "tool")),
    )


class FakeProvider:
    """A scripted provider: ``replies`` by turn (the last repeats) or a ``function``.

    ``calls`` records every request's messages, so tests can assert what was sent.
    """

    def __init__(
        self,
        replies: Sequence[FakeReply] | None = None,
        *,
        function: FakeFunction | None = None,
        label: str = "fake:scripted",
    ) -> None:
        if not replies and function is None:
            raise ValueError("FakeProvider needs replies or a function")
        self.replies = list(replies or [])
        self.function = function
        self.label = label
        self.calls: list[list[Message]] = []

    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        *,
        tool_choice: ToolChoice = "auto",
        timeout: float | None = None,
    ) -> Completion:
        self.calls.append(list(messages))
        prompt_chars = sum(len(m.content) for m in messages)
        if self.function is not None:
            result = self.function(list(messages), list(tools))
            reply = await result if inspect.isawaitable(result) else result
        else:
            turn = sum(1 for m in messages if m.role == "assistant")
            reply = self.replies[min(turn, len(self.replies) - 1)]
        return to_completion(reply, prompt_chars)


# ---------------------------------------------------------------------------
# The heuristic judge


def _prompt_and_context(messages: list[Message]) -> tuple[str, dict[str, Any]]:
    first = next((m.content for m in messages if m.role == "user"), "")
    found = CONTEXT_BLOCK.search(first)
    context: dict[str, Any] = {}
    if found:
        try:
            value = json.loads(found.group(1))
        except json.JSONDecodeError:
            value = {}
        context = value if isinstance(value, dict) else {}
    instructions = CONTEXT_BLOCK.sub("", first)
    return instructions, context


def heuristic_verdict(messages: list[Message], tools: list[ToolSpec]) -> dict[str, Any]:
    """The ``fake:heuristic`` rules (see the module docstring)."""
    instructions, context = _prompt_and_context(messages)
    if context.get("hook_event_name", "Stop") not in ("Stop", "SubagentStop"):
        return {"ok": True}
    answer = context.get("final_output")
    if not isinstance(answer, str) or not answer.strip():
        return {"ok": False, "reason": "The final answer is empty: answer the user's request."}
    marker = ENDS_WITH.search(instructions)
    if marker and not answer.rstrip().endswith(marker.group(1).strip()):
        return {"ok": False, "reason": f"End your response with '{marker.group(1).strip()}'."}
    rules = [(verb.lower(), phrase.lower()) for verb, phrase in PHRASE_RULE.findall(instructions)]
    said = [(verb, phrase) for verb, phrase in rules if phrase in answer.lower()]
    blocked = next((phrase for verb, phrase in said if verb == "block"), None)
    if blocked is not None:
        return {"ok": False, "reason": f"The answer says {blocked!r}, which the instructions do not accept."}
    if any(verb == "allow" for verb, _ in said):
        return {"ok": True}
    unfinished = UNFINISHED.search(answer)
    if unfinished:
        return {
            "ok": False,
            "reason": f"The answer looks unfinished (it says {unfinished.group(0)!r}): "
            "finish the work and report the result.",
        }
    return {"ok": True}


# ---------------------------------------------------------------------------
# Model strings


def _load_script(path: Path) -> Any:
    try:
        text = read_text(path, "fake responses file")
    except OSError as exc:
        raise HookError(f"fake script {path} cannot be read: {exc.strerror or exc}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise HookError(f"fake script {path} is not valid JSON/YAML: {exc}") from None


def _as_steps(value: Any, where: str) -> list[FakeReply]:
    steps = value if isinstance(value, list) else [value]
    if not steps or not all(isinstance(s, (str, dict)) for s in steps):
        raise HookError(f"{where}: replies must be strings or mappings")
    return list(steps)


def script_provider(path: Path, label: str) -> FakeProvider:
    """A provider from a script file (list of replies, or rules with a default)."""
    data = _load_script(path)
    where = f"fake script {path}"
    if isinstance(data, dict) and "rules" in data:
        rules: list[tuple[re.Pattern[str], list[FakeReply]]] = []
        for number, rule in enumerate(data.get("rules") or []):
            if not isinstance(rule, dict) or not isinstance(rule.get("match"), str):
                raise HookError(f"{where}: rules[{number}] needs a 'match' regex")
            try:
                pattern = re.compile(rule["match"], re.IGNORECASE)
            except re.error as exc:
                raise HookError(f"{where}: rules[{number}].match: {exc}") from None
            rules.append((pattern, _as_steps(rule.get("steps", rule.get("reply")), where)))
        default = _as_steps(data.get("default", {"ok": True}), where)

        def by_rule(messages: list[Message], tools: list[ToolSpec]) -> FakeReply:
            instructions = next((m.content for m in messages if m.role == "user"), "")
            steps = next((s for p, s in rules if p.search(instructions)), default)
            turn = sum(1 for m in messages if m.role == "assistant")
            return steps[min(turn, len(steps) - 1)]

        return FakeProvider(function=by_rule, label=label)
    if isinstance(data, dict) and "steps" in data:
        data = data["steps"]
    return FakeProvider(_as_steps(data, where), label=label)


def _always_fail(messages: list[Message], tools: list[ToolSpec]) -> FakeReply:
    raise HookError("fake:error: simulated provider failure")


def fake_provider(spec: str, base_dir: Path | None = None) -> FakeProvider:
    """The provider for a ``fake:<spec>`` model string."""
    label = f"fake:{spec}"
    mode, _, rest = spec.partition(":")
    if mode == "allow":
        return FakeProvider([{"ok": True}], label=label)
    if mode == "block":
        return FakeProvider([{"ok": False, "reason": rest.strip() or DEFAULT_BLOCK_REASON}], label=label)
    if mode == "reasonless":
        return FakeProvider([{"ok": False}], label=label)
    if mode == "impossible":
        reason = rest.strip() or DEFAULT_IMPOSSIBLE_REASON
        return FakeProvider([{"ok": False, "impossible": True, "reason": reason}], label=label)
    if mode == "error":
        return FakeProvider(function=_always_fail, label=label)
    if mode == "heuristic":
        return FakeProvider(function=heuristic_verdict, label=label)
    if mode == "optimizer":
        from judge.llm.providers.fake_optimizer import optimizer_reply

        return FakeProvider(function=optimizer_reply, label=label)
    path = Path(spec).expanduser()
    if not path.is_absolute() and base_dir is not None and (base_dir / path).exists():
        path = base_dir / path
    if not path.exists():
        raise HookError(
            f"unknown fake model {label!r}: use fake:allow, fake:block[:reason], fake:reasonless, "
            "fake:impossible[:reason], fake:error, fake:heuristic, fake:optimizer or fake:<script.json|yaml>"
        )
    return script_provider(path, label)
