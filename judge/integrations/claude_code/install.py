"""``judge claude-code install``: register judge in Claude Code's settings.json.

Like ``pre-commit install``: it merges hook entries into the settings file of a scope —
``project`` (``.claude/settings.json``), ``local`` (``.claude/settings.local.json``) or
``user`` (``~/.claude/settings.json``, or ``$CLAUDE_CONFIG_DIR/settings.json``) — for
exactly the Claude Code events the judge configuration needs:

* the events come from the configuration (agent level and custom agents); PostToolUse
  hooks also register ``PostToolUseFailure`` and PreToolUse hooks ``PreSkillShellCommand``
  (a skill's shell command, run without the Bash tool), and ``SessionStart`` pins the
  configuration a session is judged by (:mod:`~judge.integrations.claude_code.pin`);
  nothing else is ever registered, and judge entries found under events judge cannot
  serve (e.g. ``WorktreeCreate``) are removed;
* a tool event's Claude Code ``matcher`` covers the judge hooks' matchers (an exact list
  when they are plain names, an anchored regex otherwise, ``*`` when in doubt — judge's
  own matcher still decides which judge hooks run);
* judge's deadline (``--timeout``) is what the event's hooks may take (the sum for tool
  events, whose hooks run one after another; the longest for Stop events, whose hooks run
  concurrently) plus a margin, and Claude Code's ``timeout`` sits above it;
* a PreToolUse entry whose judge hooks fail closed (``failMode: block``, the default there)
  gets ``"onFailure": "block"``, so Claude Code denies the call when judge cannot answer
  at all (its interpreter gone, a crash);
* with ``--http URL`` the events whose hooks fail open get ``type: "http"`` entries posting
  to that ``judge serve`` (``POST /api/v2/claude-code``, the token from
  ``$JUDGE_API_TOKEN``); PreToolUse and every event with a hook that fails closed keep
  their command entries (:func:`http_serves`);
* the command is ``<python> -m judge claude-code --config <path> --timeout <s> --pinned
  --resident`` with an absolute interpreter path and a quoted configuration path
  (``$CLAUDE_PROJECT_DIR``-relative for a configuration inside the project); ``--resident``
  hands events to the resident judge (:mod:`~judge.integrations.claude_code.relay`), left
  out with ``--no-resident``.

Running it again changes nothing; the user's other hooks are kept as they are; the file is
only written when it changes (atomically). ``--dry-run`` prints a unified diff instead;
``--uninstall`` removes judge's entries only.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.config import STOP_EVENTS, TOOL_EVENTS, Config, Hook, load_config
from judge.errors import ConfigError
from judge.hooks.calibration import status_lines
from judge.integrations.claude_code.answer import Answer
from judge.integrations.claude_code.http_hooks import http_handler, http_serves, is_http_handler
from judge.integrations.claude_code.protocol import (
    CLAUDE_CODE_EVENTS,
    HANDLED_EVENTS,
    SESSION_START,
    block_cap_warnings,
)
from judge.integrations.claude_code.settings_file import (
    InstallError,
    read_settings,
    settings_text,
    too_deep,
    write_atomically,
)

DEFAULT_CONFIG = Path(".claude") / "judge.yaml"
#: Seconds judge keeps for itself beyond its hooks' timeouts (transcript, state, answer).
JUDGE_MARGIN = 5
#: Seconds Claude Code's timeout sits above judge's own (interpreter start, unwinding).
CLAUDE_CODE_MARGIN = 10
MAX_JUDGE_TIMEOUT = 3600
#: judge's deadline at SessionStart (it only loads and pins the configuration)
SESSION_START_TIMEOUT = 15
_JUDGE_COMMAND = re.compile(r"(?:^|[\s/\"'])(?:judge|-m\s+judge)[\"']?\s+claude-code(?:\s|$)")
_PLAIN_NAMES = re.compile(r"^[A-Za-z0-9_]+(?:\|[A-Za-z0-9_]+)*$")


@dataclass(frozen=True)
class Entry:
    """One hook entry judge needs in Claude Code's settings."""

    event: str
    matcher: str | None
    judge_timeout: int
    command: str
    #: Claude Code blocks the call when judge itself cannot answer (see ``on_failure``)
    block_on_failure: bool = False
    #: an http hook posting to ``judge serve`` at this URL instead of the command
    url: str | None = None

    @property
    def claude_code_timeout(self) -> int:
        return self.judge_timeout + CLAUDE_CODE_MARGIN

    def group(self) -> dict[str, Any]:
        handler: dict[str, Any] = {
            "type": "command",
            "command": self.command,
            "timeout": self.claude_code_timeout,
        }
        if self.url is not None:
            handler = http_handler(self.url, self.judge_timeout, self.claude_code_timeout)
        if self.block_on_failure:
            handler["onFailure"] = "block"
        out: dict[str, Any] = {"matcher": self.matcher} if self.matcher is not None else {}
        out["hooks"] = [handler]
        return out


def settings_path(scope: str, project: Path) -> Path:
    if scope == "project":
        return project / ".claude" / "settings.json"
    if scope == "local":
        return project / ".claude" / "settings.local.json"
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".claude") / "settings.json"


def is_judge_handler(handler: Any) -> bool:
    """Whether a settings hook handler runs ``judge claude-code`` or posts to ``judge
    serve``'s Claude Code endpoint (ours to replace/remove)."""
    if is_http_handler(handler):
        return True
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    return isinstance(command, str) and _JUDGE_COMMAND.search(command) is not None


def _hooks_by_event(config: Config) -> dict[str, list[Hook]]:
    """Every hook per event, agent level and custom agents', as they run (a shadow agent's
    hooks are shadow hooks). Calibration is left out: a record written after the install
    lets a calibrated hook enforce, and its failMode with it."""
    written = config.model_copy(update={"calibration": None})
    out = {
        event: [hook for _, _, hook in written.every_hook_for(event)]
        for event in ("Stop", "SubagentStop", "PreToolUse", "PostToolUse")
    }
    return {event: hooks for event, hooks in out.items() if hooks}


def claude_code_matcher(hooks: list[Hook]) -> str | None:
    """A Claude Code matcher selecting every tool one of ``hooks`` matches (``None``: none)."""
    patterns = sorted({h.matcher for h in hooks if h.matcher})
    if not patterns:
        return None
    if "*" in patterns:
        return "*"
    if all(_PLAIN_NAMES.match(p) for p in patterns):
        names = sorted({name for p in patterns for name in p.split("|")})
        return "|".join(names)
    if any("(?" in p or "\\" in p for p in patterns):
        return "*"  # Python-only regex syntax may not mean the same in JavaScript
    return "^(?:" + "|".join(f"(?:{p})" for p in patterns) + ")$"


def judge_timeout(event: str, hooks: list[Hook]) -> int:
    """judge's own deadline for ``event``: its hooks' time (sum or max) plus a margin."""
    times = [h.timeout for h in hooks]
    spent = max(times) if event in STOP_EVENTS else sum(times)
    return min(spent + JUDGE_MARGIN, MAX_JUDGE_TIMEOUT)


def hook_command(
    config_path: Path, project: Path, scope: str, timeout: int, rewrite: str | None, resident: bool = True
) -> str:
    python = shlex.quote(sys.executable)
    config_arg = shlex.quote(str(config_path))
    if scope in ("project", "local"):
        try:
            relative = config_path.relative_to(project)
        except ValueError:
            pass
        else:
            config_arg = '"$CLAUDE_PROJECT_DIR"/' + shlex.quote(relative.as_posix())
    command = f"{python} -m judge claude-code --config {config_arg} --timeout {timeout} --pinned"
    if resident:  # events go to the resident judge (relay.py), in process when it is not there
        command += " --resident"
    return f"{command} --rewrite {rewrite}" if rewrite else command


def wanted_entries(
    config: Config,
    config_path: Path,
    project: Path,
    scope: str,
    timeout: float | None = None,
    rewrite: str | None = None,
    resident: bool = True,
    http: str | None = None,
) -> list[Entry]:
    """The hook entries the configuration needs, in Claude Code event order; with
    ``http`` (a ``judge serve`` URL), http hooks for the events :func:`http_serves`."""
    entries: list[Entry] = []
    for event, hooks in _hooks_by_event(config).items():
        matcher: str | None = None
        if event in TOOL_EVENTS:
            matcher = claude_code_matcher(hooks)
            if matcher is None:
                continue  # no judge hook of this event matches any tool
            hooks = [h for h in hooks if h.matcher]
        seconds = int(timeout) if timeout is not None else judge_timeout(event, hooks)
        command = hook_command(config_path, project, scope, seconds, rewrite, resident)
        # A PreToolUse policy that fails closed stays closed when judge cannot even answer
        # (a missing interpreter, a crash): Claude Code's onFailure (2.1.295+; older versions
        # ignore the key) then counts the failure as a block.
        closed = event == "PreToolUse" and any(h.fails_closed(event) for h in hooks)
        for cc_event in CLAUDE_CODE_EVENTS[event]:
            if cc_event not in HANDLED_EVENTS:
                raise InstallError(f"refusing to register {cc_event}: judge cannot serve it")
            url = http if http is not None and http_serves(cc_event, hooks) else None
            entries.append(Entry(cc_event, matcher, seconds, command, block_on_failure=closed, url=url))
    if any(entry.url is None for entry in entries):  # the session keeps its configuration (.pin)
        command = hook_command(config_path, project, scope, SESSION_START_TIMEOUT, None, resident)
        entries.insert(0, Entry(SESSION_START, None, SESSION_START_TIMEOUT, command))
    return entries


def merge(settings: dict[str, Any], entries: list[Entry]) -> tuple[dict[str, Any], list[str]]:
    """``settings`` with judge's entries replaced by ``entries``; and notes for the user.

    Every other hook stays where it was; judge's entries take the place of the first
    judge entry of their event (else they are appended).
    """
    out = copy.deepcopy(settings)
    notes: list[str] = []
    hooks = out.get("hooks")
    if hooks is None:
        hooks = {}
    if not isinstance(hooks, dict):
        raise InstallError('the settings\' "hooks" is not a JSON object; fix it by hand first')
    slots: dict[str, int] = {}
    wanted = {entry.event for entry in entries}
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            if event in wanted:  # Claude Code wants a list of matcher groups here
                raise InstallError(
                    f'the settings\' "hooks.{event}" is not a JSON array of matcher groups; '
                    "fix it by hand first"
                )
            continue
        kept: list[Any] = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not any(is_judge_handler(h) for h in handlers):
                kept.append(group)
                continue
            slots.setdefault(event, len(kept))
            others = [h for h in handlers if not is_judge_handler(h)]
            if others:
                kept.append({**group, "hooks": others})
        if event not in HANDLED_EVENTS and event != SESSION_START and event in slots:
            notes.append(f"removed judge from {event}: judge cannot serve that event")
        if kept:
            hooks[event] = kept
        elif event in slots:
            del hooks[event]
    for entry in entries:
        groups = hooks.setdefault(entry.event, [])
        at = slots.get(entry.event, len(groups))
        groups.insert(at, entry.group())
        slots[entry.event] = at + 1
    if hooks:
        out["hooks"] = hooks
    else:
        out.pop("hooks", None)
    return out, notes


def _refuse_errors(config: Config, config_path: Path, force: bool, answer: Answer) -> None:
    """Refuse a configuration ``judge validate`` finds errors in (an unknown tier, a broken
    template, a missing include): registered, it would make judge deny every tool call its
    PreToolUse hooks police, with "judge policy check could not run". ``force`` registers
    it anyway, saying so."""
    from judge.validation import check_config

    errors = [f"  {config_path}: {f}" for f in check_config(config) if f.severity == "error"]
    if not errors:
        return
    if not force:
        raise InstallError(
            f"refusing to register {config_path}: it has {len(errors)} error(s), and Claude Code would "
            "run judge with it (a PreToolUse policy that cannot run denies every call it polices):\n"
            + "\n".join(errors)
            + f"\nfix them (judge validate {shlex.quote(str(config_path))}) or pass --force; "
            "nothing was changed"
        )
    answer.error(f"warning: registering {config_path} with {len(errors)} error(s) (--force):")
    for line in errors:
        answer.error(line)


def install(args: argparse.Namespace, project: Path, answer: Answer) -> None:
    path = settings_path(args.scope, project)
    entries: list[Entry] = []
    if not args.uninstall:
        raw = getattr(args, "install_config", None) or str(project / DEFAULT_CONFIG)
        config_path = (project / Path(raw).expanduser()).resolve()
        if not config_path.is_file():
            raise InstallError(f"no judge configuration at {config_path} (pass --config FILE)")
        try:
            config = load_config(config_path)
        except ConfigError as exc:
            lines = "\n".join(f"  {p}" for p in exc.problems)
            raise InstallError(f"invalid judge configuration {config_path}:\n{lines}") from None
        _refuse_errors(config, config_path, bool(getattr(args, "force", False)), answer)
        for warning in block_cap_warnings(config):
            answer.error(f"warning: {warning}")
        for line in status_lines(config):  # as found now; each session keeps what it starts with
            answer.error(line)
        timeout = getattr(args, "install_timeout", None)
        rewrite = getattr(args, "install_rewrite", None)
        resident = getattr(args, "install_resident", True)
        http = getattr(args, "install_http", None)
        entries = wanted_entries(config, config_path, project, args.scope, timeout, rewrite, resident, http)
        if not entries:
            answer.error(f"{config_path} has no hooks Claude Code can run; registering nothing")
    before, settings = read_settings(path)
    try:  # copying a value nested hundreds deep (it parsed) can still exceed the recursion limit
        merged, notes = merge(settings, entries)
        after = settings_text(merged)
        unchanged = merged == settings
    except RecursionError:
        raise InstallError(too_deep(path)) from None
    except ValueError:  # NaN, or a number past a double's range (1e400): JSON cannot say it
        raise InstallError(
            f"{path} holds a number JSON cannot keep (NaN, Infinity or one like 1e400); "
            "fix it by hand first, nothing was changed"
        ) from None
    for note in notes:
        answer.error(note)
    if unchanged:
        answer.print(f"{path}: already up to date")
        return
    if args.dry_run:
        diff = difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), str(path), str(path)
        )
        answer.stdout += "".join(diff)
        return
    write_atomically(path, after)
    if args.uninstall:
        answer.print(f"{path}: removed judge's hook entries")
    else:
        events = ", ".join(dict.fromkeys(e.event for e in entries))
        answer.print(f"{path}: judge registered for {events}")


def install_answer(args: argparse.Namespace, project: Path) -> Answer:
    """``judge claude-code install`` in ``project``: exit code 0 done, 1 refused (the reason
    on stderr, the settings untouched)."""
    answer = Answer()
    try:
        install(args, project, answer)
    except (InstallError, OSError) as exc:
        answer.error(f"judge claude-code install: {exc}")
        answer.code = 1
    return answer
