"""One hook entry's shape (:class:`Hook`) and the events hooks are written for.

Field-level rules live here (timeouts, regex matchers, script limits), with the checks
shared with the document validation in :mod:`judge.config.fields`, the prompt-hook options
(calibration, samples) in :mod:`judge.config.prompt_options` and prices and budgets in
:mod:`judge.config.spending`; hooks per event, custom agents and the whole config are
:mod:`judge.config.models`; the located validation of whole documents is
:mod:`judge.config.load`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import regex
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from judge.config.fields import (
    MAX_REPEATS,
    MAX_SCRIPT_BYTES,
    SUPPORTED_SHEBANGS,
    BackgroundTasks,
    cascade_stages,
    missing_shebang,
    model_name,
    repeats_in_range,
)
from judge.config.fields import hook_place as hook_place
from judge.config.fields import type_field_problems as type_field_problems
from judge.config.prompt_options import (
    MAX_SAMPLES,
    Aggregate,
    CalibrationPolicy,
    samples_in_range,
    sampling_problems,
)
from judge.config.spending import Budgets as Budgets
from judge.config.spending import ModelPrice as ModelPrice
from judge.hooks import sandbox

#: Events a configuration may define hooks for. ``SubagentStop`` follows the Stop rules.
EVENTS: tuple[str, ...] = ("Stop", "SubagentStop", "PostToolUse", "PreToolUse")
#: Events whose hooks are selected by a tool-name ``matcher``.
TOOL_EVENTS: frozenset[str] = frozenset({"PostToolUse", "PreToolUse"})
#: Events that follow the Stop-gate rules.
STOP_EVENTS: frozenset[str] = frozenset({"Stop", "SubagentStop"})

#: Seconds a matcher may spend on one tool name.
MATCH_TIMEOUT = 0.1

#: Options that mean something on prompt hooks only: a command hook's are left out of what
#: is echoed and stored unless written (their defaults would read as if they applied).
PROMPT_ONLY_FIELDS: frozenset[str] = frozenset({"model", "max_rejections", "evidence"})

FailMode = Literal["allow", "block"]
#: ``required``: a prompt hook's rejections must cite verified transcript lines.
EvidenceMode = Literal["off", "required"]
#: ``enforce``: the hook's verdict counts; ``shadow``: it is recorded, never acted on.
HookMode = Literal["enforce", "shadow"]


class Hook(BaseModel):
    """One hook entry: a prompt hook (an LLM judges) or a command hook (a script decides)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    type: Literal["prompt", "command"] = Field(
        "prompt", description="`prompt` (an LLM judges) or `command` (a script decides)."
    )
    prompt: str | None = Field(
        None,
        description="Prompt hooks: the Jinja2 prompt template. `$ARGUMENTS` marks where the "
        "context JSON goes; without it the context is appended.",
    )
    command: str | None = Field(
        None, description="Command hooks: an inline shell command run by bash. Excludes `script`."
    )
    script: str | None = Field(
        None,
        description="Command hooks: a multi-line script whose first line is its shebang, "
        "`#!/bin/bash` or `#!/usr/bin/env python3` (required). Excludes `command`.",
    )
    cwd: str = Field(
        "temp",
        description="Command hooks: where the hook starts: `temp` (its private temp dir, the "
        "default), `config` (the config file's folder), `project` ($CLAUDE_PROJECT_DIR) or a "
        "folder (relative to the config's folder).",
    )
    env: tuple[str, ...] = Field(
        (),
        description="Command hooks: names of the judge's environment variables to pass "
        "through (nothing else is passed but PATH, LANG, LC_ALL, LC_CTYPE, TZ, TERM, "
        "CLAUDE_PROJECT_DIR).",
    )
    matcher: str | None = Field(
        None,
        description="Tool events: a regex over the tool name, anchored as `^(pattern)$`, "
        "case-sensitive; `*` matches every tool; empty matches none.",
    )
    timeout: int = Field(30, ge=1, le=300, description="Seconds the whole hook may take (1-300).")
    fail_mode: FailMode | None = Field(
        None,
        alias="failMode",
        description="How a hook error is treated: `allow` or `block`. "
        "Default: `block` for PreToolUse, `allow` otherwise.",
    )
    model: str | Annotated[tuple[str, ...], Field(min_length=2)] = Field(
        "ReasoningFast",
        description="Prompt hooks: a tier (Reasoning, ReasoningFast, General, Fast, LongContext) "
        "or a model (`openai:<name>`, `anthropic:<name>`, or a bare name). A list of 2 or more "
        "is a cascade (`[Fast, Reasoning]`): the first model judges; its rejections, errors and "
        "unparseable answers go to the next, whose verdict confirms or overrides (docs/cascades.md).",
    )
    max_rejections: int = Field(
        3,
        ge=1,
        le=25,
        alias="maxRejections",
        description="Stop prompt hooks: how many rejections end the loop (1-25).",
    )
    repeats: int = Field(
        0,
        ge=0,
        le=MAX_REPEATS,
        description="Stop prompt hooks: how many identical repeats of a rejected stop (the same "
        "final answer, case and whitespace aside, rejected with the same reason) are sent back "
        "again (0-25; default 0: the first identical repeat ends the loop as `stalled`).",
    )
    background_tasks: BackgroundTasks = Field(
        "defer",
        alias="backgroundTasks",
        description="Stop prompt hooks, when the context's `background_tasks` is not empty (work the "
        "agent started is still running; Claude Code wakes the agent when it ends): `defer` "
        "(default) does not run the hook (outcome `deferred`), `judge` runs it as usual.",
    )
    mode: HookMode = Field(
        "enforce",
        description="`enforce` (default): the hook decides. `shadow`: the hook runs and its verdict "
        'is recorded (hook results carry `"mode": "shadow"`), but it never blocks, rewrites, adds '
        "context or counts toward maxRejections — to watch a new gate before turning it on.",
    )
    evidence: EvidenceMode = Field(
        "off",
        description="Prompt hooks: `required` makes every rejection cite transcript lines "
        '(`{"line": N, "quote": "..."}`), each verified against the transcript (the quote within 2 '
        "lines of N, whitespace-normalised); unverified evidence is re-asked once, then the hook's "
        "failMode applies. Verified citations are appended to the reason and listed in the hook "
        "result's `citations`. `off` (default): no citations asked.",
    )
    calibration: CalibrationPolicy | None = Field(
        None,
        description="Prompt hooks: enforce only while a calibration record measured for this "
        "hook's prompt and model meets the floors; when the record is missing, stale (the prompt "
        'or model changed) or below a floor, the hook runs as shadow and says why (`"calibration": '
        '{"status": ...}` in its result). docs/calibration.md.',
    )
    samples: int = Field(
        1,
        ge=1,
        le=MAX_SAMPLES,
        description="Prompt hooks: independent judgements per call (1-9), run in parallel within "
        "the hook's timeout; `aggregate` makes the verdict. Each is a model call (k samples cost "
        "k calls); the hook result lists them (`samples`) with their `agreement`.",
    )
    aggregate: Aggregate = Field(
        "majority",
        description="Prompt hooks with `samples` > 1: `majority` (default; an odd number of "
        "samples), `any` (one block blocks) or `all` (blocks only when every sample blocks). "
        "Samples that fail are left out; when none answers, the hook fails (failMode).",
    )
    escalate_below: float | None = Field(
        None,
        gt=0.5,
        le=1.0,
        alias="escalateBelow",
        description="Cascades with `samples` > 1: a stage whose samples agree less than this "
        "(the share that gave the majority verdict) goes to the next model even when it approves "
        "(default 1.0: any disagreement escalates).",
    )

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout_is_int(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be an integer number of seconds, got {value!r}")
        if not 1 <= value <= 300:
            raise ValueError(f"must be between 1 and 300 seconds, got {value}")
        return value

    @field_validator("max_rejections", mode="before")
    @classmethod
    def _max_rejections_range(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be an integer, got {value!r}")
        if not 1 <= value <= 25:
            raise ValueError(f"must be between 1 and 25, got {value}")
        return value

    _repeats_range = field_validator("repeats", mode="before")(repeats_in_range)

    _samples_range = field_validator("samples", mode="before")(samples_in_range)

    @field_validator("model", mode="before")
    @classmethod
    def _model_named(cls, value: Any) -> Any:
        return cascade_stages(value) if isinstance(value, list | tuple) else model_name(value)

    @field_validator("matcher")
    @classmethod
    def _matcher_compiles(cls, value: str | None) -> str | None:
        if value and value != "*":
            try:
                re.compile(value)  # matched with re.fullmatch, so compiled exactly as written
            except re.error as exc:
                raise ValueError(f"invalid regex {value!r}: {exc}") from None
        return value

    @field_validator("script")
    @classmethod
    def _script_limits(cls, value: str | None) -> str | None:
        if value is None:
            return value
        size = len(value.encode("utf-8"))
        if size > MAX_SCRIPT_BYTES:
            raise ValueError(f"script is {size} bytes; the limit is {MAX_SCRIPT_BYTES} (64 KB)")
        first = value.lstrip("\n").split("\n", 1)[0].strip()
        if not first.startswith("#!"):
            raise ValueError(missing_shebang(value))
        if first not in SUPPORTED_SHEBANGS:
            raise ValueError(f"unsupported shebang {first!r}; use one of {', '.join(SUPPORTED_SHEBANGS)}")
        return value

    @field_validator("cwd")
    @classmethod
    def _cwd_valid(cls, value: str) -> str:
        problem = sandbox.cwd_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        problem = sandbox.env_names_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _type_fields(self) -> Hook:
        problems = type_field_problems(self.type, self.prompt, self.command, self.script)
        if self.type == "prompt":
            unused = [f for f in ("cwd", "env") if f in self.model_fields_set]
            problems += [f"{f}: only for command hooks" for f in unused]
            problems += sampling_problems(self.samples, self.aggregate, self.escalate_below, self.model)
        else:
            if self.evidence == "required":
                problems.append("evidence: only for prompt hooks (a command hook's answer is not checked)")
            problems += [
                f"{name}: only for prompt hooks (a command hook's rejections are not counted or deferred)"
                for name in self.stop_options_set()
            ]
            # (compared with the defaults: a dumped and reloaded command hook names them all)
            prompt_only = {"calibration": None, "samples": 1, "aggregate": "majority", "escalate_below": None}
            problems += [
                f"{self._alias(f)}: only for prompt hooks"
                for f, unset in prompt_only.items()
                if getattr(self, f) != unset
            ]
        if problems:
            raise ValueError(problems[0])
        return self

    def stop_options_set(self) -> list[str]:
        """The Stop-rule options this hook sets to something other than their defaults."""
        changed = {"repeats": self.repeats != 0, "backgroundTasks": self.background_tasks != "defer"}
        return [name for name, set_ in changed.items() if set_]

    @classmethod
    def _alias(cls, name: str) -> str:
        return cls.model_fields[name].alias or name

    @property
    def samples_escalate_below(self) -> float:
        """The agreement under which a cascade stage's samples escalate (default 1.0)."""
        return 1.0 if self.escalate_below is None else self.escalate_below

    @property
    def models(self) -> tuple[str, ...]:
        """The models this hook judges with: one, or a cascade's stages in order."""
        return (self.model,) if isinstance(self.model, str) else self.model

    def fail_mode_for(self, event: str) -> FailMode:
        """The effective failMode: explicit, else `block` for PreToolUse, else `allow`."""
        if self.fail_mode is not None:
            return self.fail_mode
        return "block" if event == "PreToolUse" else "allow"

    def fails_closed(self, event: str) -> bool:
        """Whether an error of this hook blocks: its failMode is ``block`` and it enforces
        (a shadow hook never blocks)."""
        return self.fail_mode_for(event) == "block" and self.mode != "shadow"

    def matches(self, tool_name: str | None) -> bool:
        """Whether this hook's matcher selects ``tool_name`` (anchored, case-sensitive)."""
        if not self.matcher or tool_name is None:
            return False
        if self.matcher == "*":
            return True
        # fullmatch anchors the whole pattern, i.e. ^(pattern)$ (alternations included).
        # The `regex` engine runs it under a time limit: tool names come from untrusted
        # input, and a pathological matcher must not hang the gate. On timeout the hook
        # runs (for PreToolUse policies, not running a check would fail open).
        try:
            return regex.fullmatch(self.matcher, tool_name, timeout=MATCH_TIMEOUT) is not None
        except TimeoutError:
            return True
