"""Resource limits for hook templates, on top of Jinja's sandbox.

Jinja's sandbox keeps a template away from Python's internals; it does not bound what a
template costs. A prompt such as ``{{ 'x' * 3000000000 }}`` took 8 GB, and two nested
``range(99999)`` loops hung ``judge validate``, ``judge run`` and a whole ``judge serve``
(rendering happens on the event loop). :class:`BoundedEnvironment` refuses, with a
template error (the hook's failMode then decides):

* a repeated or joined string or list (``*``, ``+``) longer than :data:`MAX_LENGTH`;
* a power (``**``) with an exponent above :data:`MAX_EXPONENT`;
* more than :data:`MAX_RANGE_ITEMS` items from ``range`` in one render, counted over
  every call (nested loops multiply, so each inner ``range`` counts again).

Not bounded: loops over the context's own values, and strings grown with ``~`` in a
loop. A template is the configuration author's code; these limits catch the mistakes
and bombs that cost nothing to write.
"""

from __future__ import annotations

import contextvars
from typing import Any

from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

#: Longest string or list a template may build with ``*`` or ``+``.
MAX_LENGTH = 1_000_000
#: Largest exponent of ``**``.
MAX_EXPONENT = 1000
#: Items ``range`` may produce in one render, all calls together.
MAX_RANGE_ITEMS = 100_000

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


class BoundedEnvironment(SandboxedEnvironment):
    """A sandboxed environment whose templates cannot ask for unbounded memory or time
    through ``*``, ``+``, ``**`` or ``range`` (see the module doc)."""

    intercepted_binops = frozenset({"*", "+", "**"})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.globals["range"] = _bounded_range

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for sequence, times in ((left, right), (right, left)):
                size = _length(sequence)
                if size is not None and isinstance(times, int) and size * times > MAX_LENGTH:
                    raise SecurityError(f"'*': the result would be longer than {MAX_LENGTH}")
        elif operator == "+":
            sizes = (_length(left), _length(right))
            if sizes[0] is not None and sizes[1] is not None and sizes[0] + sizes[1] > MAX_LENGTH:
                raise SecurityError(f"'+': the result would be longer than {MAX_LENGTH}")
        elif operator == "**" and isinstance(right, int | float) and abs(right) > MAX_EXPONENT:
            raise SecurityError(f"'**': exponents above {MAX_EXPONENT} are not allowed")
        return super().call_binop(context, operator, left, right)


class RangeBudget:
    """``with RangeBudget():`` around one render: a fresh ``range`` allowance for it."""

    def __enter__(self) -> None:
        self._token = _range_left.set([MAX_RANGE_ITEMS])

    def __exit__(self, *exc: object) -> None:
        _range_left.reset(self._token)
