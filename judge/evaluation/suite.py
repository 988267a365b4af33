"""Eval suites: a YAML file naming a hook config, an event and a JSONL of cases.

```yaml
name: completeness-smoke
config: agent.yaml          # hooks config, relative to this file
event: Stop
cases: cases.jsonl          # relative to this file
repeats: 1
```

Every line of the cases file is one :class:`Case`. Problems are reported with their
place, ``cases.jsonl:7: context.final_output: Input should be a valid string``, and all
problems of a file are collected before :class:`SuiteError` is raised.

Relative paths inside a case (``transcript_path``, a relative ``execution_summary``) are
resolved against the suite file's folder (:attr:`Suite.base_dir`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from judge.config import EVENTS, Config, load_config, parse_yaml, unique_object
from judge.config.entries import keys_of, unknown_event
from judge.context import parse_context
from judge.errors import ConfigError, ContextError, SuiteError
from judge.evaluation.perturbations import Probe
from judge.files import MAX_DOCUMENT_BYTES, NotARegularFile, check_readable, file_kind, read_text
from judge.suggest import did_you_mean

#: Largest cases file (it is read whole; transcripts it names are streamed).
MAX_CASES_BYTES = 1 << 30
#: Longest ``rationale`` of a case (it is shown to the optimizer of ``judge tune``).
MAX_RATIONALE_CHARS = 4000


class RecordedVerdict(BaseModel):
    """What a gate decided for a case when it ran (e.g. a shadow hook in production)."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["allow", "block"] = Field(description="What the gate decided (or would have).")
    reason: str | None = Field(None, description="Its reason.")


class Case(BaseModel):
    """One recorded response to judge (one line of the cases JSONL)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, description="Unique id of the case within the suite.")
    context: dict[str, Any] = Field(description="The hook context JSON for the suite's event.")
    transcript: str | None = Field(None, description="Inline transcript text.")
    transcript_path: str | None = Field(None, description="Transcript file, relative to the suite file.")
    label: Literal["allow", "block"] | None = Field(
        None, description="What a person says the gate should answer."
    )
    rationale: str | None = Field(
        None,
        max_length=MAX_RATIONALE_CHARS,
        description="Why the case has its label, in the labeller's words (needs `label`). "
        "`judge tune` shows the optimizer the rationales of the train cases a prompt gets "
        "wrong, and few-shot examples carry them.",
    )
    group: str | None = Field(None, description="Grouping key (e.g. the pair or task the case comes from).")
    tags: list[str] = Field(default_factory=list, description="Free-form tags for per-tag breakdowns.")
    recorded: RecordedVerdict | None = Field(
        None,
        description="A verdict recorded when the gate ran (shadow hooks); `judge eval --recorded` "
        "scores these against the labels instead of judging again.",
    )

    @field_validator("id", mode="before")
    @classmethod
    def _id_is_text(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value

    @model_validator(mode="after")
    def _one_transcript(self) -> Case:
        if self.transcript is not None and self.transcript_path is not None:
            raise ValueError("give either `transcript` or `transcript_path`, not both")
        if self.rationale is not None and self.label is None:
            raise ValueError("`rationale` explains a label: give `label` too")
        return self


class SuiteFile(BaseModel):
    """The suite YAML document."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, description="Suite name (default: the file's stem).")
    description: str | None = Field(None, description="Free text.")
    config: str = Field(description="Hook configuration file, relative to the suite file.")
    event: str = Field("Stop", description="The event every case is evaluated for.")
    cases: str = Field(description="Cases JSONL file, relative to the suite file.")
    repeats: int = Field(1, ge=1, le=100, description="Judgements per case (flip rate when > 1).")
    probes: list[Probe] = Field(
        default_factory=list, description="Probes of this suite (`judge eval --probes NAME`)."
    )

    @field_validator("event")
    @classmethod
    def _known_event(cls, value: str) -> str:
        if value not in EVENTS:
            raise ValueError(unknown_event(value))
        return value


@dataclass
class Suite:
    """A loaded, validated suite."""

    name: str
    path: Path
    base_dir: Path
    config: Config
    event: str
    cases: list[Case]
    repeats: int
    #: The hook config file judged with (the suite's, or ``judge eval --config``'s).
    config_path: Path | None = None
    #: Probes the suite defines (``judge eval --probes``; the built-in ones are always there).
    probes: list[Probe] = dataclasses.field(default_factory=list)


#: Known values of a case's fields that take one of a few (for the near miss of another).
_CHOICES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("label",): ("allow", "block"),
    ("recorded", "decision"): ("allow", "block"),
}


def _problems(prefix: str, exc: ValidationError, model: type[BaseModel]) -> list[str]:
    out = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden" and err["loc"]:
            known = keys_of(RecordedVerdict if err["loc"][0] == "recorded" else model)
            msg = "unknown key" + did_you_mean(str(err["loc"][-1]), known)
        elif err["type"] == "literal_error" and tuple(map(str, err["loc"])) in _CHOICES:
            given = err.get("input")
            near = (
                did_you_mean(given, _CHOICES[tuple(map(str, err["loc"]))]) if isinstance(given, str) else ""
            )
            msg += near
        out.append(f"{prefix}: {where}: {msg}" if where else f"{prefix}: {msg}")
    return out


def resolve_path(base_dir: Path, value: str) -> Path:
    """``value`` as a path, relative ones taken from ``base_dir``."""
    p = Path(value).expanduser()
    return p if p.is_absolute() else base_dir / p


def _load_suite_yaml(text: str, src: str) -> Any:
    """The suite document; duplicate keys and malformed YAML raise a located :class:`SuiteError`."""
    try:
        data, duplicates = parse_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise SuiteError([f"{src}{line}: malformed YAML: {getattr(exc, 'problem', None) or exc}"]) from None
    except RecursionError:
        raise SuiteError([f"{src}: malformed YAML: nested too deeply"]) from None
    if duplicates:
        raise SuiteError([f"{src}: {problem}" for problem in duplicates])
    return data


def parse_cases(text: str, source: str, event: str, base_dir: Path) -> tuple[list[Case], list[str]]:
    """Parse a cases JSONL text; return the good cases and located problems."""
    cases: list[Case] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(text.split("\n"), start=1):  # U+2028 may sit in a string
        if not line.strip():
            continue
        where = f"{source}:{lineno}"
        duplicates: list[str] = []
        try:
            raw = json.loads(line, object_pairs_hook=functools.partial(unique_object, duplicates=duplicates))
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: malformed JSON at column {exc.colno}: {exc.msg}")
            continue
        except RecursionError:
            problems.append(f"{where}: malformed JSON: nested too deeply")
            continue
        except ValueError as exc:  # e.g. an integer of more digits than Python converts
            problems.append(f"{where}: malformed JSON: {str(exc).split(';')[0]}")
            continue
        if duplicates:
            problems.extend(f"{where}: duplicate key {key!r}" for key in duplicates)
            continue
        if not isinstance(raw, dict):
            problems.append(f"{where}: each line must be a JSON object, got {type(raw).__name__}")
            continue
        try:
            case = Case.model_validate(raw)
        except ValidationError as exc:
            problems.extend(_problems(where, exc, Case))
            continue
        if case.id in seen:
            problems.append(f"{where}: duplicate id {case.id!r} (first on line {seen[case.id]})")
            continue
        seen[case.id] = lineno
        try:
            parse_context(event, case.context)
        except ContextError as exc:
            problems.append(f"{where}: case {case.id!r}: {exc}")
            continue
        problem = _transcript_problem(case, base_dir)
        if problem is not None:  # a typo would be judged without the transcript: say so now
            problems.append(f"{where}: case {case.id!r}: {problem}")
            continue
        cases.append(case)
    return cases, problems


def _transcript_problem(case: Case, base_dir: Path) -> str | None:
    """Why a file the case names for its transcript (``transcript_path``, the context's
    ``execution_summary``: both are checked) cannot be read, or None."""
    summary = case.context.get("execution_summary")
    named = [("transcript_path", case.transcript_path)]
    named.append(("execution_summary", summary if isinstance(summary, str) and summary else None))
    for field, value in named:
        if value is None:
            continue
        path = resolve_path(base_dir, value)
        try:
            found = path.is_file()
        except (OSError, ValueError) as exc:  # a name too long for the file system, ...
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return f"{field} cannot be used: {why}"
        if not found:
            return _missing(field, path, value)
        try:
            check_readable(path, field)
        except NotARegularFile as exc:  # one whose reads wait (/proc/kmsg)
            return str(exc).replace(str(path), value, 1)
        except OSError as exc:
            return f"{field} cannot be read: {exc.strerror or exc}"
    return None


def _missing(field: str, path: Path, named: str) -> str:
    """Why ``path`` cannot be a case's transcript: not there, or not a regular file."""
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        return f"{field} not found: {named}"
    return str(NotARegularFile(named, field, file_kind(mode)))


def _read_text(path: Path, not_found: str, what: str, limit: int = MAX_DOCUMENT_BYTES) -> str:
    """The UTF-8 text of ``path``; :class:`SuiteError` with ``not_found`` or why it cannot be read."""
    try:
        return read_text(path, what, limit)
    except FileNotFoundError:
        raise SuiteError([not_found]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError([f"{path}: cannot read: {exc}"]) from None


def load_suite(path: str | Path, config_override: str | Path | None = None) -> Suite:
    """Read and validate a suite, its hook config and its cases; raise :class:`SuiteError`.

    ``config_override`` (``judge eval --config``) replaces the suite's ``config`` (a
    relative path is taken from the working folder, like any command-line path)."""
    suite_path = Path(path)
    src = str(suite_path)
    text = _read_text(suite_path, f"{src}: suite file not found", "suite file")
    data = _load_suite_yaml(text, src)
    if not isinstance(data, dict):
        raise SuiteError([f"{src}: a suite must be a mapping with config, event and cases"])
    try:
        doc = SuiteFile.model_validate(data)
    except ValidationError as exc:
        raise SuiteError(_problems(src, exc, SuiteFile)) from None
    base_dir = suite_path.resolve().parent
    try:
        config_path = resolve_path(base_dir, doc.config) if config_override is None else Path(config_override)
        # measured as written: a hook's calibration never makes it shadow in its own eval
        config = load_config(config_path).model_copy(update={"calibration": None})
    except ConfigError as exc:
        where = exc.source or (doc.config if config_override is None else str(config_override))
        raise SuiteError([f"{where}: {p}" for p in exc.problems]) from None
    cases_path = resolve_path(base_dir, doc.cases)
    cases_text = _read_text(
        cases_path, f"{src}: cases file not found: {cases_path}", "cases file", MAX_CASES_BYTES
    )
    cases, problems = parse_cases(cases_text, str(cases_path), doc.event, base_dir)
    if problems:
        raise SuiteError(problems)
    if not cases:
        raise SuiteError([f"{cases_path}: no cases"])
    return Suite(
        name=doc.name or suite_path.stem,
        path=suite_path,
        base_dir=base_dir,
        config=config,
        event=doc.event,
        cases=cases,
        repeats=doc.repeats,
        config_path=config_path,
        probes=doc.probes,
    )
