"""How large a template operation's result would be, known before it runs.

The operations that can build something far larger than their inputs - a width, a count
or a fill asked for (``'x'.zfill(10**9)``, ``center``, ``batch(10**9, 0)``), a separator
or replacement repeated (``join``, ``replace``, ``translate``, ``wordwrap``), an indent
per nesting level (``tojson(indent=...)``, ``pprint``), a format width or precision
(``'%*s'``, ``'{:>{}}'``, ``'%.999999999f'``), a container combined with itself
(``append``, ``extend``, ``update``, ``fromkeys``) - each get a size model here: an upper
bound of what the call would build, computed from its arguments without building it.
:mod:`judge.llm.template_limits.environment` refuses the call when the bound is over the
limit, and checks the result's real size afterwards.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from typing import Any

from judge.llm.template_limits.budget import MAX_LENGTH, PRINT_FACTOR, measure

Model = Callable[[Any, tuple[Any, ...], dict[str, Any]], int]

_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?[a-zA-Z%]")
_DIGITS = re.compile(r"\d+")


def _number(digits: str) -> int:
    """A width or precision as written (a run of digits too long to be a size is over any)."""
    return int(digits) if len(digits) < 10 else MAX_LENGTH + 1


def _int_arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str, default: int = 0) -> int:
    value = args[index] if len(args) > index else kwargs.get(name, default)
    return value if isinstance(value, int) else default


def _text_arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str, default: str = "") -> int:
    value = args[index] if len(args) > index else kwargs.get(name, default)
    return len(value) if isinstance(value, str | bytes) else measure(value)[0] * PRINT_FACTOR


def _largest_int(*values: Any) -> int:
    """The largest integer among ``values`` and the items of tuples, lists and dicts in
    them (where ``*`` or a nested ``{}`` takes a width from)."""
    found = 0
    for value in values:
        items = value.values() if isinstance(value, dict) else value
        items = items if isinstance(items, tuple | list) or isinstance(value, dict) else [value]
        for item in items:
            if isinstance(item, int):
                found = max(found, abs(item))
    return found


def percent_size(fmt: Any, args: Any) -> int:
    """``fmt % args``: the format, the arguments printed, every width and precision."""
    if not isinstance(fmt, str | bytes):
        return 0
    text = fmt if isinstance(fmt, str) else fmt.decode("latin-1")
    size = len(text) + measure(args)[0] * PRINT_FACTOR
    for found in _PERCENT.finditer(text):
        for part in found.groups():
            if part == "*":
                size += _largest_int(args)
            elif part:
                size += _number(part)
    return size


def brace_size(fmt: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """``fmt.format(*args, **kwargs)``: the format, the arguments printed, every number in
    a field's spec, and the largest integer argument for each spec with a nested field."""
    if not isinstance(fmt, str):
        return 0
    size = len(fmt) + measure((args, kwargs))[0] * PRINT_FACTOR
    for _, _, spec, _ in string.Formatter().parse(fmt):
        if spec:
            size += sum(_number(d) for d in _DIGITS.findall(spec))
            if "{" in spec:
                size += _largest_int(args, kwargs)
    return size


def _padded(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return max(len(self), _int_arg(args, kwargs, 0, "width"))


def _tabs(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    tabs: int = self.count("\t" if isinstance(self, str) else b"\t")
    return len(self) + tabs * max(_int_arg(args, kwargs, 0, "tabsize", 8), 0)


def replaced_size(text: Any, old: Any, new: Any, count: Any) -> int:
    if not isinstance(text, str | bytes):
        text = str(text)  # (a value checked to print within the limit)
    if not isinstance(old, str | bytes) or type(old) is not type(text):
        return len(text)  # the call fails
    hits: int = text.count(old) if old else len(text) + 1  # type: ignore[arg-type]
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    new_size = len(new) if isinstance(new, str | bytes) else measure(new)[0] * PRINT_FACTOR
    return len(text) + hits * new_size


def _replace(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    old = args[0] if args else kwargs.get("old", "")
    new = args[1] if len(args) > 1 else kwargs.get("new", "")
    return replaced_size(self, old, new, _int_arg(args, kwargs, 2, "count", -1))


def _translate(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    table = args[0] if args else kwargs.get("table")
    longest = 1
    values = table.values() if isinstance(table, dict) else table if isinstance(table, list | tuple) else ()
    for value in values:
        if isinstance(value, str | bytes):
            longest = max(longest, len(value))
    return len(self) * longest


def joined_size(separator: Any, items: list[Any]) -> int:
    sep = len(separator) if isinstance(separator, str | bytes) else measure(separator)[0] * PRINT_FACTOR
    return sep * max(len(items) - 1, 0) + measure(items)[0] * PRINT_FACTOR


def _fromkeys(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    keys = args[0] if args else ()
    value = args[1] if len(args) > 1 else kwargs.get("value")
    count = len(keys) if hasattr(keys, "__len__") else MAX_LENGTH + 1
    return measure(keys)[0] + count * (1 + measure(value)[0])


def _to_bytes(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return _int_arg(args, kwargs, 0, "length", 1)


def _format(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return brace_size(self, args, kwargs)


def _format_map(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    mapping = args[0] if args else {}
    return brace_size(self, (), mapping if isinstance(mapping, dict) else {})


def _joined(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return joined_size(self, list(args[0]) if args else [])


#: A result the template builds from its inputs: at most :data:`MAX_LENGTH`.
BUILT = "built"
#: A text made by printing the inputs: at most what the render may still write.
TEXT = "text"

#: Methods of str, bytes, list, dict and int that can build more than their inputs, by
#: name: (kind, model).
METHODS: dict[str, tuple[str, Model]] = {
    "center": (BUILT, _padded),
    "ljust": (BUILT, _padded),
    "rjust": (BUILT, _padded),
    "zfill": (BUILT, _padded),
    "expandtabs": (BUILT, _tabs),
    "replace": (BUILT, _replace),
    "translate": (BUILT, _translate),
    "fromkeys": (BUILT, _fromkeys),
    "to_bytes": (BUILT, _to_bytes),
    "format": (TEXT, _format),
    "format_map": (TEXT, _format_map),
    "join": (TEXT, _joined),
}
#: Methods that change their list or dict in place (sizes known of anything holding it are stale).
MUTATING = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"}) | {
    "update",
    "setdefault",
    "popitem",
}
#: Methods whose (iterable) argument is read into a list first, to know its size.
ITERABLE_ARGUMENT = frozenset({"join", "extend"})


def _text_size(value: Any) -> int:
    return len(value) if isinstance(value, str | bytes) else measure(value)[0] * PRINT_FACTOR


def _batch(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    fill = args[1] if len(args) > 1 else kwargs.get("fill_with")
    if fill is None:
        return 0
    return measure(value)[0] + _int_arg(args, kwargs, 0, "linecount") * (1 + measure(fill)[0])


def _slice(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    fill = args[1] if len(args) > 1 else kwargs.get("fill_with")
    return measure(value)[0] + _int_arg(args, kwargs, 0, "slices") * (2 + measure(fill)[0])


def _center(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return _text_size(value) + max(_int_arg(args, kwargs, 0, "width", 80), 0)


def _indent(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    width = args[0] if args else kwargs.get("width", 4)
    pad = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
    text = value if isinstance(value, str) else ""
    return _text_size(value) + max(pad, 0) * (text.count("\n") + 1)


def _replace_filter(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    old = args[0] if args else kwargs.get("old", "")
    new = args[1] if len(args) > 1 else kwargs.get("new", "")
    count = args[2] if len(args) > 2 else kwargs.get("count")
    return replaced_size(value, str(old), str(new), count)


def _format_filter(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return percent_size(value, kwargs or args)


def _join_filter(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    separator = args[0] if args else kwargs.get("d", "")
    return joined_size(separator, value if isinstance(value, list) else [])


def _wordwrap(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    size = _text_size(value)
    width = max(_int_arg(args, kwargs, 0, "width", 79), 1)
    wrap = args[2] if len(args) > 2 else kwargs.get("wrapstring")
    return size + (size // width + 1) * (len(wrap) if isinstance(wrap, str) else 1)


def _tojson(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    size, depth = measure(value)
    indent = _int_arg(args, kwargs, 0, "indent")
    return size * PRINT_FACTOR * (1 + max(indent, 0) * depth)


def _pprint(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    size, depth = measure(value)
    return size * PRINT_FACTOR * (1 + depth)


def _urlize(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    size = _text_size(value)
    extra = _text_arg(args, kwargs, 2, "target") + _text_arg(args, kwargs, 3, "rel")
    return size * 3 + (size // 4 + 1) * (extra + 64)


def _truncate(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return _text_size(value) + _text_arg(args, kwargs, 2, "end", "...")


#: Jinja's filters that can build more than their input, by name: (kind, model). The
#: value is the filter's input; the arguments follow it.
FILTERS: dict[str, tuple[str, Model]] = {
    "batch": (BUILT, _batch),
    "slice": (BUILT, _slice),
    "center": (BUILT, _center),
    "indent": (BUILT, _indent),
    "replace": (BUILT, _replace_filter),
    "wordwrap": (BUILT, _wordwrap),
    "urlize": (BUILT, _urlize),
    "truncate": (BUILT, _truncate),
    "format": (TEXT, _format_filter),
    "join": (TEXT, _join_filter),
    "tojson": (TEXT, _tojson),
    "pprint": (TEXT, _pprint),
}
#: Filters that print their input (a value that is not text is checked before it is).
PRINTING = frozenset(
    {"capitalize", "lower", "upper", "title", "trim", "striptags", "wordcount", "string", "escape", "e"}
    | {"forceescape", "urlencode", "xmlattr", "center", "indent", "replace", "wordwrap", "urlize"}
    | {"truncate", "format"}
)


def lipsum_size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """``lipsum(n, html, min, max)``: ``n`` paragraphs of up to ``max`` words."""
    return _int_arg(args, kwargs, 0, "n", 5) * _int_arg(args, kwargs, 3, "max", 100) * 16
