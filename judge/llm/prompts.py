"""Rendering of prompt-hook templates.

A hook's ``prompt`` is a Jinja2 template, rendered in a sandbox with ``StrictUndefined``
and resource limits (:mod:`judge.llm.template_limits`).
It may ``{% include %}`` templates from the config file's folder and from the packaged
prompt library (``completeness.j2``, ``investigation.j2``, ``evidence.j2``,
``format_marker.j2``; also reachable as ``prompts/<name>``). Includes never leave those
folders.

Template variables (a fixed namespace: context values never shadow anything else):

* ``context`` — the whole context object (every field, also ones judge does not know:
  ``{{ context.my_field }}``);
* the documented fields of the hook's event, by name, when the context has them
  (:data:`TEMPLATE_FIELDS`; e.g. ``{{ final_output }}`` on Stop, ``{{ tool_name }}`` on
  tool events). Any other context field is only ``context.<name>``, so a field named
  ``marker`` or ``range`` cannot change a template's own variables or Jinja's globals.

``$ARGUMENTS`` becomes the pretty-printed context JSON — every occurrence, in the hook's
template and in included templates; when no template mentions it, the context is
appended. The substitution happens after Jinja rendering (through a placeholder random
per process, never one found in the context), so agent content is data: a final answer
containing ``{{ 7*7 }}`` arrives verbatim. Compiled templates are cached.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import secrets
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from judge.errors import HookError
from judge.llm.template_limits import BoundedEnvironment, render_budget

ARGUMENTS = "$ARGUMENTS"

_COMMON_FIELDS = (
    "hook_event_name",
    "agent_name",
    "current_turn",
    "max_turns",
    "execution_summary",
    "session_id",
)
_STOP_FIELDS = (*_COMMON_FIELDS, "final_output", "stop_hook_active", "stop_rejection_count")
_PRE_FIELDS = (*_COMMON_FIELDS, "tool_name", "tool_input")
#: Context fields that are also top-level template variables, per event.
TEMPLATE_FIELDS: dict[str, tuple[str, ...]] = {
    "Stop": _STOP_FIELDS,
    "SubagentStop": _STOP_FIELDS,
    "PreToolUse": _PRE_FIELDS,
    "PostToolUse": (*_PRE_FIELDS, "tool_result", "tool_succeeded"),
}


def template_variables(context: dict[str, Any]) -> dict[str, Any]:
    """The variables a hook template sees: ``context`` plus the event's documented fields."""
    names = TEMPLATE_FIELDS.get(str(context.get("hook_event_name")))
    if names is None:  # no known event: every documented field
        names = tuple(dict.fromkeys(n for fields in TEMPLATE_FIELDS.values() for n in fields))
    variables = {name: context[name] for name in names if name in context}
    variables["context"] = context
    return variables


def library_dir() -> Path | None:
    """The prompt library: ``judge/_prompts`` in an installed wheel, else ``prompts/``."""
    try:
        packaged = Path(str(resources.files("judge") / "_prompts"))
    except (ModuleNotFoundError, TypeError):
        packaged = None
    if packaged is not None and packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2] / "prompts"
    return checkout if checkout.is_dir() else None


#: Stands for ``$ARGUMENTS`` inside compiled templates; random per process, and a render
#: whose context contains it falls back to a one-off placeholder (see :func:`render_prompt`).
PLACEHOLDER = f"@@JUDGE_ARGUMENTS_{secrets.token_hex(16)}@@"
_PLACEHOLDERS = re.compile(r"@@JUDGE_ARGUMENTS_[0-9a-f]{32}@@")


def written_syntax_error(
    exc: jinja2.TemplateSyntaxError, environment: jinja2.Environment
) -> jinja2.TemplateSyntaxError:
    """``exc`` as the template's author sees it: templates are compiled with ``$ARGUMENTS``
    swapped for a placeholder, so an error next to it would name the placeholder's ``@``
    and count its characters. The source as written is parsed again for the error (a
    parse only: nothing is loaded or rendered); failing that, the placeholder in the
    message is named ``$ARGUMENTS``."""
    source = exc.source
    if source is None or _PLACEHOLDERS.search(source) is None:
        return exc
    try:
        environment.parse(_PLACEHOLDERS.sub(lambda _m: ARGUMENTS, source), exc.name, exc.filename)
    except jinja2.TemplateSyntaxError as written:
        return written
    message = _PLACEHOLDERS.sub(lambda _m: ARGUMENTS, exc.message or "")
    return jinja2.TemplateSyntaxError(message, exc.lineno, exc.name, exc.filename)


class _ConfinedLoader(jinja2.FileSystemLoader):
    """A file loader that refuses files whose real path leaves its folder (symlinks),
    and swaps ``$ARGUMENTS`` for the placeholder."""

    def __init__(self, root: Path, placeholder: str) -> None:
        super().__init__(str(root))
        self.root = os.path.realpath(root)
        self.placeholder = placeholder

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        source, filename, uptodate = super().get_source(environment, template)
        real = os.path.realpath(filename)
        if os.path.commonpath([real, self.root]) != self.root:
            raise jinja2.TemplateNotFound(template)
        return source.replace(ARGUMENTS, self.placeholder), filename, uptodate


def _loader(base_dir: Path | None, placeholder: str) -> jinja2.BaseLoader:
    loaders: list[jinja2.BaseLoader] = []
    if base_dir is not None and base_dir.is_dir():
        loaders.append(_ConfinedLoader(base_dir, placeholder))
    library = library_dir()
    if library is not None:
        loaders.append(_ConfinedLoader(library, placeholder))
        loaders.append(jinja2.PrefixLoader({"prompts": _ConfinedLoader(library, placeholder)}))
    return jinja2.ChoiceLoader(loaders)


def _environment(base_dir: Path | None, placeholder: str) -> SandboxedEnvironment:
    return BoundedEnvironment(
        loader=_loader(base_dir, placeholder),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )


@functools.lru_cache(maxsize=32)
def _shared_environment(base_dir: Path | None) -> SandboxedEnvironment:
    """One environment per config folder: it caches included templates (reloaded when
    their files change)."""
    return _environment(base_dir, PLACEHOLDER)


@functools.lru_cache(maxsize=256)
def _compiled(template: str, base_dir: Path | None) -> jinja2.Template:
    return _shared_environment(base_dir).from_string(template.replace(ARGUMENTS, PLACEHOLDER))


def _contains(value: Any, text: str) -> bool:
    """Whether ``text`` occurs in any string inside ``value`` (a JSON-like structure)."""
    if isinstance(value, str):
        return text in value
    if isinstance(value, dict):
        return any(_contains(k, text) or _contains(v, text) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_contains(v, text) for v in value)
    if value is None or isinstance(value, int | float):
        return False
    return text in str(value)


#: Most characters of one string in the context a judge model is shown (head and tail kept).
MAX_VALUE_CHARS = 20_000


def _bounded(value: Any, depth: int = 0) -> Any:
    if isinstance(value, dict | list) and depth > 32:  # deeper: shown as (bounded) JSON text
        try:
            value = json.dumps(value, ensure_ascii=False, default=str)
        except (RecursionError, ValueError):
            value = "[a value nested too deeply to show]"
    if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
        half = MAX_VALUE_CHARS // 2
        cut = len(value) - 2 * half
        return f"{value[:half]}\n[... {cut} characters cut by judge ...]\n{value[-half:]}"
    if isinstance(value, dict):
        return {_bounded(str(k), depth + 1): _bounded(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_bounded(v, depth + 1) for v in value]
    return value


def judged_context(context: dict[str, Any]) -> dict[str, Any]:
    """The context as a judge model is shown it: every string over
    :data:`MAX_VALUE_CHARS` keeps its head and tail around a note saying how much was cut.
    An agent cannot push its answer past the model's context window (the request would
    fail, and the hook fall to its failMode) by making the answer huge."""
    bounded: dict[str, Any] = _bounded(context)
    return bounded


def context_json(context: dict[str, Any]) -> str:
    """The context as pretty JSON (what ``$ARGUMENTS`` becomes)."""
    return json.dumps(context, indent=2, ensure_ascii=False, default=str)


def render_prompt(
    template: str,
    context: dict[str, Any],
    base_dir: Path | None = None,
    *,
    arguments: str | None = None,
    deadline: float | None = None,
) -> str:
    """Render a hook prompt: Jinja2 first, then ``$ARGUMENTS`` (or an appended context).

    ``arguments`` overrides the text substituted for ``$ARGUMENTS`` (default: the pretty
    context JSON). Template problems, and a render past a limit of
    :mod:`judge.llm.template_limits` (``deadline``, in :func:`time.monotonic` seconds, is
    one), raise :class:`HookError` with the line number. Compiled templates are cached per
    (template, ``base_dir``). From a coroutine, use :func:`render_prompt_async`.
    """
    variables = template_variables(context)
    placeholder = PLACEHOLDER
    try:
        if _contains(context, PLACEHOLDER):
            # Agent content holding the placeholder must not become the context: one-off.
            placeholder = f"@@JUDGE_ARGUMENTS_{secrets.token_hex(16)}@@"
            env = _environment(base_dir, placeholder)
            compiled = env.from_string(template.replace(ARGUMENTS, placeholder))
        else:
            compiled = _compiled(template, base_dir)
        with render_budget(deadline):
            rendered = compiled.render(variables)
    except jinja2.TemplateSyntaxError as exc:
        exc = written_syntax_error(exc, _shared_environment(base_dir))
        where = f" in {exc.name}" if exc.name else ""
        raise HookError(f"prompt template error{where} at line {exc.lineno}: {exc.message}") from None
    except jinja2.TemplateNotFound as exc:
        raise HookError(f"prompt template error: included template not found: {exc.name}") from None
    except jinja2.UndefinedError as exc:
        raise HookError(f"prompt template error: {exc.message}") from None
    except (jinja2.TemplateError, ArithmeticError, TypeError, ValueError, LookupError, RecursionError) as exc:
        raise HookError(f"prompt template error: {exc}") from None
    text = arguments if arguments is not None else context_json(context)
    if placeholder in rendered:
        return rendered.replace(placeholder, text)
    return rendered.rstrip("\n") + "\n\n" + text


async def render_prompt_async(
    template: str,
    context: dict[str, Any],
    base_dir: Path | None = None,
    *,
    arguments: str | None = None,
    deadline: float | None = None,
) -> str:
    """:func:`render_prompt` in a worker thread: the event loop stays free while a template
    renders (and compiles), up to its limits. Renders have threads of their own, so slow
    ones cannot hold up the default executor (which state stores and file reads use)."""
    render = functools.partial(
        render_prompt, template, context, base_dir, arguments=arguments, deadline=deadline
    )
    return await asyncio.get_running_loop().run_in_executor(_render_threads(), render)


@functools.cache
def _render_threads() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=RENDER_THREADS, thread_name_prefix="judge-render")


# A forked child (judge eval --workers, the service's workers) has none of its parent's
# threads: an inherited pool would queue renders no thread ever runs.
os.register_at_fork(after_in_child=_render_threads.cache_clear)


#: Threads rendering templates for coroutines (per process).
RENDER_THREADS = 4


def template_environment(base_dir: Path | None) -> SandboxedEnvironment:
    """The (cached) environment hook templates of a config folder compile in; templates
    given to it must have ``$ARGUMENTS`` replaced by :data:`PLACEHOLDER`."""
    return _shared_environment(base_dir)
