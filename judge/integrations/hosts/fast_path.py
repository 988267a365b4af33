"""The fast path of ``judge codex|gemini|copilot|cursor``: a call no hook matches costs almost nothing.

A host starts a new judge process for every event it is registered for - with a tool
entry, on every tool call. As for ``judge claude-code``
(:mod:`judge.integrations.claude_code.fast_path`), the configuration's index beside the
state file answers "nothing to do" with the standard library alone: the host's input is
read by its dialect (standard library too) and put in judge's terms, and the same index
and pin checks decide. Anything else - a matching hook, unusual flags, input the dialect
refuses - goes to the full adapter, which receives the input already read.
"""

from __future__ import annotations

import importlib
import json
import os

from judge.integrations.claude_code.fast_path import (
    MAX_STDIN_BYTES,
    default_state_path,
    nothing_to_do,
    parse_flags,
)
from judge.integrations.hosts.dialect import Dialect, HostInputError

#: ``judge <name>`` -> the module holding that host's dialect (``DIALECT``).
HOSTS: dict[str, str] = {
    "codex": "judge.integrations.hosts.codex",
    "gemini": "judge.integrations.hosts.gemini",
    "copilot": "judge.integrations.hosts.copilot",
    "cursor": "judge.integrations.hosts.cursor",
}
_VALUE_FLAGS = ("--config", "--state", "--data-dir", "--timeout", "--rewrite", "--event")


def dialect_for(name: str) -> Dialect:
    """The dialect of ``judge <name>``."""
    dialect: Dialect = importlib.import_module(HOSTS[name]).DIALECT
    return dialect


def try_fast(name: str, argv: list[str], data: bytes | None) -> bool:
    """Whether ``judge <name> ARGV`` with hook input ``data`` is answered from the index:
    nothing to do, nothing to print, exit 0. ``False``: the full adapter must run."""
    flags = parse_flags(argv, _VALUE_FLAGS, ())
    config = (flags or {}).get("--config") or os.environ.get("JUDGE_CONFIG")
    if flags is None or not config or data is None or len(data) > MAX_STDIN_BYTES:
        return False
    state = flags.get("--state")
    state = os.path.expanduser(state) if state else default_state_path()
    try:
        hook_input = json.loads(data.decode("utf-8", errors="replace"))
        call = (
            dialect_for(name).parse(hook_input, flags.get("--event"))
            if isinstance(hook_input, dict)
            else None
        )
    except (ValueError, RecursionError, HostInputError):  # the full adapter tells what is wrong
        return False
    if call is None or call.event is None or call.skip is not None:
        return False
    probe = {
        "hook_event_name": call.event,
        "session_id": call.session_id,
        "tool_name": call.tool_name,
        "agent_type": call.agent_type,
    }
    return nothing_to_do(config, state, {k: v for k, v in probe.items() if v is not None})
