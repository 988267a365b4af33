"""One render's allowance: a deadline, the text written, what was built, ``range`` items.

Every operation a template can perform that costs more than a constant (an operator, a
filter, a method or function call, a list or dict literal, one item of a ``for`` loop, a
piece of output) goes through :class:`RenderBudget` first (see
:mod:`judge.llm.template_limits.environment`), so the render stops within one bounded step
of whichever limit it reaches:

* **time**: the render's deadline (the hook's deadline, and at most
  :data:`MAX_RENDER_SECONDS`), checked at every step;
* **values**: no value a template builds is larger than :data:`MAX_LENGTH` once expanded
  (:func:`measure`: characters of strings and items of lists and dicts, counted each time
  they are referenced, so ``[[1] * 1000000] * 1000000``, small in memory, counts as the
  10^12 items it would print); the size is known, or bounded, *before* anything is built;
* **memory**: everything built in one render counts against :data:`MAX_BUILT` (characters
  and items, also after they are freed), so a loop building bounded values over and over
  still stops;
* **output**: at most :data:`MAX_OUTPUT` characters written in all (template text, ``{{
  }}`` expressions, the bodies of macros, ``set`` blocks and ``filter`` blocks);
* **range**: at most :data:`MAX_RANGE_ITEMS` items from ``range`` per render.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections import OrderedDict
from collections.abc import ItemsView, Iterator, KeysView, ValuesView
from typing import Any

from jinja2.exceptions import SecurityError
from jinja2.utils import Namespace

#: Largest string, list or dict (expanded, see :func:`measure`) a template may build.
MAX_LENGTH = 1_000_000
#: Characters one render may write in all (template text, expressions, macro bodies).
MAX_OUTPUT = 4_000_000
#: Characters and items one render may build in all (counted also after they are freed).
MAX_BUILT = 100_000_000
#: Items ``range`` may produce in one render, all calls together.
MAX_RANGE_ITEMS = 100_000
#: Largest exponent of ``**``.
MAX_EXPONENT = 1000
#: Largest integer ``*`` or ``**`` may build, in bits (so chained products stay cheap too).
MAX_POWER_BITS = 100_000
#: Longest a render may take, whatever the hook's timeout.
MAX_RENDER_SECONDS = 5.0

_current: contextvars.ContextVar[RenderBudget | None] = contextvars.ContextVar(
    "judge_render_budget", default=None
)


class RenderBudget:
    """What one render may still spend (see the module doc)."""

    def __init__(self, deadline: float | None = None) -> None:
        now = time.monotonic()
        latest = now + MAX_RENDER_SECONDS
        self.deadline = latest if deadline is None else min(deadline, latest)
        self.seconds = max(self.deadline - now, 0.0)
        self.range_left = MAX_RANGE_ITEMS
        self.output = 0
        self.built = 0
        # Sizes of the last few values built (holding them, so their ids stay theirs):
        # ``ns.items = ns.items + [x]`` in a loop is linear, not quadratic.
        self._sizes: OrderedDict[int, tuple[Any, tuple[int, int]]] = OrderedDict()

    def tick(self) -> None:
        """One step of the render: past the deadline, it stops here."""
        if time.monotonic() > self.deadline:
            raise SecurityError(f"the template took longer than {self.seconds:.3g}s to render")

    def write(self, size: int) -> None:
        """``size`` more characters of output."""
        self.output += size
        if self.output > MAX_OUTPUT:
            raise SecurityError(f"the template wrote more than {MAX_OUTPUT} characters")

    def charge(self, size: int) -> None:
        """``size`` more characters or items built."""
        self.built += size
        if self.built > MAX_BUILT:
            raise SecurityError(f"the template built more than {MAX_BUILT} characters and items in all")

    def take_range(self, items: int) -> None:
        self.range_left -= items
        if self.range_left < 0:
            raise SecurityError(f"range: the template asked for more than {MAX_RANGE_ITEMS} items in all")

    def known_size(self, value: Any) -> tuple[int, int] | None:
        found = self._sizes.get(id(value))
        if found is None or found[0] is not value:
            return None
        self._sizes.move_to_end(id(value))
        return found[1]

    def remember(self, value: Any, size: tuple[int, int]) -> None:
        if isinstance(value, list | dict | tuple | str):
            self._sizes[id(value)] = (value, size)
            if len(self._sizes) > 8:
                self._sizes.popitem(last=False)

    def forget(self) -> None:
        """A container was changed in place: sizes known of anything holding it are stale."""
        self._sizes.clear()


def current() -> RenderBudget:
    """The allowance of the render in progress (outside one, e.g. while Jinja folds
    constants at compile time, a fresh one: each step is still bounded)."""
    budget = _current.get()
    return budget if budget is not None else RenderBudget()


@contextlib.contextmanager
def render_budget(deadline: float | None = None) -> Iterator[RenderBudget]:
    """``with render_budget(deadline):`` around one render (``deadline`` in
    :func:`time.monotonic` seconds, which is also the event loop's clock)."""
    budget = RenderBudget(deadline)
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)


def _scalar(value: Any) -> int:
    if isinstance(value, str | bytes | bytearray):
        return max(len(value), 1)
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length() // 3 + 1
    return 1


def _children(value: Any) -> Any:
    if isinstance(value, dict | ItemsView):
        pairs = value.items() if isinstance(value, dict) else value
        return [item for pair in pairs for item in pair]
    if isinstance(value, list | tuple | set | frozenset | KeysView | ValuesView):
        return value
    if isinstance(value, Namespace):  # printed as its attributes
        attrs: dict[str, Any] = object.__getattribute__(value, "_Namespace__attrs")
        return [item for pair in attrs.items() for item in pair]
    return None


def measure(value: Any, limit: int = MAX_LENGTH) -> tuple[int, int]:
    """(size, depth) of ``value`` expanded: characters of strings and bytes, digits of
    integers, 1 for other scalars, and for lists, tuples, dicts (keys and values) and
    namespaces 1 plus their items', every reference counted (``[x, x]`` is twice ``x``,
    and a list holding itself has no end). A container referenced again is not walked
    again, and counting stops once the size passes ``limit`` (the size returned is then
    over it), so a call costs at most about ``limit`` steps whatever the aliasing."""
    budget = _current.get()
    known = budget.known_size(value) if budget is not None else None
    if known is not None:
        return known
    if _children(value) is None:
        return _scalar(value), 0
    done: dict[int, tuple[int, int]] = {}
    # frames: [container, its items, size so far, depth so far]
    frames: list[list[Any]] = [[value, iter(_children(value)), 1, 1]]
    walking = {id(value)}
    running = 1  # the sizes of all open frames together
    while frames and running <= limit:
        frame = frames[-1]
        kid = next(frame[1], _END)
        if kid is _END:
            frames.pop()
            walking.discard(id(frame[0]))
            done[id(frame[0])] = (frame[2], frame[3])
            running -= frame[2]
            if not frames:
                return frame[2], frame[3]
            frames[-1][2] += frame[2]
            frames[-1][3] = max(frames[-1][3], frame[3] + 1)
            running += frame[2]
            continue
        kids = _children(kid)
        if kids is None:
            add, deep = _scalar(kid), 0
        elif id(kid) in done:
            add, deep = done[id(kid)]
        elif budget is not None and (known := budget.known_size(kid)) is not None:
            add, deep = known
        elif id(kid) in walking:  # a container holding itself: endless when printed
            add, deep = limit + 1, 0
        else:
            frames.append([kid, iter(kids), 1, 1])
            walking.add(id(kid))
            running += 1
            continue
        frame[2] += add
        frame[3] = max(frame[3], deep + 1)
        running += add
    return max(running, limit + 1), max((f[3] for f in frames), default=0)


_END = object()


def check_built(value: Any, what: str, known: tuple[int, int] | None = None) -> Any:
    """``value`` if its expanded size (``known`` already, or measured) is within
    :data:`MAX_LENGTH` (what building it allocated is charged to the render's allowance),
    else :class:`SecurityError`."""
    size, depth = measure(value) if known is None else known
    if size > MAX_LENGTH:
        raise SecurityError(f"{what}: the result would be longer than {MAX_LENGTH}")
    budget = current()
    budget.charge(shallow_size(value))
    budget.remember(value, (size, depth))
    return value


def shallow_size(value: Any) -> int:
    """What building ``value`` allocated: its characters, or its slots (what the slots
    refer to was built, and charged, before)."""
    if isinstance(value, str | bytes | bytearray | list | tuple | dict):
        return len(value)
    return 1


def refuse_over(size: int, what: str) -> None:
    """Refuse, before it is built, a result of ``size`` over :data:`MAX_LENGTH`."""
    if size > MAX_LENGTH:
        raise SecurityError(f"{what}: the result would be longer than {MAX_LENGTH}")


#: Characters one unit of :func:`measure` may print as at most (``'a', `` for a letter).
PRINT_FACTOR = 6


def as_text(value: Any) -> str:
    """``str(value)``, refused when it could overrun the render's output allowance (a
    value made of references to one big value is small until printed)."""
    if isinstance(value, str):
        return str(value)
    room = (MAX_OUTPUT - current().output) // PRINT_FACTOR
    size, _ = measure(value, room)
    if size > room:
        raise SecurityError(f"the value would print as more than {MAX_OUTPUT} characters")
    return str(value)
