"""``judge validate CONFIG [--strict] [--json]``: every problem of a configuration, located.

One run reports everything it can: the shape's problems (unknown keys with their near
miss, wrong types, missing fields) and what the deeper checks (:mod:`judge.validation`:
models resolved, templates rendered, likely mistakes) find in the rest of the
configuration, hooks with shape problems included as far as they can be read. Each line
starts with the file (``agent.yaml: hooks.Stop[0].model: ...``), as ``judge serve``'s do.

Exit codes: 0 valid (warnings printed); 1 an error, or a warning with ``--strict``.
``--json`` prints one object instead (``valid``, ``problems`` with ``severity``,
``where`` and ``message``, ``hooks`` per event) and keeps the exit codes.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from judge.errors import ConfigError


def add_validate_parser(sub: Any, handler: Any) -> None:
    p = sub.add_parser(
        "validate",
        help="validate a hook configuration",
        description="Prove a hook configuration can run: its shape, every prompt template "
        "rendered against a sample context, every model resolved, likely mistakes warned about.",
    )
    p.add_argument("config", help="YAML or JSON hook configuration")
    p.add_argument("--strict", action="store_true", help="treat warnings as errors (exit 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    p.set_defaults(func=handler)


def _split(problem: str) -> tuple[str | None, str]:
    """``hooks.Stop[0].model: unknown ...`` -> (``hooks.Stop[0].model``, ``unknown ...``)."""
    head, sep, rest = problem.partition(": ")
    if sep and " " not in head:
        return head, rest
    return None, problem


def _hook_counts(config: Any) -> dict[str, dict[str, int]]:
    from judge.config import EVENTS

    counts: dict[str, dict[str, int]] = {}
    for event in EVENTS:
        hooks = config.hooks.for_event(event)
        custom = sum(len(a.hooks.for_event(event)) for a in config.custom_agents.values())
        if hooks or custom:
            counts[event] = {
                "prompt": sum(1 for h in hooks if h.type == "prompt"),
                "command": sum(1 for h in hooks if h.type == "command"),
                "custom": custom,
            }
    return counts


def _summary_lines(counts: dict[str, dict[str, int]]) -> list[str]:
    lines = []
    for event, n in counts.items():
        line = f"{event}: {n['prompt'] + n['command']} hook(s) ({n['prompt']} prompt, {n['command']} command)"
        if n["custom"]:
            line += f", {n['custom']} in custom agents"
        lines.append(line)
    return lines or ["no hooks configured"]


def findings_of(path: str) -> tuple[list[dict[str, Any]], Any]:
    """Every problem of the file at ``path`` (dicts with severity, where, message) and the
    configuration when it has no shape problem (else None)."""
    from judge.config.load import load_partial_config
    from judge.validation import check_config

    try:
        config, shape = load_partial_config(path)
    except ConfigError as exc:  # unreadable, malformed: nothing further can be checked
        problems = [
            {"severity": "error", **dict(zip(("where", "message"), _split(p), strict=True))}
            for p in exc.problems
        ]
        return problems, None
    found = [
        {"severity": "error", "where": where, "message": message} for where, message in map(_split, shape)
    ]
    seen = {(f["where"], f["message"]) for f in found}
    for finding in check_config(config):
        if (finding.where, finding.message) not in seen:
            found.append({"severity": finding.severity, "where": finding.where, "message": finding.message})
    return found, None if shape else config


def _line(path: str, finding: dict[str, Any]) -> str:
    where = f"{finding['where']}: " if finding["where"] else ""
    severity = "warning: " if finding["severity"] == "warning" else ""
    return " ".join(f"{path}: {severity}{where}{finding['message']}".splitlines())


def validate_main(args: argparse.Namespace) -> int:
    found, config = findings_of(args.config)
    failed = config is None or any(f["severity"] == "error" or args.strict for f in found)
    counts = _hook_counts(config) if config is not None and not failed else {}
    if args.json:
        document = {
            "config": args.config,
            "valid": not failed,
            "errors": sum(1 for f in found if f["severity"] == "error"),
            "warnings": sum(1 for f in found if f["severity"] == "warning"),
            "problems": found,
            "hooks": counts,
        }
        print(json.dumps(document, indent=2, ensure_ascii=False))
        return 1 if failed else 0
    for finding in found:
        print(_line(args.config, finding), file=sys.stderr)
    if failed:
        return 1
    print("\n".join(_summary_lines(counts)))
    return 0
