"""Calibrated enforcement: may a prompt hook act on its verdicts?

A prompt hook with a ``calibration:`` block (:class:`~judge.config.prompt_options.CalibrationPolicy`)
enforces only while its calibration file (``DIR/calibration.json``, written by
``judge eval --out DIR``: :mod:`judge.evaluation.calibration`) holds a record measured
for this hook — the SHA-256 of its prompt text as written in the configuration, and its
model as resolved (``provider:name``; a cascade's labels joined by ``" > "``) — that
meets every floor. The status (:class:`~judge.decision.HookCalibration`):

* ``missing`` — the file cannot be read (absent, not a regular file, too large, not a
  calibration file), or it holds no record for this hook's prompt and model;
* ``stale`` — no record matches, but one was measured at this hook's place (its event,
  level, custom agent and index) with another prompt or model: the hook changed since;
* ``below`` — the matching record has fewer cases than ``minCases``, or its kappa or
  block precision is under ``minKappa`` / ``minBlockPrecision`` (or undefined);
* ``ok`` — the hook enforces as written.

Anything but ``ok`` runs the hook as shadow (:meth:`judge.config.Config.hooks_for`): it
never blocks, rewrites, adds context or counts, and its result says why. Calibration
can only ever weaken a hook to shadow; it never makes one act.

When it is read: with the configuration (:func:`calibrated`, called by
:func:`judge.config.load_config` and the other loaders), never in the middle of a
decision. The service reads it at start-up (and for a custom agent when it is
registered or changed); ``judge run`` on every run; a Claude Code session keeps what it
found when the session started, like its configuration
(:mod:`judge.integrations.claude_code.pin`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge.decision import HookCalibration
from judge.files import FileTooLarge, NestedTooDeeply, NotARegularFile, load_json, read_text

if TYPE_CHECKING:
    from judge.config import Config, Hook

#: The file ``judge eval --out DIR`` writes.
FILE_NAME = "calibration.json"
#: The calibration file format this judge writes and reads.
FORMAT = 1
#: Largest calibration file read.
MAX_CALIBRATION_BYTES = 16 << 20


class Confusion(BaseModel):
    """The judge's verdicts against the labels (block is the positive class)."""

    tp: int = Field(ge=0, description="Labelled block, judged block.")
    fp: int = Field(ge=0, description="Labelled allow, judged block.")
    tn: int = Field(ge=0, description="Labelled allow, judged allow.")
    fn: int = Field(ge=0, description="Labelled block, judged allow.")


class CalibrationRecord(BaseModel):
    """How one prompt hook agreed with the labels of one suite, as ``judge eval`` measured it."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    event: str = Field(description="The event the hook is for (Stop, PreToolUse, ...).")
    index: int = Field(ge=0, description="Its index among that event's hooks of its level.")
    level: Literal["agent", "custom"] = Field(description="`agent` or `custom` (a custom agent's hook).")
    agent: str | None = Field(None, description="The custom agent, for a custom agent's hook.")
    prompt_sha256: str = Field(
        alias="promptSha256",
        pattern=r"^[0-9a-f]{64}$",
        description="SHA-256 of the hook's prompt text as written in the configuration (UTF-8).",
    )
    model: str = Field(
        description="The model as resolved (`provider:name`; a cascade's stages joined by ` > `)."
    )
    n: int = Field(ge=0, description="Judgements scored: labelled, with a verdict, without an error.")
    cases: int = Field(ge=0, description="Distinct labelled cases among them (what minCases counts).")
    errors: int = Field(0, ge=0, description="Labelled judgements of this hook that errored (not scored).")
    samples: int = Field(1, ge=1, description="The hook's `samples` when it was measured.")
    confusion: Confusion = Field(description="Its verdicts against the labels.")
    kappa: float | None = Field(
        description="Cohen's kappa of its verdicts with the labels (null when undefined)."
    )
    kappa_ci95: list[float] | None = Field(
        None,
        alias="kappaCi95",
        description="95 % interval of kappa: ± 1.96 standard errors (Fleiss, Cohen & Everitt "
        "1969), clipped to [-1, 1].",
    )
    block_precision: float | None = Field(
        alias="blockPrecision", description="Of its blocks, the share labelled block: tp / (tp + fp)."
    )
    block_precision_ci95: list[float] | None = Field(
        None, alias="blockPrecisionCi95", description="Wilson 95 % interval."
    )
    block_recall: float | None = Field(
        alias="blockRecall", description="Of the labelled blocks, the share it blocked: tp / (tp + fn)."
    )
    block_recall_ci95: list[float] | None = Field(None, alias="blockRecallCi95", description="Wilson 95 %.")
    allow_recall: float | None = Field(
        alias="allowRecall", description="Of the labelled allows, the share it allowed: tn / (tn + fp)."
    )
    allow_recall_ci95: list[float] | None = Field(None, alias="allowRecallCi95", description="Wilson 95 %.")
    suite: str = Field("", description="The suite's name.")
    suite_sha256: str = Field(
        alias="suiteSha256", description="SHA-256 of the suite file and its cases file, as measured."
    )
    judge_version: str = Field(alias="judgeVersion", description="The judge version that measured it.")
    created_at: str = Field(alias="createdAt", description="When it was measured (ISO 8601, UTC).")

    @property
    def place(self) -> str:
        """Where the measured hook was written (``hooks.Stop[0]``; see ``hook_place``)."""
        from judge.config.models import hook_place

        return hook_place(self.event, self.index, self.agent if self.level == "custom" else None)


class CalibrationFile(BaseModel):
    """``calibration.json``: the records of one eval run."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    format: Literal[1] = Field(1, description="The file format (1).")
    records: list[CalibrationRecord] = Field(default_factory=list, description="One per prompt hook judged.")


@dataclass(frozen=True)
class Source:
    """A calibration file as read: its text, or why it could not be read."""

    text: str | None
    problem: str | None = None


def file_problem(path: Path, exc: Exception) -> str:
    """Why a calibration file cannot be used, in words (never its content)."""
    if isinstance(exc, FileNotFoundError):
        return f"{path} does not exist (run judge eval --out {path.parent} to write it)"
    if isinstance(exc, NotARegularFile | FileTooLarge | IsADirectoryError):
        return str(exc) if not isinstance(exc, IsADirectoryError) else f"{path} is a directory"
    if isinstance(exc, UnicodeDecodeError):
        return f"{path} is not UTF-8 text"
    return f"cannot read {path}: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}"


def read_source(path: Path) -> Source:
    """The text of the calibration file at ``path`` (bounded, regular files only)."""
    try:
        return Source(read_text(path, "calibration file", MAX_CALIBRATION_BYTES))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return Source(None, file_problem(path, exc))


def parse_calibration(text: str, where: str) -> CalibrationFile:
    """A calibration file's text as a :class:`CalibrationFile`; ValueError with the located
    problem (``FILE: records[2].kappa: ...``) when it is not one."""
    try:
        data = load_json(text)
    except NestedTooDeeply:
        raise ValueError(f"{where}: the JSON is nested too deeply") from None
    except ValueError as exc:
        raise ValueError(f"{where}: not JSON: {str(exc).split(';')[0]}") from None
    try:
        return CalibrationFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]).lstrip(".")
        message = str(first["msg"]).removeprefix("Value error, ")
        raise ValueError(f"{where}: not a calibration file: {loc or '<root>'}: {message}") from None


def prompt_sha256(prompt: str) -> str:
    """The SHA-256 a record names a prompt by: of its text as written, UTF-8."""
    return hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()


def resolve_file(config: Config, name: str) -> Path:
    """Where a hook's ``calibration.file`` is: relative to the config file's folder (the
    working folder for a configuration built in memory)."""
    path = Path(name).expanduser()
    if path.is_absolute() or config.base_dir is None:
        return path
    return config.base_dir / path


def _floors_unmet(record: CalibrationRecord, hook: Hook) -> list[str]:
    policy = hook.calibration
    assert policy is not None
    unmet = []
    if record.cases < policy.min_cases:
        unmet.append(f"{record.cases} cases < minCases {policy.min_cases}")
    if record.kappa is None or record.kappa < policy.min_kappa:
        shown = "undefined" if record.kappa is None else f"{record.kappa:.3f}"
        unmet.append(f"kappa {shown} < minKappa {policy.min_kappa:g}")
    if record.block_precision is None or record.block_precision < policy.min_block_precision:
        shown = "undefined" if record.block_precision is None else f"{record.block_precision:.3f}"
        unmet.append(f"block precision {shown} < minBlockPrecision {policy.min_block_precision:g}")
    return unmet


def _status(
    status: Literal["missing", "stale", "below", "ok"],
    reason: str,
    file: str,
    record: CalibrationRecord | None,
) -> HookCalibration:
    if record is None:
        return HookCalibration(status=status, reason=reason, file=file)
    return HookCalibration(
        status=status,
        reason=reason,
        file=file,
        cases=record.cases,
        kappa=record.kappa,
        blockPrecision=record.block_precision,
        blockRecall=record.block_recall,
        measuredAt=record.created_at,
    )


def check_hook(hook: Hook, place: str, label: str | None, found: CalibrationFile | str) -> HookCalibration:
    """The calibration status of ``hook`` written at ``place``, judged by ``label`` (None:
    its model does not resolve), against its file ``found`` (or why it could not be read)."""
    policy = hook.calibration
    assert policy is not None and hook.prompt is not None
    file = policy.file
    if isinstance(found, str):
        return _status("missing", found, file, None)
    sha = prompt_sha256(hook.prompt)
    matching = [r for r in found.records if r.prompt_sha256 == sha and r.model == label]
    if matching:  # the record measured at this place first, then the newest
        record = max(matching, key=lambda r: (r.place == place, r.created_at))
        unmet = _floors_unmet(record, hook)
        if unmet:
            return _status("below", "below its floors: " + "; ".join(unmet), file, record)
        reason = (
            f"measured on {record.cases} cases: kappa {record.kappa:.3f}, "
            f"block precision {record.block_precision:.3f}"
        )
        return _status("ok", reason, file, record)
    here = [r for r in found.records if r.place == place]
    if here:
        record = max(here, key=lambda r: r.created_at)
        changed = []
        if record.prompt_sha256 != sha:
            changed.append("its prompt changed")
        if record.model != label:
            changed.append(f"its model changed (measured {record.model}, now {label or 'unresolved'})")
        return _status("stale", f"{' and '.join(changed)} since {file} was measured", file, record)
    model = label or "its model (which does not resolve)"
    return _status("missing", f"{file} has no record for this hook's prompt with {model}", file, None)


def calibrated(
    config: Config,
    sources: Mapping[str, Source] | None = None,
    env: Mapping[str, str] | None = None,
    agent: str | None = None,
) -> Config:
    """``config`` with the calibration of its calibrated hooks found (``Config.calibration``).

    ``sources`` maps each calibration file (:func:`calibration_files`) to its text; the
    files are read from disk when not given. ``env`` resolves the models (default: this
    process's environment). ``agent``: only that custom agent's hooks are (re)assessed
    (a custom agent registered with the service), the others kept as they were found.
    """
    from judge.llm.tiers import hook_model_label

    env = os.environ if env is None else env
    found = dict(config.calibration or {}) if agent is not None else {}
    parsed: dict[str, CalibrationFile | str] = {}
    for place, hook, _ in calibrated_hooks(config, agent):
        assert hook.calibration is not None
        path = resolve_file(config, hook.calibration.file)
        key = str(path)
        if key not in parsed:
            source = sources.get(key) if sources is not None else read_source(path)
            parsed[key] = _parsed(source, path)
        try:
            label: str | None = hook_model_label(hook.model, config.models, env)
        except ValueError:
            label = None
        found[place] = check_hook(hook, place, label, parsed[key])
    return config.model_copy(update={"calibration": found})


def _parsed(source: Source | None, path: Path) -> CalibrationFile | str:
    if source is None:
        return f"{path} was not read when this session's configuration was pinned"
    if source.text is None:
        return source.problem or f"cannot read {path}"
    try:
        return parse_calibration(source.text, str(path))
    except ValueError as exc:
        return str(exc)


def calibrated_hooks(config: Config, agent: str | None = None) -> list[tuple[str, Hook, str]]:
    """(place, hook, event) of every hook with a ``calibration:`` block (``agent``: only that
    custom agent's)."""
    from judge.config import EVENTS
    from judge.config.models import hook_place

    out: list[tuple[str, Hook, str]] = []
    for event in EVENTS:
        if agent is None:
            out += [
                (hook_place(event, i), h, event)
                for i, h in enumerate(config.hooks.for_event(event))
                if h.calibration is not None
            ]
        for name, custom in config.custom_agents.items():
            if agent is not None and name != agent:
                continue
            out += [
                (hook_place(event, i, name), h, event)
                for i, h in enumerate(custom.hooks.for_event(event))
                if h.calibration is not None
            ]
    return out


def calibration_files(config: Config, agent: str | None = None) -> list[Path]:
    """The calibration files ``config``'s hooks name, resolved, each once, sorted."""
    paths = {
        resolve_file(config, hook.calibration.file)
        for _, hook, _ in calibrated_hooks(config, agent)
        if hook.calibration is not None
    }
    return sorted(paths)


def status_lines(config: Config) -> list[str]:
    """One line per calibrated hook: where, its status and why (what ``judge validate``,
    ``judge serve`` and ``judge claude-code install`` show)."""
    prefix = config.hooks_key.removesuffix("hooks")
    lines = []
    for place, _, _ in calibrated_hooks(config):
        found = (config.calibration or {}).get(place)
        if found is None:
            continue
        where = prefix + place
        acts = "enforces" if found.status == "ok" else "runs as shadow"
        lines.append(f"{where}: calibration {found.status}: {acts}: {found.reason}")
    return lines
