"""Parsing of YAML and JSON documents with located errors and duplicate-key detection."""

from __future__ import annotations

import functools
import json
from typing import Any

import yaml

from judge.errors import ConfigError


def place(parts: tuple[Any, ...]) -> str:
    """A readable place: ``("hooks", "Stop", 0, "prompt")`` -> ``hooks.Stop[0].prompt``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def duplicate_key_problems(node: yaml.Node) -> list[str]:
    """Located messages for mapping keys that appear twice (``hooks.Stop: duplicate key 'Stop' at line 5``).

    YAML and ``json`` both keep the last value silently, so a second ``Stop:`` would
    quietly drop the first list of hooks. Merge keys (``<<``) may be overridden.
    """
    problems: list[str] = []
    seen_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, tuple[Any, ...]]] = [(node, ())]
    while stack:
        current, path = stack.pop()
        if id(current) in seen_nodes:  # aliases: walk each node once
            continue
        seen_nodes.add(id(current))
        if isinstance(current, yaml.SequenceNode):
            stack.extend((item, (*path, i)) for i, item in reversed(list(enumerate(current.value))))
        elif isinstance(current, yaml.MappingNode):
            keys: set[tuple[str, str]] = set()
            children: list[tuple[yaml.Node, tuple[Any, ...]]] = []
            for key_node, value_node in current.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = (key_node.tag, key_node.value)
                if key in keys:
                    where = place((*path, key_node.value))
                    problems.append(
                        f"{where}: duplicate key {key_node.value!r} at line {key_node.start_mark.line + 1}"
                    )
                keys.add(key)
                children.append((value_node, (*path, key_node.value)))
            stack.extend(reversed(children))
    return problems


def parse_yaml(text: str, loader_class: type[yaml.SafeLoader] = yaml.SafeLoader) -> tuple[Any, list[str]]:
    """The single YAML document of ``text`` and its duplicate-key problems.

    With duplicate keys the document is not built: ``(None, problems)``. Malformed YAML
    raises :class:`yaml.YAMLError`, a document nested too deeply :class:`RecursionError`.
    """
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, []
        duplicates = duplicate_key_problems(node)
        if duplicates:
            return None, duplicates
        try:
            return loader.construct_document(node), []
        except (yaml.YAMLError, RecursionError):
            raise
        except Exception as exc:  # a scalar its explicit tag cannot build: !!bool maybe, !!int ''
            problem = f"a value its tag cannot build ({type(exc).__name__}: {exc})"
            mark = _unbuildable(loader, node) or node.start_mark
            raise yaml.constructor.ConstructorError(None, None, problem, mark) from None
    finally:
        loader.dispose()  # type: ignore[no-untyped-call]


def _unbuildable(loader: yaml.SafeLoader, root: yaml.Node) -> Any:
    """Where the first scalar that its tag cannot build starts (None if none is found)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            try:
                loader.construct_object(node)  # type: ignore[no-untyped-call]
            except Exception:
                return node.start_mark
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
        elif isinstance(node, yaml.MappingNode):
            stack.extend(n for pair in reversed(node.value) for n in reversed(pair))
    return None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    if context and context_mark is not None:
        start = f"line {context_mark.line + 1}, column {context_mark.column + 1}"
        problem += f" ({context} that starts at {start})"
    return f"malformed YAML{where}: {problem}"


def unique_object(pairs: list[tuple[str, Any]], duplicates: list[str]) -> dict[str, Any]:
    """``json`` object hook: the object, noting in ``duplicates`` each key given twice
    (``json`` alone keeps the last value silently)."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            duplicates.append(key)
        obj[key] = value
    return obj


def _json_duplicates(text: str) -> list[str]:
    """Located duplicate keys of a JSON document that ``json`` parsed (it keeps the last silently)."""
    found: list[str] = []
    json.loads(text, object_pairs_hook=functools.partial(unique_object, duplicates=found))
    if not found:
        return []
    try:
        # Strict JSON has no raw tabs inside strings, so this keeps lines and meaning.
        node = yaml.compose(text.replace("\t", " "), Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        node = None
    located = duplicate_key_problems(node) if node is not None else []
    return located or [f"<root>: duplicate key {key!r}" for key in found]


def parse_document(text: str, source: str = "<config>") -> Any:
    """Parse YAML or JSON text (JSON is YAML, but JSON errors read better from json).

    Duplicate mapping keys are an error (both parsers would keep the last one silently).
    """
    stripped = text.lstrip()
    if stripped.startswith("{") or stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                [f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"], source
            ) from None
        except RecursionError:
            raise ConfigError(["malformed JSON: nested too deeply"], source) from None
        except ValueError as exc:  # e.g. an integer over Python's 4300-digit limit
            raise ConfigError([f"malformed JSON: {exc}"], source) from None
        duplicates = _json_duplicates(text)
        if duplicates:
            raise ConfigError(duplicates, source)
        return data
    try:
        data, duplicates = parse_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError([_yaml_problem(exc)], source) from None
    except RecursionError:
        raise ConfigError(["malformed YAML: nested too deeply"], source) from None
    except (ValueError, TypeError, OverflowError) as exc:  # a scalar its tag cannot build (2001-13-45)
        raise ConfigError([f"malformed YAML: {exc}"], source) from None
    if duplicates:
        raise ConfigError(duplicates, source)
    return data
