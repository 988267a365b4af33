"""The fast path of ``judge claude-code``: a tool call no hook matches costs almost nothing.

Claude Code starts a new ``judge claude-code`` process for every hook event it is
registered for — with a ``PreToolUse``/``PostToolUse`` entry, on every tool call. Most of
those calls match none of the configuration's hooks. Loading and validating the
configuration (pydantic models, YAML, templates) and importing the engine costs far more
than the answer ("nothing to do"), so the adapter keeps a small **config index** next to
its state file: for each event, the matchers of the hooks that could run, written after the
configuration was loaded and validated in full. While the configuration file is unchanged
(same real path, device, inode, size and modification time, same judge version), this
module answers from the index with the standard library alone:

* an event the index has no hook for (agent level, or the custom agent named by the
  input's ``agent_type``) → nothing to do;
* a tool event none of whose matchers selects the tool → nothing to do.

Anything else — a matching hook, a matcher whose meaning could differ between Python's
``re`` and the ``regex`` engine the full path uses, an unknown event, a missing or stale
index, unusual flags — goes to the full adapter, which receives the hook input already
read here. The fast path never blocks and never allows anything the full path would judge.
"""

from __future__ import annotations

import json
import os
import re

from judge import __version__
from judge.integrations.claude_code import pin as pins

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing costs milliseconds on every hook event)
    from typing import Any

#: Largest hook input read from stdin (the full adapter enforces the same limit).
MAX_STDIN_BYTES = 64 * 1024 * 1024
INDEX_FORMAT = 2
#: Claude Code events ``judge claude-code`` evaluates. Every other event is a no-op.
HANDLED_EVENTS: tuple[str, ...] = (
    "Stop",
    "SubagentStop",
    "PreToolUse",
    "PreSkillShellCommand",
    "PostToolUse",
    "PostToolUseFailure",
)
#: A session starts (or resumes): judge pins the configuration it is judged by
#: (:mod:`~judge.integrations.claude_code.pin`) and answers nothing.
SESSION_START = "SessionStart"
#: Events the index may answer for (the full adapter handles every other one); a
#: SessionStart has no hooks, only the pin (see _same_config).
FAST_EVENTS = frozenset({*HANDLED_EVENTS, SESSION_START})
TOOL_EVENTS = frozenset({"PreToolUse", "PreSkillShellCommand", "PostToolUse", "PostToolUseFailure"})
#: Claude Code events judged with another event's hooks (a failed tool call is a PostToolUse,
#: a skill's shell command a PreToolUse).
EVENT_HOOKS = {"PostToolUseFailure": "PostToolUse", "PreSkillShellCommand": "PreToolUse"}
#: Matchers made only of these characters mean the same in ``re`` and ``regex``.
_SIMPLE_MATCHER = re.compile(r"[A-Za-z0-9_|.*+?()\-: ]*")
_VALUE_FLAGS = ("--config", "--state", "--data-dir", "--timeout", "--rewrite")
#: ``--pinned``: sessions are pinned at SessionStart (the installer writes it), so a judged
#: call that finds no pin is worth a notice (the full adapter gives it). ``--resident``:
#: what the fast path cannot answer goes to the resident judge (:mod:`.relay`).
_SWITCHES = ("--pinned", "--resident")


def default_state_path() -> str:
    """``$JUDGE_STATE``, else ``$XDG_DATA_HOME/judge/state.sqlite`` (``~/.local/share``)."""
    env = os.environ.get("JUDGE_STATE")
    if env:
        return os.path.expanduser(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "judge", "state.sqlite")


def _config_identity(config_path: str, also: list[str] | None = None) -> list[Any]:
    """What tells the configuration file apart from an edited one, and (``also``) the
    calibration files it names: a changed calibration makes the index stale too."""
    real = os.path.realpath(config_path)
    st = os.stat(real)
    found: list[Any] = [real, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, __version__]
    for path in also or ():
        try:
            other = os.stat(path)
            found.append([path, other.st_dev, other.st_ino, other.st_size, other.st_mtime_ns])
        except OSError:
            found.append([path, None])
    return found


def index_path(state_path: str, config_path: str) -> str:
    """Where the index of ``config_path`` is kept (beside the state file)."""
    key = pins.sha256(os.path.realpath(config_path).encode()).hexdigest()[:32]
    return os.path.join(os.path.dirname(state_path) or ".", "config-index", f"{key}.json")


def write_index(
    state_path: str,
    config_path: str,
    hooks: dict[str, list[str | None]],
    agents: dict[str, dict[str, list[str | None]]],
    sha: str,
    also: list[str] | None = None,
) -> None:
    """Record, for a configuration that loaded and validated, each event's matchers.

    ``hooks`` maps an event to the matchers of its agent-level hooks (``None`` for hooks
    without one); ``agents`` the same per custom agent; ``sha`` is the SHA-256 of the
    file's text with its calibration (:mod:`~judge.integrations.claude_code.pin`), ``also`` the
    calibration files it names. Failures are ignored: the index is only a shortcut.
    """
    try:
        data = {
            "format": INDEX_FORMAT,
            "identity": _config_identity(config_path, also),
            "also": list(also or []),
            "hooks": hooks,
            "agents": agents,
            "sha256": sha,
        }
        pins.write_private(index_path(state_path, config_path), json.dumps(data))
    except (OSError, ValueError):
        return


def _read_index(state_path: str, config_path: str) -> dict[str, Any] | None:
    try:
        with open(index_path(state_path, config_path), encoding="utf-8") as src:
            data = json.load(src)
        if not isinstance(data, dict) or data.get("format") != INDEX_FORMAT:
            return None
        also = data.get("also") or []
        if not isinstance(also, list) or not all(isinstance(path, str) for path in also):
            return None
        if data.get("identity") != _config_identity(config_path, also):
            return None
    except (OSError, ValueError):
        return None
    return data


def parse_flags(
    argv: list[str], value_flags: tuple[str, ...] | None = None, switches: tuple[str, ...] | None = None
) -> dict[str, str] | None:
    """The values of ``value_flags`` (default: ``--config/--state/--data-dir/--timeout/--rewrite``)
    and ``switches`` (default: ``--pinned``, ``--resident``; as ``""``); None for anything else."""
    value_flags = _VALUE_FLAGS if value_flags is None else value_flags
    switches = _SWITCHES if switches is None else switches
    flags: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in switches:
            flags[arg] = ""
            i += 1
            continue
        name, eq, value = arg.partition("=")
        if name not in value_flags:
            return None
        if not eq:
            if i + 1 >= len(argv):
                return None
            i += 1
            value = argv[i]
        flags[name] = value
        i += 1
    return flags


def resident_flags(argv: list[str]) -> dict[str, str] | None:
    """The flags of ``judge claude-code ARGV`` when it asks for the resident judge (and
    names only flags the resident takes); else None."""
    flags = parse_flags(argv)
    return flags if flags is not None and "--resident" in flags else None


def _nothing_to_do(index: dict[str, Any], hook_input: dict[str, Any]) -> bool:
    event = hook_input.get("hook_event_name")
    if not isinstance(event, str) or event not in FAST_EVENTS:
        return False
    hooks, agents = index.get("hooks"), index.get("agents")
    if not isinstance(hooks, dict) or not isinstance(agents, dict):
        return False
    config_event = EVENT_HOOKS.get(event, event)
    matchers = list(hooks.get(config_event) or [])
    agent = hook_input.get("agent_type")
    if isinstance(agent, str) and isinstance(agents.get(agent), dict):
        matchers += list(agents[agent].get(config_event) or [])
    if not matchers:
        return True
    if event not in TOOL_EVENTS:
        return False
    tool = hook_input.get("tool_name")
    if not isinstance(tool, str):
        return False
    for matcher in matchers:
        if not matcher:
            continue  # an empty matcher selects nothing
        if matcher == "*" or not isinstance(matcher, str) or not _SIMPLE_MATCHER.fullmatch(matcher):
            return False
        try:
            if re.fullmatch(matcher, tool):
                return False
        except re.error:
            return False
    return True


def try_fast(argv: list[str], data: bytes | None) -> bool:
    """Whether ``judge claude-code ARGV`` with hook input ``data`` (stdin's bytes, ``None``
    without any) is answered from the index: nothing to do, nothing to print, exit 0.
    ``False``: the full adapter must run."""
    flags = parse_flags(argv)
    config = (flags or {}).get("--config") or os.environ.get("JUDGE_CONFIG")
    if flags is None or not config or data is None or len(data) > MAX_STDIN_BYTES:
        return False
    state = flags.get("--state")
    state = os.path.expanduser(state) if state else default_state_path()
    try:
        hook_input = json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):  # the full adapter tells what is wrong
        return False
    return isinstance(hook_input, dict) and nothing_to_do(config, state, hook_input, "--pinned" in flags)


def nothing_to_do(config: str, state: str, hook_input: dict[str, Any], pinned: bool = False) -> bool:
    """Whether the config index answers ``hook_input`` - Claude Code's fields, or another
    host's input in those terms (the judge event as ``hook_event_name``, ``tool_name``,
    ``agent_type``, ``session_id``) - with nothing to do."""
    index = _read_index(state, config)
    return (
        index is not None
        and _same_config(index, hook_input, state, config, pinned)
        and _nothing_to_do(index, hook_input)
    )


def _same_config(
    index: dict[str, Any], hook_input: dict[str, Any], state: str, config: str, pinned: bool = False
) -> bool:
    """Whether the session is judged by the configuration the index describes: its pin
    (:mod:`~judge.integrations.claude_code.pin`) names the same text, or it has none yet and is pinned to it
    (with ``pinned``, only at SessionStart: a later call without a pin goes to the full
    adapter, which tells the user)."""
    session, sha = hook_input.get("session_id"), index.get("sha256")
    if not isinstance(sha, str):
        return False
    if not isinstance(session, str) or not session or not pins.enabled():
        return True
    try:
        pin = pins.read_pin(state, session, config)
        if hook_input.get("hook_event_name") == "SessionStart":
            source = hook_input.get("source")
            if source == "resume":  # it starts afresh, as in Claude Code (pins.repin: unless nested)
                return pins.repin(state, session, config, sha)
            if pin is None:  # a compaction or a nested run finding none: the full adapter
                return (
                    source != "compact" and not pins.nested() and pins.write_pin(state, session, config, sha)
                )
        elif pin is None:
            return not pinned and pins.write_pin(state, session, config, sha)
        return bool(pin["sha256"] == sha and not pin.get("resumed_from"))
    except Exception:  # the full adapter says what is wrong
        return False
