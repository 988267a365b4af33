"""The configuration's shapes: hooks, hooks per event, custom agents and the whole config.

Field-level rules live here (timeouts, regex matchers, script limits); the located
validation of whole documents is :mod:`judge.config.load`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

import regex
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from judge.hooks import sandbox

#: Events a configuration may define hooks for. ``SubagentStop`` follows the Stop rules.
EVENTS: tuple[str, ...] = ("Stop", "SubagentStop", "PostToolUse", "PreToolUse")
#: Events whose hooks are selected by a tool-name ``matcher``.
TOOL_EVENTS: frozenset[str] = frozenset({"PostToolUse", "PreToolUse"})
#: Events that follow the Stop-gate rules.
STOP_EVENTS: frozenset[str] = frozenset({"Stop", "SubagentStop"})

MAX_SCRIPT_BYTES = 64 * 1024
#: Seconds a matcher may spend on one tool name.
MATCH_TIMEOUT = 0.1
SUPPORTED_SHEBANGS: tuple[str, ...] = ("#!/bin/bash", "#!/usr/bin/env python3")

_PYTHON_LINE = re.compile(r"^\s*(import \w|from [\w.]+ import |def \w+\(|print\()", re.MULTILINE)


def missing_shebang(script: str) -> str:
    """The problem of a ``script`` without a ``#!`` line, with the line to add (a body that
    looks like Python gets the Python one: run as bash, it would fail with exit 2, which
    judge reads as a deliberate block with a bash error as its reason)."""
    python = _PYTHON_LINE.search(script) is not None
    line = SUPPORTED_SHEBANGS[1] if python else SUPPORTED_SHEBANGS[0]
    looks = " (the script looks like Python)" if python else ""
    return f"script has no #! line; start it with {line}{looks}, or use command: for a one-line shell command"


#: Options that mean something on prompt hooks only: a command hook's are left out of what
#: is echoed and stored unless written (their defaults would read as if they applied).
PROMPT_ONLY_FIELDS: frozenset[str] = frozenset({"model", "max_rejections", "evidence"})

FailMode = Literal["allow", "block"]
#: ``required``: a prompt hook's rejections must cite verified transcript lines.
EvidenceMode = Literal["off", "required"]
#: ``enforce``: the hook's verdict counts; ``shadow``: it is recorded, never acted on.
HookMode = Literal["enforce", "shadow"]
#: Stop prompt hooks while background tasks run: ``defer`` (not run) or ``judge`` (run).
BackgroundTasks = Literal["judge", "defer"]
#: Most identical repeats of a rejected Stop a prompt hook may tolerate (``repeats``).
MAX_REPEATS = 25


def type_field_problems(type_: Any, prompt: Any, command: Any, script: Any) -> list[str]:
    """Which of prompt/command/script a hook of ``type_`` is missing or must not have.

    Messages start with the field they are about when there is one (``prompt: ...``).
    """
    if type_ == "prompt":
        problems = []
        if prompt is None or (isinstance(prompt, str) and not prompt.strip()):
            problems.append("prompt: required for prompt hooks")
        for name, value in (("command", command), ("script", script)):
            if value is not None:
                problems.append(f"{name}: not allowed on prompt hooks (set type: command)")
        return problems
    if type_ == "command":
        problems = []
        if command is not None and script is not None:
            problems.append("command hooks take exactly one of `command` or `script`, not both")
        elif command is None and script is None:
            problems.append("command hooks need `command` or `script`")
        if prompt is not None:
            problems.append("prompt: not allowed on command hooks (set type: prompt)")
        return problems
    return []


def model_name(value: Any, where: str = "") -> str:
    """``value`` when it names a tier or a model; ValueError otherwise."""
    if not isinstance(value, str):
        raise ValueError(
            f"{where}must be a tier or model name (a string), or a list of them (a cascade), "
            f"got {type(value).__name__} {value!r}"
        )
    prefix, sep, rest = value.strip().partition(":")
    if not value.strip() or (sep and prefix.lower() in ("openai", "anthropic", "fake") and not rest.strip()):
        raise ValueError(
            f"{where}must name a tier (e.g. ReasoningFast) or a model (e.g. openai:<name>), got {value!r}"
        )
    return value


def cascade_stages(value: list[Any] | tuple[Any, ...]) -> tuple[str, ...]:
    """A cascade's models, first (cheapest) first; ValueError for fewer than 2 or a non-name."""
    if len(value) < 2:
        raise ValueError(
            "a cascade lists 2 or more models, first the cheap one (e.g. [Fast, Reasoning]), "
            f"got {list(value)!r}; for one model write it as a string"
        )
    return tuple(model_name(v, f"stage {i + 1}: ") for i, v in enumerate(value))


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

    @field_validator("repeats", mode="before")
    @classmethod
    def _repeats_range(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be an integer, got {value!r}")
        if not 0 <= value <= MAX_REPEATS:
            raise ValueError(f"must be between 0 and {MAX_REPEATS}, got {value}")
        return value

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
        else:
            if self.evidence == "required":
                problems.append("evidence: only for prompt hooks (a command hook's answer is not checked)")
            problems += [
                f"{name}: only for prompt hooks (a command hook's rejections are not counted or deferred)"
                for name in self.stop_options_set()
            ]
        if problems:
            raise ValueError(problems[0])
        return self

    def stop_options_set(self) -> list[str]:
        """The Stop-rule options this hook sets to something other than their defaults."""
        changed = {"repeats": self.repeats != 0, "backgroundTasks": self.background_tasks != "defer"}
        return [name for name, set_ in changed.items() if set_]

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


class HookSet(BaseModel):
    """Hooks per event."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    Stop: list[Hook] = Field(default_factory=list, description="Before the final answer.")
    SubagentStop: list[Hook] = Field(
        default_factory=list, description="Before a subagent's final answer (Stop rules)."
    )
    PostToolUse: list[Hook] = Field(default_factory=list, description="After a tool succeeded.")
    PreToolUse: list[Hook] = Field(default_factory=list, description="Before a tool runs.")

    def for_event(self, event: str) -> list[Hook]:
        hooks: list[Hook] = getattr(self, event, [])
        return hooks


class CustomAgent(BaseModel):
    """A custom agent: its hooks run after the agent-level hooks when it is the one running."""

    model_config = ConfigDict(extra="allow", frozen=True)

    instructions: str | None = Field(None, description="The custom agent's instructions.")
    hooks: HookSet = Field(default_factory=HookSet, description="Hooks of this custom agent.")
    mode: HookMode = Field(
        "enforce", description="`shadow` runs every hook of this custom agent in shadow mode (see Hook.mode)."
    )


class ModelPrice(BaseModel):
    """A model's price in US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0, description="USD per million input tokens.")
    output: float = Field(ge=0, description="USD per million output tokens.")


class Budgets(BaseModel):
    """Spending limits of prompt hooks (kept where the gate has state: the service, judge
    claude-code, judge run --state). A prompt hook whose budget is spent is not run: it is a
    hook error ``budget exhausted ...`` and its failMode decides."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    per_session_usd: float | None = Field(
        None, gt=0, alias="perSessionUsd", description="USD one session may spend on prompt hooks."
    )
    per_day_usd: float | None = Field(
        None, gt=0, alias="perDayUsd", description="USD all sessions may spend per UTC day."
    )


class Config(BaseModel):
    """A validated hook configuration (either form, normalised)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    name: str | None = Field(None, description="metadata.name of the resource form.")
    hooks: HookSet = Field(default_factory=HookSet, description="Agent-level hooks.")
    custom_agents: dict[str, CustomAgent] = Field(
        default_factory=dict, alias="customAgents", description="Custom agents by name."
    )
    models: dict[str, str] = Field(
        default_factory=dict,
        description="Tier -> model mapping, e.g. `ReasoningFast: openai:gpt-5.4-mini`.",
    )
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="Model label -> price (USD per million tokens), over the built-in table; "
        "a label may end with `*` (`openai:*`).",
    )
    budgets: Budgets = Field(default_factory=Budgets, description="Spending limits of prompt hooks.")
    base_dir: Path | None = Field(
        None, exclude=True, description="Folder of the config file (for prompt includes)."
    )
    hooks_key: str = Field(
        "hooks", exclude=True, description="Where the hooks were written: `hooks` or `spec.hooks`."
    )
    places: dict[str, str] = Field(
        default_factory=dict,
        exclude=True,
        description="A partial configuration's hooks kept at another index than written "
        "(kept place -> written place; see judge.config.load.partial_config).",
    )

    def hooks_for(self, event: str, agent_name: str | None) -> list[tuple[str, int, Hook]]:
        """(level, index, hook) for ``event``: agent level first, then the custom agent's."""
        selected: list[tuple[str, int, Hook]] = [
            ("agent", i, h) for i, h in enumerate(self.hooks.for_event(event))
        ]
        if agent_name and agent_name in self.custom_agents:
            agent = self.custom_agents[agent_name]
            custom = agent.hooks.for_event(event)
            if agent.mode == "shadow":
                custom = [
                    h if h.mode == "shadow" else h.model_copy(update={"mode": "shadow"}) for h in custom
                ]
            selected += [("custom", i, h) for i, h in enumerate(custom)]
        return selected

    def every_hook_for(self, event: str) -> list[tuple[str, int, Hook]]:
        """:meth:`hooks_for` every agent at once: agent level, then each custom agent's
        (for when the running agent is not known)."""
        selected = self.hooks_for(event, None)
        for name in self.custom_agents:
            selected += [entry for entry in self.hooks_for(event, name) if entry[0] == "custom"]
        return selected

    def with_custom_agent(self, name: str, agent: CustomAgent) -> Config:
        """A copy with ``agent`` registered (or replaced) under ``name``."""
        agents = dict(self.custom_agents)
        agents[name] = agent
        return self.model_copy(update={"custom_agents": agents})
