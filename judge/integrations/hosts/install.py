"""``judge codex|gemini|copilot|cursor install``: register judge in the host's own hooks file.

As ``judge claude-code install`` does for Claude Code: the entries come from the judge
configuration (agent level and custom agents) - only the host events that judge's Stop,
SubagentStop, PreToolUse and PostToolUse hooks need (:attr:`Dialect.host_events`), a tool
event's matcher covering the judge hooks' matchers; judge's deadline (``--timeout``) is
what the event's hooks may take plus a margin, and the host's timeout sits above it. The
command is ``<python> -m judge <host> --config <absolute path> --timeout <s>``.

The file is the host's (:meth:`Dialect.settings_file`): ``user`` or ``project`` scope.
Everything else in it is kept - other hooks, other settings (Gemini keeps auth and model
there) - and judge's entries replace judge's earlier ones in place; ``--uninstall``
removes judge's entries only; ``--dry-run`` prints a unified diff. Codex also needs a trust
record per hook in ``config.toml`` (:mod:`.trust`), written (and moved for the user's own
hooks) in the same step. Per host:

* Cursor's stop entries get ``loop_limit`` (judge's highest ``maxRejections``, else
  Cursor's default 5), and preToolUse entries whose hooks fail closed ``failClosed: true``;
* Copilot ends a turn after 8 Stop blocks: a ``maxRejections`` above 9 is warned about.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import os
import re
import shlex
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.config import STOP_EVENTS, TOOL_EVENTS, Config, Hook, load_config
from judge.errors import ConfigError
from judge.integrations.claude_code.answer import Answer
from judge.integrations.claude_code.install import claude_code_matcher, judge_timeout
from judge.integrations.claude_code.settings_file import (
    InstallError,
    read_settings,
    settings_text,
    write_atomically,
)
from judge.integrations.hosts.dialect import Dialect

#: Seconds the host's timeout sits above judge's own (interpreter start, unwinding).
HOST_MARGIN = 10
_PLAIN_NAMES = re.compile(r"^[A-Za-z0-9_]+(?:\|[A-Za-z0-9_]+)*$")


@dataclass(frozen=True)
class HostEntry:
    """One entry judge needs in the host's hooks file."""

    host_event: str
    matcher: str | None
    handler: dict[str, Any]


def judge_pattern(dialect: Dialect) -> re.Pattern[str]:
    """What a command running ``judge <host>`` looks like (ours to replace or remove)."""
    return re.compile(rf"(?:^|[\s/\"'])(?:judge|-m\s+judge)[\"']?\s+{re.escape(dialect.name)}(?:\s|$)")


def is_judge(dialect: Dialect, handler: Any) -> bool:
    if not isinstance(handler, dict):
        return False
    command = handler.get("command", handler.get("bash"))
    return isinstance(command, str) and judge_pattern(dialect).search(command) is not None


def judge_command(dialect: Dialect, config_path: Path, timeout: int, rewrite: str | None) -> str:
    python = shlex.quote(sys.executable)
    command = f"{python} -m judge {dialect.name} --config {shlex.quote(str(config_path))} --timeout {timeout}"
    return f"{command} --rewrite {rewrite}" if rewrite else command


def host_matcher(dialect: Dialect, hooks: list[Hook]) -> str | None:
    """The entry's matcher: one selecting every tool a judge hook matches (judge's own
    matcher still decides which hooks run). Cursor's matcher semantics are not documented
    beyond names joined with ``|``: anything else runs the entry for every tool."""
    matcher = claude_code_matcher(hooks)
    if dialect.flat and matcher is not None and not _PLAIN_NAMES.match(matcher):
        return "*"
    return matcher


def _hooks_by_event(config: Config) -> dict[str, list[Hook]]:
    out = {
        event: [hook for _, _, hook in config.every_hook_for(event)]
        for event in ("Stop", "SubagentStop", "PreToolUse", "PostToolUse")
    }
    return {event: hooks for event, hooks in out.items() if hooks}


def wanted_entries(
    dialect: Dialect, config: Config, config_path: Path, timeout: float | None, rewrite: str | None
) -> list[HostEntry]:
    """The entries the configuration needs, in judge event order."""
    entries: list[HostEntry] = []
    for event, hooks in _hooks_by_event(config).items():
        matcher: str | None = None
        if event in TOOL_EVENTS:
            matcher = host_matcher(dialect, hooks)
            if matcher is None:
                continue  # no judge hook of this event matches any tool
            hooks = [h for h in hooks if h.matcher]
        seconds = int(timeout) if timeout is not None else judge_timeout(event, hooks)
        command = judge_command(dialect, config_path, seconds, rewrite)
        closed = event == "PreToolUse" and any(h.fails_closed(event) for h in hooks)
        loops = None
        if dialect.flat and event in STOP_EVENTS:
            limits = [h.max_rejections for h in hooks if h.type == "prompt"]
            loops = max(limits) if limits else dialect.block_cap
        host_timeout = (seconds + HOST_MARGIN) * dialect.timeout_scale
        for host_event in dialect.host_events.get(event, ()):
            handler = dialect.handler(command, host_timeout, closed=closed, loops=loops)
            entries.append(HostEntry(host_event, matcher if event in TOOL_EVENTS else None, handler))
    return entries


def _is_judge_item(dialect: Dialect, item: Any) -> tuple[bool, Any]:
    """(whether a list item holds judge, the item without judge's handlers or None)."""
    if dialect.flat:
        return (True, None) if is_judge(dialect, item) else (False, item)
    handlers = item.get("hooks") if isinstance(item, dict) else None
    if not isinstance(handlers, list) or not any(is_judge(dialect, h) for h in handlers):
        return False, item
    others = [h for h in handlers if not is_judge(dialect, h)]
    return True, ({**item, "hooks": others} if others else None)


def _item(dialect: Dialect, entry: HostEntry) -> dict[str, Any]:
    if dialect.flat:
        return {**entry.handler, **({"matcher": entry.matcher} if entry.matcher else {})}
    group: dict[str, Any] = {"matcher": entry.matcher} if entry.matcher is not None else {}
    group["hooks"] = [entry.handler]
    return group


def merge(
    dialect: Dialect, document: dict[str, Any], entries: list[HostEntry]
) -> tuple[dict[str, Any], list[str]]:
    """``document`` with judge's entries replaced by ``entries`` (each in the place of the
    first judge entry of its event, else appended); every other entry kept in order."""
    out = copy.deepcopy(document) if document else dict(dialect.preamble)
    notes: list[str] = []
    hooks = out.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError('the file\'s "hooks" is not a JSON object; fix it by hand first')
    slots: dict[str, int] = {}
    wanted = {entry.host_event for entry in entries}
    served = {e for events in dialect.host_events.values() for e in events}
    for event in list(hooks):
        items = hooks[event]
        if not isinstance(items, list):
            if event in wanted:
                raise InstallError(f'the file\'s "hooks.{event}" is not a JSON array; fix it by hand first')
            continue
        kept: list[Any] = []
        for item in items:
            judge, rest = _is_judge_item(dialect, item)
            if judge:
                slots.setdefault(event, len(kept))
            if rest is not None:
                kept.append(rest)
        if event not in served and event in slots:
            notes.append(f"removed judge from {event}: judge cannot serve that event")
        if kept:
            hooks[event] = kept
        elif event in slots:
            del hooks[event]
    for entry in entries:
        items = hooks.setdefault(entry.host_event, [])
        at = slots.get(entry.host_event, len(items))
        items.insert(at, _item(dialect, entry))
        slots[entry.host_event] = at + 1
    if hooks:
        out["hooks"] = hooks
    else:
        out.pop("hooks", None)
    return out, notes


def cap_warnings(dialect: Dialect, config: Config) -> list[str]:
    """Prompt Stop hooks whose ``maxRejections`` the host's own cap makes unreachable."""
    cap = dialect.block_cap
    if cap is None or dialect.flat:  # Cursor's cap is the loop_limit judge writes
        return []
    return [
        f"{event} hook maxRejections {hook.max_rejections} is above {dialect.title}'s cap of {cap} "
        "Stop blocks in a row; the turn ends at the cap first"
        for event in STOP_EVENTS
        for _, _, hook in config.every_hook_for(event)
        if hook.type == "prompt" and hook.max_rejections > cap + 1
    ]


def _diff(path: Path, before: str, after: str) -> str:
    lines = difflib.unified_diff(before.splitlines(True), after.splitlines(True), str(path), str(path))
    return "".join(lines)


def _codex_trust(
    dialect: Dialect, path: Path, before: dict[str, Any], after: dict[str, Any], env: Mapping[str, str]
) -> tuple[Path, str, str]:
    """(Codex's config.toml, its text now, its text with the trust records for ``after``)."""
    from judge.integrations.hosts.codex import codex_home
    from judge.integrations.hosts.trust import TrustError, edited_config, rekeyed_state

    config_toml = codex_home(env) / "config.toml"
    text, _ = read_settings_text(config_toml)
    try:
        state = tomllib.loads(text).get("hooks", {}).get("state", {})
        if not isinstance(state, dict):
            raise TrustError("config.toml's hooks.state is not a table")
        key_path = os.path.abspath(path)
        new_state = rekeyed_state(state, key_path, before, after, lambda h: is_judge(dialect, h))
        return config_toml, text, edited_config(text, key_path, new_state)
    except tomllib.TOMLDecodeError as exc:
        raise InstallError(f"{config_toml} is not valid TOML ({exc}); fix it by hand first") from None
    except TrustError as exc:
        raise InstallError(f"{config_toml}: {exc}; nothing was changed") from None


def read_settings_text(path: Path) -> tuple[str, bool]:
    """A text file's content ("" when missing) and whether it exists."""
    try:
        return path.read_text(encoding="utf-8"), True
    except FileNotFoundError:
        return "", False
    except (OSError, UnicodeDecodeError) as exc:
        raise InstallError(f"cannot read {path}: {exc}") from None


def _load(raw: str, project: Path) -> tuple[Path, Config]:
    config_path = (project / Path(raw).expanduser()).resolve()
    if not config_path.is_file():
        raise InstallError(f"no judge configuration at {config_path} (pass --config FILE)")
    try:
        return config_path, load_config(config_path)
    except ConfigError as exc:
        lines = "\n".join(f"  {p}" for p in exc.problems)
        raise InstallError(f"invalid judge configuration {config_path}:\n{lines}") from None


def install(
    dialect: Dialect, args: argparse.Namespace, project: Path, answer: Answer, env: Mapping[str, str]
) -> None:
    path = dialect.settings_file(args.scope, project, env)
    entries: list[HostEntry] = []
    if not args.uninstall:
        config_path, config = _load(args.install_config or str(project / "judge.yaml"), project)
        for warning in cap_warnings(dialect, config):
            answer.error(f"warning: {warning}")
        rewrite = getattr(args, "install_rewrite", None)
        entries = wanted_entries(dialect, config, config_path, args.install_timeout, rewrite)
        if not entries:
            answer.error(f"{config_path} has no hooks {dialect.title} can run; registering nothing")
    before_text, before = read_settings(path)
    try:
        merged, notes = merge(dialect, before, entries)
        after_text = settings_text(merged)
    except RecursionError:
        raise InstallError(
            f"{path} is nested too deeply; fix it by hand first, nothing was changed"
        ) from None
    for note in notes:
        answer.error(note)
    changes = [] if merged == before else [(path, before_text, after_text)]
    if dialect.name == "codex":
        toml_path, toml_before, toml_after = _codex_trust(dialect, path, before, merged, env)
        if toml_after != toml_before:
            changes.insert(0, (toml_path, toml_before, toml_after))
    if not changes:
        answer.print(f"{path}: already up to date")
        return
    for changed, old, new in changes:
        if args.dry_run:
            answer.stdout += _diff(changed, old, new)
        else:
            write_atomically(changed, new)
    if args.dry_run:
        return
    if args.uninstall:
        answer.print(f"{path}: removed judge's hook entries")
        return
    events = ", ".join(dict.fromkeys(e.host_event for e in entries))
    answer.print(f"{path}: judge registered for {events}")
    if dialect.name == "codex":
        answer.print(f"{changes[0][0]}: Codex trusts judge's hooks (see them in Codex's /hooks)")


def install_answer(
    dialect: Dialect, args: argparse.Namespace, project: Path, env: Mapping[str, str] = os.environ
) -> Answer:
    """``judge <host> install`` in ``project``: exit 0 done, 1 refused (the reason on
    stderr, the files untouched)."""
    answer = Answer(prefix=f"judge {dialect.name} install")
    try:
        install(dialect, args, project, answer, env)
    except (InstallError, OSError) as exc:
        answer.error(f"judge {dialect.name} install: {exc}")
        answer.code = 1
    return answer
