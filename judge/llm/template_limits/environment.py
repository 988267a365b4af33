"""The sandboxed Jinja environment of hook templates, with every costly step bounded.

:class:`BoundedEnvironment` is Jinja's sandbox plus a toll on each step that can cost more
than a constant (see :mod:`judge.llm.template_limits.budget` for the limits):

* operators ``*``, ``+``, ``**``, ``%`` (intercepted) and ``~`` (compiled to
  :meth:`~BoundedEnvironment.bounded_concat`);
* every call (:meth:`~BoundedEnvironment.call`): methods of strings, bytes, lists, dicts
  and integers that can build more than their inputs get a size model
  (:mod:`judge.llm.template_limits.sizes`) checked *before* they run; globals
  (``dict``, ``namespace``, ``cycler``, ``joiner``) and the extra arguments a macro
  collects in ``varargs``/``kwargs`` are checked like literals;
* every filter (wrapped at start): the same size models, and a value printed by a filter
  (``upper``, ``string``, ...) is checked the way ``{{ }}`` checks it;
* list, tuple and dict literals, each item of a ``for`` loop and every piece of output
  (compiled through the environment by :class:`_BoundedCodeGenerator`).
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.filters import make_attrgetter
from jinja2.runtime import Macro, markup_join, str_join
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import generate_lorem_ipsum, pass_environment

from judge.llm.template_limits.budget import (
    MAX_EXPONENT,
    MAX_OUTPUT,
    MAX_POWER_BITS,
    PRINT_FACTOR,
    as_text,
    check_built,
    current,
    measure,
    refuse_over,
    shallow_size,
)
from judge.llm.template_limits.sizes import (
    BUILT,
    FILTERS,
    ITERABLE_ARGUMENT,
    METHODS,
    MUTATING,
    PRINTING,
    Model,
    lipsum_size,
    percent_size,
)

_OWNERS = (str, bytes, bytearray, list, dict, int)
#: References to a value just returned by a call, as :func:`_account` sees it (its
#: argument, and :func:`sys.getrefcount`'s): more means it is held elsewhere too.
_FRESH = 2
#: Methods that add to their list or dict.
_GROWING = frozenset({"append", "insert", "extend", "update", "setdefault"})


def _refuse_text(size: int, what: str) -> None:
    """Refuse a text that would not fit in what the render may still write."""
    room = MAX_OUTPUT - current().output
    if size > room:
        raise SecurityError(f"{what}: the result would be longer than {room} (of {MAX_OUTPUT} in all)")


def _check(kind: str, model: Model, owner: Any, args: tuple[Any, ...], kwargs: Any, what: str) -> None:
    size = model(owner, args, kwargs)
    if kind == BUILT:
        refuse_over(size, what)
    else:
        _refuse_text(size, what)


def _account(kind: str | None, result: Any, what: str) -> Any:
    """Charge a result: a built one is checked whole; another only when it is new (a
    value passed through, such as ``dict.get``'s, was charged when it was built)."""
    if kind == BUILT:
        return check_built(result, what)
    if sys.getrefcount(result) <= _FRESH:
        current().charge(shallow_size(result))
    return result


def _bounded_range(*args: int) -> range:
    items = range(*args)
    budget = current()
    budget.tick()
    budget.take_range(len(items))
    return items


def _bounded_lipsum(*args: Any, **kwargs: Any) -> str:
    refuse_over(lipsum_size(args, kwargs), "lipsum")
    return check_built(generate_lorem_ipsum(*args, **kwargs), "lipsum")  # type: ignore[no-any-return]


@pass_environment
def _bounded_sum(environment: Any, iterable: Iterable[Any], attribute: Any = None, start: Any = 0) -> Any:
    """Jinja's ``sum``; lists and tuples are joined in one pass (``sum`` adds them pairwise,
    a quadratic copy of every prefix)."""
    if attribute is not None:
        iterable = map(make_attrgetter(environment, attribute), iterable)
    items = list(iterable)
    if not isinstance(start, list | tuple):
        return sum(items, start)
    refuse_over(measure(start)[0] + measure(items)[0], "sum")
    joined = list(start)
    for item in items:
        if type(item) is not type(start):
            raise TypeError(f'can only concatenate {type(start).__name__} (not "{type(item).__name__}")')
        joined.extend(item)
    return check_built(joined if isinstance(start, list) else tuple(joined), "sum")


def _printable(value: Any, what: str) -> None:
    if not isinstance(value, str):
        _refuse_text(measure(value, MAX_OUTPUT)[0] * PRINT_FACTOR, what)


def _wrap_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    kind, model = FILTERS.get(name, (None, None))
    skip = 0 if getattr(func, "jinja_pass_arg", None) is None else 1
    prints = name in PRINTING

    @functools.wraps(func)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        current().tick()
        if len(args) > skip:
            value = args[skip]
            if name == "join" and not isinstance(value, str | list):
                value = list(value)
                args = (*args[:skip], value, *args[skip + 1 :])
            if prints:
                _printable(value, name)
            if kind is not None and model is not None:
                _check(kind, model, value, args[skip + 1 :], kwargs, name)
        return _account(kind, func(*args, **kwargs), name)

    return bounded


class _BoundedCodeGenerator(CodeGenerator):
    """Compiles literals, ``~``, ``for`` loops and output through the environment."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.bounded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("), context.eval_ctx)")

    def _literal(self, visit: Callable[[Any, Frame], None], node: Any, frame: Frame) -> None:
        self.write("environment.bounded_literal(")
        visit(node, frame)
        self.write(")")

    def visit_List(self, node: nodes.List, frame: Frame) -> None:
        self._literal(super().visit_List, node, frame)

    def visit_Dict(self, node: nodes.Dict, frame: Frame) -> None:
        self._literal(super().visit_Dict, node, frame)

    def visit_Tuple(self, node: nodes.Tuple, frame: Frame) -> None:
        if node.ctx == "store":  # a target: ``{% for a, b in ... %}``
            super().visit_Tuple(node, frame)
        else:
            self._literal(super().visit_Tuple, node, frame)

    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        step = nodes.EnvironmentAttribute("bounded_iter", lineno=node.lineno)
        counted = nodes.Call(step, [node.iter], [], None, None, lineno=node.lineno)
        counted.set_environment(self.environment)
        super().visit_For(
            nodes.For(
                node.target, counted, node.body, node.else_, node.test, node.recursive, lineno=node.lineno
            ),
            frame,
        )

    def _output_child_pre(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        self.write("environment.output_text(")
        if finalize.src is not None:
            self.write(finalize.src)

    def _output_const_repr(self, group: Iterable[Any]) -> str:
        return f"environment.output_const({super()._output_const_repr(group)})"


class BoundedEnvironment(SandboxedEnvironment):
    """A sandboxed environment whose templates cannot ask for unbounded memory, output or
    time; see the package doc."""

    intercepted_binops = frozenset({"*", "+", "**", "%"})
    code_generator_class = _BoundedCodeGenerator

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.filters["sum"] = _bounded_sum
        self.filters = {name: _wrap_filter(name, func) for name, func in self.filters.items()}
        self.globals["range"] = _bounded_range
        self.globals["lipsum"] = _bounded_lipsum

    # -- compiled steps ------------------------------------------------------------

    def bounded_concat(self, parts: tuple[Any, ...], eval_ctx: Any) -> Any:
        """``a ~ b ~ ...``: each part printed within the output allowance, the whole
        within :data:`MAX_LENGTH`."""
        current().tick()
        texts = [as_text(part) if not isinstance(part, str) else part for part in parts]
        refuse_over(sum(len(t) for t in texts), "'~'")
        joined = markup_join(texts) if eval_ctx.volatile or eval_ctx.autoescape else str_join(texts)
        current().charge(len(joined))
        return joined

    def bounded_literal(self, value: Any) -> Any:
        current().tick()
        return check_built(value, "a literal")

    def bounded_iter(self, iterable: Any) -> Iterator[Any]:
        budget = current()
        for item in iterable:
            budget.tick()
            yield item

    def output_text(self, value: Any) -> str:
        budget = current()
        budget.tick()
        text = as_text(value)
        budget.write(len(text))
        return text

    def output_const(self, text: str) -> str:
        current().write(len(text))
        return text

    # -- operators and calls -------------------------------------------------------

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        current().tick()
        size = self._binop_size(operator, left, right)
        result = super().call_binop(context, operator, left, right)
        if size is not None:
            return check_built(result, f"'{operator}'", size)
        return result

    @staticmethod
    def _binop_size(operator: str, left: Any, right: Any) -> tuple[int, int] | None:
        """(size, depth) of what ``left operator right`` builds, refused when over a limit."""
        what = f"'{operator}'"
        if operator == "%" and isinstance(left, str | bytes):
            _refuse_text(percent_size(left, right), what)
        elif operator == "*":
            for sequence, times in ((left, right), (right, left)):
                if isinstance(sequence, str | bytes | list | tuple) and isinstance(times, int):
                    size, depth = measure(sequence)
                    copies = max(times, 0)
                    grown = size * copies if isinstance(sequence, str | bytes) else 1 + (size - 1) * copies
                    refuse_over(grown, what)
                    return grown, depth
            bits = (
                left.bit_length() + right.bit_length()
                if isinstance(left, int) and isinstance(right, int)
                else 0
            )
            if bits > MAX_POWER_BITS:
                raise SecurityError(f"'*': the result would have more than {MAX_POWER_BITS} bits")
        elif operator == "+" and isinstance(left, str | bytes | list | tuple):
            if isinstance(right, str | bytes | list | tuple):
                (one, deep_one), (two, deep_two) = measure(left), measure(right)
                size = one + two if isinstance(left, str | bytes) else one + two - 1
                refuse_over(size, what)
                return size, max(deep_one, deep_two)
        elif operator == "**" and isinstance(right, int | float):
            if abs(right) > MAX_EXPONENT:
                raise SecurityError(f"'**': exponents above {MAX_EXPONENT} are not allowed")
            if isinstance(left, int) and left.bit_length() * abs(right) > MAX_POWER_BITS:
                raise SecurityError(f"'**': the result would have more than {MAX_POWER_BITS} bits")
        return None

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        """A call from a template (see the package doc)."""
        budget = current()
        budget.tick()
        target = getattr(__obj, "__wrapped__", __obj)  # str.format, wrapped by the sandbox
        owner = getattr(target, "__self__", None)
        name = getattr(target, "__name__", "")
        kind: str | None = None
        if isinstance(owner, _OWNERS) or any(owner is t for t in _OWNERS):
            if name in ITERABLE_ARGUMENT and args and not isinstance(args[0], str | list):
                args = (list(args[0]), *args[1:])
            if name in _GROWING and isinstance(owner, list | dict):
                return __self._grow(__context, __obj, owner, name, args, kwargs)
            kind, model = METHODS.get(name, (None, None))
            if kind is not None and model is not None:
                _check(kind, model, owner, args, kwargs, name)
            result = super().call(__context, __obj, *args, **kwargs)
            if name in MUTATING and isinstance(owner, list | dict):
                budget.forget()
            return _account(kind, result, name)
        if isinstance(__obj, Macro):
            named = __obj.arguments
            extra = args[len(named) :], {k: v for k, v in kwargs.items() if k not in named}
            check_built(extra, f"the arguments of {__obj.name}")
        elif inspect.isclass(__obj) or any(__obj is g for g in __self.globals.values()):
            check_built((args, kwargs), f"the arguments of {name or 'a call'}")
        return _account(None, super().call(__context, __obj, *args, **kwargs), name)

    def _grow(self, context: Any, method: Any, owner: Any, name: str, args: Any, kwargs: Any) -> Any:
        """``append``, ``extend``, ``insert``, ``update``, ``setdefault``: the container's
        size after the call is known before it (and remembered: a loop appending to one
        list measures each item once)."""
        before, depth = measure(owner)
        added, added_depth = measure((args, kwargs))
        refuse_over(before + added, name)
        result = super().call(context, method, *args, **kwargs)
        budget = current()
        budget.charge(added)
        budget.forget()
        budget.remember(owner, (before + added, max(depth, added_depth)))
        return result


__all__ = ["BoundedEnvironment"]
