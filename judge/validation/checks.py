"""Proving a configuration can run: what ``judge validate`` checks beyond its shape.

:func:`check_config` compiles and renders every prompt template against a sample
context of its event, resolves every ``model`` and notes what is legal but likely wrong.
Each finding names its place (``hooks.Stop[0].prompt: line 2: ...``). Errors stop
``judge serve`` from starting and make ``judge claude-code`` fail closed on PreToolUse;
warnings only print, unless ``--strict`` (:func:`load_checked_config` with ``strict``).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from judge.config import STOP_EVENTS, Config, Hook, load_config
from judge.config.models import EVENTS
from judge.errors import ConfigError
from judge.hooks.sandbox import CWD_KEYWORDS
from judge.integrations.claude_code.protocol import (
    BLOCK_CAP_ENV,
    claude_code_block_cap,
    takes_effect_under_claude_code,
)
from judge.validation.model_names import (
    cannot_cite,
    explicit_model_problem,
    local_timeout_problem,
    model_problem,
    tier_variable_problems,
)
from judge.validation.templates import template_problems

_INTERPRETERS = frozenset({"bash", "sh", "zsh", "python", "python3", "node", "ruby", "perl", "deno", "bun"})
_SCRIPT_SUFFIX = re.compile(r"\.(sh|bash|py|js|mjs|ts|rb|pl)$")
_RELATIVE_PATH = re.compile(r"(\.\.?/[^\s]*|[\w.@+-]+(/[\w.@+-]+)*/[\w@+-]+\.[\w]+)")


@dataclass(frozen=True)
class Finding:
    """One problem: ``error`` (the config cannot run as written) or ``warning``."""

    severity: Literal["error", "warning"]
    where: str
    message: str

    def __str__(self) -> str:
        text = f"{self.where}: {self.message}"
        return text if self.severity == "error" else f"warning: {text}"


def placed_hooks(config: Config) -> Iterator[tuple[str, str, Hook, str | None]]:
    """(place, event, hook, custom agent name) of every hook, in the config's own spelling."""
    agents_key = config.hooks_key.removesuffix("hooks") + "customAgents"
    written = config.places
    for event in EVENTS:
        for i, hook in enumerate(config.hooks.for_event(event)):
            where = f"{config.hooks_key}.{event}[{i}]"
            yield written.get(where, where), event, hook, None
    for name, agent in config.custom_agents.items():
        for event in EVENTS:
            for i, hook in enumerate(agent.hooks.for_event(event)):
                where = f"{agents_key}.{name}.hooks.{event}[{i}]"
                yield written.get(where, where), event, hook, name


def relative_paths(command: str) -> list[str]:
    """Relative file paths a shell command names (``./check.sh``, ``python3 lint.py``)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        words = command.split()
    found: list[str] = []
    for index, word in enumerate(words):
        value = word.partition("=")[2] if word.startswith("-") else word
        if not value or value.startswith(("/", "~", "$")) or "://" in value:
            continue
        after_interpreter = index > 0 and Path(words[index - 1]).name in _INTERPRETERS
        if _RELATIVE_PATH.fullmatch(value) or (after_interpreter and _SCRIPT_SUFFIX.search(value)):
            found.append(value)
    return found


def _loop_findings(
    where: str, event: str, hook: Hook, config: Config, env: Mapping[str, str]
) -> list[Finding]:
    """A Stop prompt hook's loop limits that can never take effect (``repeats`` against the
    largest ``maxRejections`` any prompt hook of the event may bring to its loop)."""
    found: list[Finding] = []
    cap = claude_code_block_cap(env)
    if not takes_effect_under_claude_code(hook.max_rejections, cap):
        found.append(
            Finding(
                "warning",
                f"{where}.maxRejections",
                f"{hook.max_rejections} is above Claude Code's cap of {cap} consecutive Stop "
                f"blocks ({BLOCK_CAP_ENV}); if this config is used with Claude Code, the turn "
                "ends at the cap and this limit never takes effect",
            )
        )
    limit = max(h.max_rejections for _, _, h in config.every_hook_for(event) if h.type == "prompt")
    if hook.repeats and hook.repeats >= limit - 1:
        found.append(
            Finding(
                "warning",
                f"{where}.repeats",
                f"{hook.repeats} identical repeats cannot happen within maxRejections {limit}: the "
                f"loop is forced first and never ends as stalled (at most {max(limit - 2, 0)} can)",
            )
        )
    return found


def _hook_findings(
    where: str, event: str, hook: Hook, agent: str | None, config: Config, env: Mapping[str, str]
) -> list[Finding]:
    found: list[Finding] = []
    if hook.type == "prompt":
        cascade = len(hook.models) > 1
        for stage, model in enumerate(hook.models):
            problem = model_problem(model, env, config.base_dir)
            if problem:
                found.append(Finding("error", f"{where}.model" + (f"[{stage}]" if cascade else ""), problem))
        errors, warnings = template_problems(hook.prompt or "", event, agent, config.base_dir)
        found += [Finding("error", f"{where}.prompt", m) for m in errors]
        found += [Finding("warning", f"{where}.prompt", m) for m in warnings]
        models = hook.model if isinstance(hook.model, tuple) else (hook.model,)
        if hook.evidence == "required" and any(cannot_cite(m, config.models, env) for m in models):
            found.append(
                Finding(
                    "warning",
                    f"{where}.evidence",
                    f"required, but the model {hook.model!r} resolves to a fake judge that never cites "
                    "the transcript: every rejection will end as a hook error (its failMode)",
                )
            )
        found += _prompt_option_findings(where, hook, config, env)
        slow = {local_timeout_problem(m, hook.timeout, config.models, env) for m in models}
        found += [Finding("warning", f"{where}.timeout", m) for m in sorted(p for p in slow if p)]
        if event in STOP_EVENTS:
            found += _loop_findings(where, event, hook, config, env)
    elif hook.command is not None and hook.cwd == "temp":
        for path in relative_paths(hook.command):
            found.append(
                Finding(
                    "warning",
                    f"{where}.command",
                    f"names the relative path {path!r}, but command hooks run in a private "
                    "temporary folder; use an absolute path (e.g. $CLAUDE_PROJECT_DIR/...) "
                    "or set `cwd: config` or `cwd: project`",
                )
            )
    if hook.type == "command" and hook.cwd not in CWD_KEYWORDS:
        folder = Path(hook.cwd).expanduser()
        if config.base_dir is not None and not folder.is_absolute():
            folder = config.base_dir / folder
        if not folder.is_dir():
            found.append(Finding("warning", f"{where}.cwd", f"{folder} is not a folder (yet)"))
    return found


def _prompt_option_findings(where: str, hook: Hook, config: Config, env: Mapping[str, str]) -> list[Finding]:
    """A calibration that keeps the hook in shadow; samples that cannot differ."""
    found = []
    calibration = config.calibration_of(where.removeprefix("spec."), hook)
    if calibration is not None and calibration.status != "ok":
        found.append(
            Finding(
                "warning",
                f"{where}.calibration",
                f"{calibration.status}: {calibration.reason}; the hook runs as shadow (it never blocks) "
                "until `judge eval --out DIR` measures it and the record meets its floors",
            )
        )
    temperature = env.get("JUDGE_TEMPERATURE", "").strip()
    if hook.samples > 1 and temperature in ("0", "0.0", "0.00"):
        found.append(
            Finding(
                "warning",
                f"{where}.samples",
                f"{hook.samples} samples at JUDGE_TEMPERATURE={temperature}: a model sampled greedily "
                "answers the same every time, so the samples cost more and agree by construction",
            )
        )
    return found


def check_config(config: Config, env: Mapping[str, str] | None = None) -> list[Finding]:
    """Every error and warning of a loaded config, in document order."""
    env = os.environ if env is None else env
    found: list[Finding] = []
    for where, event, hook, agent in placed_hooks(config):
        found += _hook_findings(where, event, hook, agent, config, env)
    for key, value in config.models.items():
        problem = explicit_model_problem(value, config.base_dir)
        if problem:
            found.append(Finding("error", f"models.{key}", problem))
    found += [Finding("warning", name, problem) for name, problem in tier_variable_problems(env)]
    return found


def runnable(
    config: Config,
    *,
    source: str | None = None,
    strict: bool = False,
    env: Mapping[str, str] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> Config:
    """``config`` when :func:`check_config` finds no error (no warning either if ``strict``).

    Raises :class:`ConfigError` listing the errors (and, with ``strict``, the warnings);
    otherwise passes each warning to ``on_warning``.
    """
    findings = check_config(config, env)
    if on_warning is not None and not strict:
        for finding in findings:
            if finding.severity == "warning":
                on_warning(f"{source}: {finding}" if source else str(finding))
    fatal = [str(f) for f in findings if f.severity == "error" or strict]
    if fatal:
        raise ConfigError(fatal, source)
    return config


def load_checked_config(
    path: str | Path,
    *,
    strict: bool = False,
    env: Mapping[str, str] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> Config:
    """:func:`~judge.config.load_config` plus :func:`runnable`: a config that can run."""
    config = load_config(path)
    return runnable(config, source=str(path), strict=strict, env=env, on_warning=on_warning)
