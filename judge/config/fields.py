"""Field-level checks of a hook shared by the config models and the located validation of
whole documents: which of prompt/command/script a hook type takes, what names a model, a
script's ``#!`` line, the Stop-rule options' ranges; and where a hook is written
(:func:`hook_place`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from judge.config.hook import Hook

MAX_SCRIPT_BYTES = 64 * 1024
SUPPORTED_SHEBANGS: tuple[str, ...] = ("#!/bin/bash", "#!/usr/bin/env python3")

_PYTHON_LINE = re.compile(r"^\s*(import \w|from [\w.]+ import |def \w+\(|print\()", re.MULTILINE)


def missing_shebang(script: str) -> str:
    """The problem of a ``script`` without a ``#!`` line, with the line to add (a body that
    looks like Python gets the Python one: run as bash, it would fail with exit 2, which
    judge reads as a deliberate block with a bash error as its reason)."""
    python = _PYTHON_LINE.search(script) is not None
    line = SUPPORTED_SHEBANGS[1] if python else SUPPORTED_SHEBANGS[0]
    looks = " (the script looks like Python)" if python else ""
    return f"script has no #! line; start it with {line}{looks}, or use command: for a one-line shell command"


#: Stop prompt hooks while background tasks run: ``defer`` (not run) or ``judge`` (run).
BackgroundTasks = Literal["judge", "defer"]
#: Most identical repeats of a rejected Stop a prompt hook may tolerate (``repeats``).
MAX_REPEATS = 25


def repeats_in_range(value: Any) -> Any:
    """``repeats`` when it is an integer from 0 to :data:`MAX_REPEATS`; ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be an integer, got {value!r}")
    if not 0 <= value <= MAX_REPEATS:
        raise ValueError(f"must be between 0 and {MAX_REPEATS}, got {value}")
    return value


def type_field_problems(type_: Any, prompt: Any, command: Any, script: Any) -> list[str]:
    """Which of prompt/command/script a hook of ``type_`` is missing or must not have.

    Messages start with the field they are about when there is one (``prompt: ...``).
    """
    if type_ == "prompt":
        problems = []
        if prompt is None or (isinstance(prompt, str) and not prompt.strip()):
            problems.append("prompt: required for prompt hooks")
        for name, value in (("command", command), ("script", script)):
            if value is not None:
                problems.append(f"{name}: not allowed on prompt hooks (set type: command)")
        return problems
    if type_ == "command":
        problems = []
        if command is not None and script is not None:
            problems.append("command hooks take exactly one of `command` or `script`, not both")
        elif command is None and script is None:
            problems.append("command hooks need `command` or `script`")
        if prompt is not None:
            problems.append("prompt: not allowed on command hooks (set type: prompt)")
        return problems
    return []


def model_name(value: Any, where: str = "") -> str:
    """``value`` when it names a tier or a model; ValueError otherwise."""
    if not isinstance(value, str):
        raise ValueError(
            f"{where}must be a tier or model name (a string), or a list of them (a cascade), "
            f"got {type(value).__name__} {value!r}"
        )
    prefix, sep, rest = value.strip().partition(":")
    if not value.strip() or (sep and prefix.lower() in ("openai", "anthropic", "fake") and not rest.strip()):
        raise ValueError(
            f"{where}must name a tier (e.g. ReasoningFast) or a model (e.g. openai:<name>), got {value!r}"
        )
    return value


def cascade_stages(value: list[Any] | tuple[Any, ...]) -> tuple[str, ...]:
    """A cascade's models, first (cheapest) first; ValueError for fewer than 2 or a non-name."""
    if len(value) < 2:
        raise ValueError(
            "a cascade lists 2 or more models, first the cheap one (e.g. [Fast, Reasoning]), "
            f"got {list(value)!r}; for one model write it as a string"
        )
    return tuple(model_name(v, f"stage {i + 1}: ") for i, v in enumerate(value))


def hook_place(event: str, index: int, agent: str | None = None) -> str:
    """Where a hook is written, as messages name it: ``hooks.Stop[0]``, or
    ``customAgents.NAME.hooks.Stop[0]`` for a custom agent's."""
    where = f"hooks.{event}[{index}]"
    return f"customAgents.{agent}.{where}" if agent is not None else where


def shadow_copy(hook: Hook) -> Hook:
    """``hook`` in shadow mode (itself when it already is)."""
    return hook if hook.mode == "shadow" else hook.model_copy(update={"mode": "shadow"})
