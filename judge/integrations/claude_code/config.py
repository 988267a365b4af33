"""Which configuration a ``judge claude-code`` call is judged by.

A Claude Code session keeps the configuration it started with, with the calibration
files its hooks name (:mod:`~judge.integrations.claude_code.pin`): ``SessionStart`` pins them as they are;
later calls load the pinned text when the file changed, broke or went away, and the
first call after each change tells the user. A configuration that loads also refreshes
the fast path's config index (:mod:`~judge.integrations.claude_code.fast_path`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from judge.config import Config, HookSet, config_from_text, read_config_text
from judge.errors import ConfigError
from judge.hooks.calibration import Source, calibrated, calibration_files, read_source
from judge.integrations.claude_code.answer import warn
from judge.integrations.claude_code.fast_path import default_state_path, write_index
from judge.integrations.claude_code.pin import (
    FOLDER,
    SessionConfig,
    bundle,
    keep_copy,
    nested,
    read_pin,
    repin,
    session_config,
    unbundle,
    write_pin,
)
from judge.integrations.claude_code.pin import enabled as pins_enabled
from judge.integrations.claude_code.protocol import ClaudeCodeInput
from judge.validation import runnable

_UNPINNED = "cannot pin the configuration in {folder}: this session is judged by {config} as it is"
_NO_PIN = (
    "this session had no pinned configuration (its SessionStart did not pin one, or the pin "
    "was removed from {folder}); it is judged by {config} as it is now, pinned from here on"
)


def write_config_index(
    state_path: Path, config_path: str, config: Config, sha: str, also: list[str] | None = None
) -> None:
    """Let later calls skip loading ``config`` when no hook can match
    (see :mod:`~judge.integrations.claude_code.fast_path`); ``also``: the calibration files
    whose change makes the index stale too."""
    from judge.config import EVENTS

    def matchers(hooks: HookSet) -> dict[str, list[str | None]]:
        return {e: [h.matcher for h in hooks.for_event(e)] for e in EVENTS if hooks.for_event(e)}

    agents = {name: matchers(agent.hooks) for name, agent in config.custom_agents.items()}
    write_index(str(state_path), config_path, matchers(config.hooks), agents, sha, also or [])


def _bundled(config_path: str, text: str) -> tuple[Config, str, list[str]]:
    """The file's ``text`` loaded (not yet checked) with the calibration files it names
    read once: the configuration judged by them, the text to pin (:func:`pin.bundle`)
    and the files. ConfigError for an invalid configuration."""
    config = parsed(text, config_path)  # (its calibration is found again below, from the files read now)
    paths = calibration_files(config)
    if not paths:
        return config, text, []
    sources = {str(path): read_source(path) for path in paths}
    pinned = bundle(text, {key: (found.text, found.problem) for key, found in sources.items()})
    return calibrated(config, sources), pinned, list(sources)


def _pinned(config_path: str, text: str) -> Config:
    """A pinned text (:func:`pin.unbundle`) loaded with its own calibration files' texts."""
    body, files = unbundle(text)
    sources = {path: Source(found, problem) for path, (found, problem) in files.items()}
    return config_from_text(body, config_path, calibration=sources)


def _keep(state_path: Path, config_path: str, config: Config, pinned: str, also: list[str]) -> str:
    """Keep ``pinned`` by its SHA-256 for pinning and index ``config`` for the fast path; the SHA."""
    sha = keep_copy(str(state_path), pinned)
    write_config_index(state_path, config_path, config, sha, also)
    return sha


#: Configurations parsed per (real path, path, text): a process answering many events
#: (a worker of the resident judge) parses each text once; checks still run every time.
_parsed: dict[tuple[str, str, str], Config] = {}
PARSED_KEPT = 8


def parsed(text: str, config_path: str) -> Config:
    """``config_from_text(text, config_path)``, remembered (it depends on nothing else:
    the path's real location included in the key)."""
    key = (os.path.realpath(config_path), config_path, text)
    config = _parsed.get(key)
    if config is None:
        config = config_from_text(text, config_path)
        if len(_parsed) >= PARSED_KEPT:
            _parsed.clear()
        _parsed[key] = config
    return config


def _load_current(state_path: Path, config_path: str, text: str) -> tuple[Config, str]:
    """The file's ``text`` loaded and checked (templates and models too), kept by its
    SHA-256 (with its calibration) for pinning and indexed for the fast path; the
    configuration and the SHA."""
    config, pinned, also = _bundled(config_path, text)
    runnable(config)
    return config, _keep(state_path, config_path, config, pinned, also)


def session_configuration(
    config_path: str, state_path: Path, session_id: str | None, expect_pin: bool = False
) -> tuple[Config, str | None]:
    """The configuration this call is judged by, and a note for the user (or None).

    ``expect_pin`` (``--pinned``): SessionStart pinned every session, so a session without
    a pin lost it (or its SessionStart failed): the note says so.

    A :class:`ConfigError` when neither the file nor the session's pin gives a valid
    configuration. Pins that cannot be read or written never stop the call: it is then
    judged with the file as it is, and stderr says why.
    """
    state = str(state_path)
    loaded: tuple[Config, str, list[str]] | None = None
    unreadable: ConfigError | None = None
    try:
        current: str | None = read_config_text(config_path)
    except ConfigError as exc:
        current, unreadable = None, exc
    if current is not None:
        try:
            loaded = _bundled(config_path, current)
            current = loaded[1]  # what is pinned: the text with its calibration files
        except ConfigError as exc:
            unreadable = exc  # an invalid file: its raw text differs from any pin
    shown = f"{config_path} (or a calibration file it names)" if loaded and loaded[2] else None
    try:
        chosen = session_config(state, session_id, config_path, current, shown)
    except Exception as exc:  # (a damaged pin folder): never worse than no pinning
        warn(f"the session's pin is unusable ({type(exc).__name__}: {exc}); using {config_path}")
        chosen = SessionConfig(None)
    if chosen.text is not None:
        return runnable(_pinned(config_path, chosen.text)), chosen.note
    if chosen.note:
        warn(chosen.note)
    if loaded is None:
        raise unreadable or ConfigError([f"cannot read {config_path}"], config_path)
    config = runnable(loaded[0])
    sha = _keep(state_path, config_path, config, loaded[1], loaded[2])
    note = chosen.note
    if chosen.first and session_id:
        # A run inside another session writes no pin (that would pin the edited file for
        # the session it runs in); it still says what it found.
        if not nested() and not write_pin(state, session_id, config_path, sha):
            unpinned = _UNPINNED.format(folder=Path(state).parent, config=config_path)
            warn(unpinned)
            note = note or (unpinned if expect_pin else None)  # every call: nothing is kept
        elif expect_pin and note is None:
            note = _NO_PIN.format(folder=Path(state).parent / FOLDER, config=config_path)
            warn(note)
    return config, note


def start_session(args: argparse.Namespace, hook_input: ClaudeCodeInput) -> None:
    """SessionStart: pin the configuration as it is when Claude Code starts or resumes the
    session (a resume is a new start: Claude Code reads its own settings again too, and
    the next judged call says when the configuration changed meanwhile). Prints nothing
    (SessionStart's output would reach the model); problems go to stderr, and the
    session's first judged call reports an invalid configuration."""
    config_path = getattr(args, "config", None) or os.environ.get("JUDGE_CONFIG")
    session = hook_input.session_id
    if not config_path or not session or not pins_enabled():
        return
    state_arg = getattr(args, "state", None)
    state_path = Path(state_arg).expanduser() if state_arg else Path(default_state_path())
    state = str(state_path)
    source = getattr(hook_input, "source", None)
    try:
        pin = read_pin(state, session, config_path)
        if nested() and source != "startup":
            warn("a Claude Code started inside another session: this session keeps its pin")
            return
        if pin is not None and source != "resume":
            return  # /clear or a compaction within the running session: it keeps its configuration
        if pin is None and source == "compact":
            return  # a running session whose pin is gone: its next judged call says so
        _, sha = _load_current(state_path, config_path, read_config_text(config_path))
        pinned = (
            repin(state, session, config_path, sha)
            if source == "resume"
            else write_pin(state, session, config_path, sha)
        )
    except ConfigError as exc:
        warn(f"invalid judge configuration {config_path}: {exc.problems[0] if exc.problems else exc}")
        return
    except Exception as exc:  # never a traceback at SessionStart
        warn(f"cannot pin the configuration ({type(exc).__name__}: {exc})")
        return
    if not pinned:
        warn(_UNPINNED.format(folder=state_path.parent, config=config_path))
