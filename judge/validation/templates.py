"""Checks of prompt templates: compiled and rendered once against a sample context.

Rendering uses the same sandbox, loader and strict undefined handling as a real
judgement, so a syntax error, an ``{% include %}`` of a missing file or an undefined name
(``{{ finall_output }}``) is found before the first event, with its line.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import missing

from judge.config import STOP_EVENTS
from judge.llm.prompts import (
    ARGUMENTS,
    PLACEHOLDER,
    TEMPLATE_FIELDS,
    template_environment,
    template_variables,
    written_syntax_error,
)
from judge.llm.template_limits import BoundedEnvironment, render_budget
from judge.suggest import did_you_mean

#: Context fields callers may leave out (a template using them needs ``| default``).
OPTIONAL_FIELDS: tuple[str, ...] = (
    "agent_name",
    "current_turn",
    "max_turns",
    "execution_summary",
    "session_id",
)
#: The sample final answer of Stop samples (found in a rendered prompt that shows it).
SAMPLE_ANSWER = "Sample final answer 7f3a: all requested changes are done."
_ANSWER_WORDS = re.compile(r"final[_ ]output|final answer|answer|response", re.IGNORECASE)
_UNDEFINED = re.compile(r"'([^']+)' is undefined")


class SampleUndefined(jinja2.ChainableUndefined):
    """Undefined names fail (strict, as at run time); a key the *sample data* lacks
    (``{{ tool_input.file_path }}``, ``{{ context.ticket.id }}``) renders empty, because
    the real tool input or custom field may well have it."""

    __slots__ = ()

    def _check(self) -> None:
        if self._undefined_obj is missing:
            self._fail_with_undefined_error()

    def __str__(self) -> str:
        self._check()
        return ""

    def __iter__(self) -> Iterator[Any]:
        self._check()
        return iter(())

    def __bool__(self) -> bool:
        self._check()
        return False

    def __len__(self) -> int:
        self._check()
        return 0


def _sample_environment(base_dir: Path | None) -> SandboxedEnvironment:
    """The hook templates' environment (same loader) with :class:`SampleUndefined`."""
    shared = template_environment(base_dir)
    return BoundedEnvironment(
        loader=shared.loader,
        undefined=SampleUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )


def sample_context(event: str, agent_name: str | None = None, *, minimal: bool = False) -> dict[str, Any]:
    """A context of ``event`` with every documented field (only the required ones if ``minimal``)."""
    context: dict[str, Any] = {"hook_event_name": event}
    if not minimal:
        context |= {
            "agent_name": agent_name or "agent",
            "current_turn": 3,
            "max_turns": 20,
            "execution_summary": "transcripts/sample.jsonl",
            "session_id": "sample-session",
        }
    if event in STOP_EVENTS:
        context |= {"final_output": SAMPLE_ANSWER, "stop_hook_active": False, "stop_rejection_count": 0}
    else:
        context |= {"tool_name": "Bash", "tool_input": {"command": "ls"}}
        if event == "PostToolUse":
            context |= {"tool_result": "README.md", "tool_succeeded": True}
    return context


def _place(exc: BaseException, base_dir: Path | None) -> str:
    """``line N`` (or ``in FILE line N`` inside an included template) of the failing line."""
    found: tuple[str, int] | None = None
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not filename.endswith(".py"):
            found = (filename, tb.tb_lineno)
        tb = tb.tb_next
    if found is None:
        return "line ?"
    return _at(found[0], found[1], base_dir)


def _at(filename: str | None, lineno: int | None, base_dir: Path | None) -> str:
    if not filename or filename == "<template>":
        return f"line {lineno}"
    name = filename
    for root in (base_dir, _library()):
        if root is not None and Path(filename).is_relative_to(root):
            name = str(Path(filename).relative_to(root))
            break
    return f"{name} line {lineno}"


def _library() -> Path | None:
    from judge.llm.prompts import library_dir

    return library_dir()


def _undefined_hint(name: str, event: str, variables: dict[str, Any]) -> str:
    if any(name in fields for fields in TEMPLATE_FIELDS.values()):
        return f" (not a field of {event} events)"
    near = did_you_mean(name, variables)
    if near:
        return near
    return " (context fields judge does not document are only available as context.<name>)"


#: Longest one sample render may take (a template rendering for longer is refused).
VALIDATE_SECONDS = 2.0


def _render(template: jinja2.Template, context: dict[str, Any]) -> str:
    with render_budget(time.monotonic() + VALIDATE_SECONDS):
        return template.render(template_variables(context))


def template_problems(
    prompt: str, event: str, agent_name: str | None, base_dir: Path | None
) -> tuple[list[str], list[str]]:
    """(errors, warnings) of one prompt hook's template, each starting with its line."""
    env = _sample_environment(base_dir)
    full = sample_context(event, agent_name)
    try:
        template = env.from_string(prompt.replace(ARGUMENTS, PLACEHOLDER))
        rendered = _render(template, full)
    except jinja2.TemplateSyntaxError as exc:
        exc = written_syntax_error(exc, env)
        return [f"{_at(exc.filename, exc.lineno, base_dir)}: {exc.message}"], []
    except jinja2.TemplateNotFound as exc:
        return [f"{_place(exc, base_dir)}: included template not found: {exc.name}"], []
    except jinja2.UndefinedError as exc:
        message = exc.message or "undefined"
        match = _UNDEFINED.fullmatch(message)
        if match is None:  # e.g. arithmetic on a key the sample data lacks: not knowable here
            return [], []
        hint = _undefined_hint(match.group(1), event, template_variables(full))
        return [f"{_place(exc, base_dir)}: {message}{hint}"], []
    except jinja2.exceptions.SecurityError as exc:  # a resource limit: any context hits it
        return [f"{_place(exc, base_dir)}: {exc}"], []
    except Exception as exc:  # e.g. IndexError from the sample data: other data may pass
        where = _place(exc, base_dir)
        problem = f"{type(exc).__name__}: {exc}"
        return [], [f"{where}: fails on the sample context ({problem}); make sure real contexts cannot"]
    warnings: list[str] = []
    try:
        _render(template, sample_context(event, agent_name, minimal=True))
    except jinja2.UndefinedError as exc:
        match = _UNDEFINED.fullmatch(exc.message or "")
        if match and match.group(1) in OPTIONAL_FIELDS:
            name = match.group(1)
            warnings.append(
                f"{_place(exc, base_dir)}: fails when the caller sends no {name} (the judgement "
                f"errors); write {{{{ {name} | default('') }}}}"
            )
    except Exception:  # reported by the full render or not a problem of optional fields
        pass
    shows_answer = PLACEHOLDER in rendered or SAMPLE_ANSWER in rendered or _ANSWER_WORDS.search(rendered)
    if event in STOP_EVENTS and not shows_answer:
        warnings.append(
            "never refers to the agent's final answer ($ARGUMENTS, {{ final_output }} or the "
            "words 'final answer'): the context is appended, but the judge is not told to check it"
        )
    return [], warnings
