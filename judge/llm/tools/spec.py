"""Tool definitions for the model, built from typed functions and their docstrings."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

from judge.llm.providers.base import ToolSpec

_JSON_TYPES = {str: "string", int: "integer", bool: "boolean", float: "number"}
_ARG_LINE = re.compile(r"^\s{4,}(\w+):\s*(.+)$")


def tool_spec(function: Callable[..., str]) -> ToolSpec:
    """A :class:`ToolSpec` from a typed function: its docstring is what the model sees."""
    doc = inspect.getdoc(function) or ""
    summary, _, args_part = doc.partition("\nArgs:\n")
    described: dict[str, str] = {}
    for line in ("    " + args_part.replace("\n", "\n    ")).splitlines():
        found = _ARG_LINE.match(line)
        if found:
            described[found.group(1)] = found.group(2).strip()
    properties: dict[str, Any] = {}
    required: list[str] = []
    hints = inspect.get_annotations(function, eval_str=True)
    for name, parameter in inspect.signature(function).parameters.items():
        schema: dict[str, Any] = {"type": _JSON_TYPES.get(hints.get(name, str), "string")}
        if name in described:
            schema["description"] = described[name]
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
        else:
            schema["default"] = parameter.default
        properties[name] = schema
    return ToolSpec(
        name=function.__name__,
        description=" ".join(summary.split()),
        parameters={"type": "object", "properties": properties, "required": required},
    )
