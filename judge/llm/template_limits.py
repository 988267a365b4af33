"""Resource limits for hook templates, on top of Jinja's sandbox.

Jinja's sandbox keeps a template away from Python's internals; it does not bound what a
template costs. A prompt such as ``{{ 'x' * 3000000000 }}`` took 8 GB, and two nested
``range(99999)`` loops hung ``judge validate``, ``judge run`` and a whole ``judge serve``
(rendering happens on the event loop). :class:`BoundedEnvironment` refuses, with a
template error (the hook's failMode then decides):

* a repeated or joined string or list (``*``, ``+``, ``~``) longer than :data:`MAX_LENGTH`, and
  the same from the filters that grow text (``center``, ``indent``, ``replace``) or a
  format width (``format``, ``%``);
* a power (``**``) with an exponent above :data:`MAX_EXPONENT`, or a result over
  :data:`MAX_POWER_BITS` bits;
* more than :data:`MAX_RANGE_ITEMS` items from ``range`` in one render, counted over
  every call (nested loops multiply, so each inner ``range`` counts again).

Not bounded: loops (``for``) over any value other than ``range`` - nested loops over a
long string still take their time. This is not
a resource sandbox for hostile templates: a template is the configuration author's code
(or an authenticated API client's, for custom agents), and these limits catch the
mistakes and the bombs that cost nothing to write.
"""

from __future__ import annotations

import contextvars
import re
from typing import Any

from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.nodes import Concat
from jinja2.runtime import markup_join, str_join
from jinja2.sandbox import SandboxedEnvironment

#: Longest string or list a template may build with ``*`` or ``+``.
MAX_LENGTH = 1_000_000
#: Largest exponent of ``**``.
MAX_EXPONENT = 1000
#: Items ``range`` may produce in one render, all calls together.
MAX_RANGE_ITEMS = 100_000
#: Largest integer ``**`` may build, in bits (so chained powers stay cheap too).
MAX_POWER_BITS = 100_000

_range_left: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "judge_range_left", default=None
)


def _bounded_range(*args: int) -> range:
    items = range(*args)
    left = _range_left.get()
    if left is None:  # outside a RangeBudget: this call alone is bounded
        left = [MAX_RANGE_ITEMS]
    left[0] -= len(items)
    if left[0] < 0:
        raise SecurityError(f"range: the template asked for more than {MAX_RANGE_ITEMS} items in all")
    return items


def _length(value: Any) -> int | None:
    return len(value) if isinstance(value, str | bytes | list | tuple) else None


def _refuse_over(size: int, what: str) -> None:
    if size > MAX_LENGTH:
        raise SecurityError(f"{what}: the result would be longer than {MAX_LENGTH}")


_WIDTH = re.compile(r"%[-+ #0]*(\d+)|\{[^{}]*?:[^{}]*?(\d+)[^{}]*\}")


def _check_widths(spec: Any, what: str) -> None:
    """Refuse a format string asking for a field wider than :data:`MAX_LENGTH`."""
    if isinstance(spec, str):
        for found in _WIDTH.finditer(spec):
            _refuse_over(int(found.group(1) or found.group(2) or 0), what)


def _bounded_filters(filters: dict[str, Any]) -> None:
    """Wrap the filters whose output can be far larger than their input."""
    center, indent, replace, fmt = filters["center"], filters["indent"], filters["replace"], filters["format"]

    def bounded_center(value: Any, width: int = 80) -> Any:
        _refuse_over(int(width), "center")
        return center(value, width)

    def bounded_indent(value: Any, width: Any = 4, *args: Any, **kwargs: Any) -> Any:
        text = str(value)
        pad = width if isinstance(width, str) else " " * min(int(width), MAX_LENGTH + 1)
        _refuse_over(len(text) + len(pad) * (text.count("\n") + 1), "indent")
        return indent(value, width, *args, **kwargs)

    def bounded_replace(context: Any, value: Any, old: Any, new: Any, count: Any = None) -> Any:
        text, old_text, new_text = str(value), str(old), str(new)
        hits = text.count(old_text) if old_text else len(text) + 1
        if isinstance(count, int):
            hits = min(hits, max(count, 0))
        _refuse_over(len(text) + hits * len(new_text), "replace")
        return replace(context, value, old, new, count)

    def bounded_format(value: Any, *args: Any, **kwargs: Any) -> Any:
        _check_widths(value, "format")
        return fmt(value, *args, **kwargs)

    bounded_replace.jinja_pass_arg = replace.jinja_pass_arg  # type: ignore[attr-defined]
    filters.update(
        center=bounded_center, indent=bounded_indent, replace=bounded_replace, format=bounded_format
    )


class _BoundedCodeGenerator(CodeGenerator):
    """Compiles ``~`` to :meth:`BoundedEnvironment.bounded_concat` (Jinja joins in place)."""

    def visit_Concat(self, node: Concat, frame: Frame) -> None:
        self.write("environment.bounded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("), context.eval_ctx)")


class BoundedEnvironment(SandboxedEnvironment):
    """A sandboxed environment whose templates cannot ask for unbounded memory or time
    through ``*``, ``+``, ``~``, ``**``, ``%``, ``range`` or the filters that grow text
    (``center``, ``indent``, ``replace``, ``format``); see the module doc."""

    intercepted_binops = frozenset({"*", "+", "**", "%"})
    code_generator_class = _BoundedCodeGenerator

    def bounded_concat(self, parts: tuple[Any, ...], eval_ctx: Any) -> Any:
        """``a ~ b ~ ...``, refused when longer than :data:`MAX_LENGTH` (each part is
        bounded already, so a loop doubling a string stops at the limit)."""
        joined = markup_join(parts) if eval_ctx.volatile or eval_ctx.autoescape else str_join(parts)
        if len(joined) > MAX_LENGTH:
            raise SecurityError(f"'~': the result would be longer than {MAX_LENGTH}")
        return joined

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.globals["range"] = _bounded_range
        _bounded_filters(self.filters)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "%":
            _check_widths(left, "'%'")
        elif operator == "*":
            for sequence, times in ((left, right), (right, left)):
                size = _length(sequence)
                if size is not None and isinstance(times, int) and size * times > MAX_LENGTH:
                    raise SecurityError(f"'*': the result would be longer than {MAX_LENGTH}")
        elif operator == "+":
            sizes = (_length(left), _length(right))
            if sizes[0] is not None and sizes[1] is not None and sizes[0] + sizes[1] > MAX_LENGTH:
                raise SecurityError(f"'+': the result would be longer than {MAX_LENGTH}")
        elif operator == "**" and isinstance(right, int | float):
            if abs(right) > MAX_EXPONENT:
                raise SecurityError(f"'**': exponents above {MAX_EXPONENT} are not allowed")
            if isinstance(left, int) and left.bit_length() * abs(right) > MAX_POWER_BITS:
                raise SecurityError(f"'**': the result would have more than {MAX_POWER_BITS} bits")
        return super().call_binop(context, operator, left, right)


class RangeBudget:
    """``with RangeBudget():`` around one render: a fresh ``range`` allowance for it."""

    def __enter__(self) -> None:
        self._token = _range_left.set([MAX_RANGE_ITEMS])

    def __exit__(self, *exc: object) -> None:
        _range_left.reset(self._token)
