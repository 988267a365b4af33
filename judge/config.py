"""Hook configuration: the YAML/JSON documents users write, validated with located messages.

Two forms are accepted:

* the platform's resource document (``api_version`` / ``kind: ExtendedAgent`` /
  ``metadata`` / ``spec.hooks`` / ``spec.customAgents``), and
* a bare mapping with ``hooks:`` (plus optional ``customAgents:`` and ``models:``).

Every problem is reported with its place, e.g.
``hooks.PostToolUse[1].matcher: invalid regex 'a(': missing ), unterminated subpattern``.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any, Literal

import regex
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from judge.errors import ConfigError
from judge.files import FileTooLarge, NotARegularFile, read_text

#: Events a configuration may define hooks for. ``SubagentStop`` follows the Stop rules.
EVENTS: tuple[str, ...] = ("Stop", "SubagentStop", "PostToolUse", "PreToolUse")
#: Events whose hooks are selected by a tool-name ``matcher``.
TOOL_EVENTS: frozenset[str] = frozenset({"PostToolUse", "PreToolUse"})
#: Events that follow the Stop-gate rules (SPEC §4).
STOP_EVENTS: frozenset[str] = frozenset({"Stop", "SubagentStop"})

MAX_SCRIPT_BYTES = 64 * 1024
#: Seconds a matcher may spend on one tool name.
MATCH_TIMEOUT = 0.1
SUPPORTED_SHEBANGS: tuple[str, ...] = ("#!/bin/bash", "#!/usr/bin/env python3")

FailMode = Literal["allow", "block"]


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
        description="Command hooks: a multi-line script run by its shebang "
        "(`#!/bin/bash` or `#!/usr/bin/env python3`; none means bash). Excludes `command`.",
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
    model: str = Field(
        "ReasoningFast",
        description="Prompt hooks: a tier (Reasoning, ReasoningFast, General, Fast, LongContext) "
        "or a model (`openai:<name>`, `anthropic:<name>`, or a bare name).",
    )
    max_rejections: int = Field(
        3,
        ge=1,
        le=25,
        alias="maxRejections",
        description="Stop prompt hooks: how many rejections end the loop (1-25).",
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

    @field_validator("model")
    @classmethod
    def _model_named(cls, value: str) -> str:
        prefix, sep, rest = value.strip().partition(":")
        if not value.strip() or (
            sep and prefix.lower() in ("openai", "anthropic", "fake") and not rest.strip()
        ):
            raise ValueError(
                f"must name a tier (e.g. ReasoningFast) or a model (e.g. openai:<name>), got {value!r}"
            )
        return value

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
        if first.startswith("#!") and first not in SUPPORTED_SHEBANGS:
            raise ValueError(f"unsupported shebang {first!r}; use one of {', '.join(SUPPORTED_SHEBANGS)}")
        return value

    @model_validator(mode="after")
    def _type_fields(self) -> Hook:
        problems = type_field_problems(self.type, self.prompt, self.command, self.script)
        if problems:
            raise ValueError(problems[0])
        return self

    def fail_mode_for(self, event: str) -> FailMode:
        """The effective failMode: explicit, else `block` for PreToolUse, else `allow`."""
        if self.fail_mode is not None:
            return self.fail_mode
        return "block" if event == "PreToolUse" else "allow"

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
    base_dir: Path | None = Field(
        None, exclude=True, description="Folder of the config file (for prompt includes)."
    )

    def hooks_for(self, event: str, agent_name: str | None) -> list[tuple[str, int, Hook]]:
        """(level, index, hook) for ``event``: agent level first, then the custom agent's."""
        selected: list[tuple[str, int, Hook]] = [
            ("agent", i, h) for i, h in enumerate(self.hooks.for_event(event))
        ]
        if agent_name and agent_name in self.custom_agents:
            custom = self.custom_agents[agent_name].hooks.for_event(event)
            selected += [("custom", i, h) for i, h in enumerate(custom)]
        return selected

    def with_custom_agent(self, name: str, agent: CustomAgent) -> Config:
        """A copy with ``agent`` registered (or replaced) under ``name``."""
        agents = dict(self.custom_agents)
        agents[name] = agent
        return self.model_copy(update={"custom_agents": agents})


# ---------------------------------------------------------------------------
# Loading and located validation

BARE_KEYS = frozenset({"hooks", "customAgents", "models", "name"})
RESOURCE_KEYS = frozenset({"api_version", "apiVersion", "kind", "metadata", "spec", "models"})
SPEC_KEYS_CHECKED = frozenset({"hooks", "customAgents", "models"})


def _loc(parts: tuple[Any, ...]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _pydantic_problems(prefix: str, exc: ValidationError) -> list[str]:
    problems = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if p not in ("function-after[_type_fields()]",))
        msg = str(err["msg"])
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "literal_error" and loc and loc[-1] == "type":
            msg = f"must be 'prompt' or 'command', got {err.get('input')!r}"
        elif err["type"] == "literal_error" and loc and loc[-1] == "failMode":
            msg = f"must be 'allow' or 'block', got {err.get('input')!r}"
        where = _loc(loc)
        if ":" in msg.split(" ", 1)[0] and not where:
            # model-level messages already name their field ("prompt: required ...")
            field, _, rest = msg.partition(":")
            problems.append(f"{prefix}.{field}:{rest}")
        else:
            problems.append(f"{prefix}.{where}: {msg}" if where else f"{prefix}: {msg}")
    return problems


_SNAKE_ALIASES = {"fail_mode": "failMode", "max_rejections": "maxRejections"}


def _located(prefix: str, messages: list[str]) -> list[str]:
    """Prefix model-level messages with the hook's place (``prompt: ...`` -> ``<here>.prompt: ...``)."""
    out = []
    for msg in messages:
        head, sep, rest = msg.partition(":")
        if sep and " " not in head:
            out.append(f"{prefix}.{head}:{rest}")
        else:
            out.append(f"{prefix}: {msg}")
    return out


def _validate_hookset(raw: Any, prefix: str, problems: list[str]) -> HookSet:
    if raw is None:
        return HookSet()
    if not isinstance(raw, dict):
        problems.append(f"{prefix}: must be a mapping of event name to a list of hooks")
        return HookSet()
    good: dict[str, list[Hook]] = {}
    for event, entries in raw.items():
        where = f"{prefix}.{event}"
        if event not in EVENTS:
            problems.append(f"{where}: unknown event {event!r} (expected one of {', '.join(EVENTS)})")
            continue
        if entries is None:
            continue
        if not isinstance(entries, list):
            problems.append(f"{where}: must be a list of hooks")
            continue
        hooks: list[Hook] = []
        for i, entry in enumerate(entries):
            here = f"{where}[{i}]"
            if not isinstance(entry, dict):
                problems.append(f"{here}: must be a mapping, got {type(entry).__name__}")
                continue
            raw_problems = [
                f"{here}.{key}: unknown key (did you mean {alias}?)"
                for key, alias in _SNAKE_ALIASES.items()
                if key in entry
            ]
            raw_problems += _located(
                here,
                type_field_problems(
                    entry.get("type", "prompt"),
                    entry.get("prompt"),
                    entry.get("command"),
                    entry.get("script"),
                ),
            )
            try:
                hook = Hook.model_validate(entry)
            except ValidationError as exc:
                found = _pydantic_problems(here, exc)
                problems.extend(found + [p for p in raw_problems if p not in found])
                continue
            if raw_problems:
                problems.extend(raw_problems)
                continue
            if event in TOOL_EVENTS and hook.matcher is None:
                problems.append(f"{here}.matcher: required for {event} hooks")
            hooks.append(hook)
        good[event] = hooks
    return HookSet.model_validate(good)


def _validate_models(raw: Any, prefix: str, problems: list[str]) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        problems.append(f"{prefix}: must map tier names to model names (strings)")
        return {}
    if raw:
        # Imported here: only configs with a `models:` mapping (i.e. prompt hooks) need it.
        from judge.llm.tiers import TIERS, canonical_tier, parse_model

        for key, value in raw.items():
            if canonical_tier(key) is None:
                problems.append(
                    f"{prefix}.{key}: unknown tier (expected one of {', '.join(TIERS)}, "
                    "or ReasoningHeavy, GeneralPurpose, SmallFast, Eval)"
                )
            elif canonical_tier(value) is not None:
                problems.append(f"{prefix}.{key}: maps to another tier ({value!r}); name a model")
            else:
                try:
                    parse_model(value, {})
                except ValueError as exc:
                    problems.append(f"{prefix}.{key}: {exc}")
    return dict(raw)


def _validate_custom_agents(raw: Any, prefix: str, problems: list[str]) -> dict[str, CustomAgent]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(f"{prefix}: must be a mapping of custom-agent name to its definition")
        return {}
    agents: dict[str, CustomAgent] = {}
    for name, body in raw.items():
        here = f"{prefix}.{name}"
        if not isinstance(body, dict):
            problems.append(f"{here}: must be a mapping")
            continue
        hookset = _validate_hookset(body.get("hooks"), f"{here}.hooks", problems)
        rest = {k: v for k, v in body.items() if k != "hooks"}
        if "instructions" in rest and not isinstance(rest["instructions"], (str, type(None))):
            problems.append(f"{here}.instructions: must be a string")
            rest.pop("instructions")
        agents[str(name)] = CustomAgent.model_validate({**rest, "hooks": hookset})
    return agents


def validate_custom_agent(body: Any, prefix: str = "properties") -> CustomAgent:
    """Validate one custom agent definition (``{"instructions": ..., "hooks": {...}}``)."""
    problems: list[str] = []
    if not isinstance(body, dict):
        raise ConfigError([f"{prefix}: must be a JSON object"])
    agents = _validate_custom_agents({"_": body}, prefix, problems)
    problems = [p.replace(f"{prefix}._", prefix, 1) for p in problems]
    if problems:
        raise ConfigError(problems)
    return agents["_"]


def config_from_data(data: Any, base_dir: Path | None = None, source: str | None = None) -> Config:
    """Validate a parsed document (either form) into a :class:`Config`."""
    problems: list[str] = []
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError([f"<root>: must be a mapping, got {type(data).__name__}"], source)
    name: str | None = None
    if "spec" in data or "kind" in data or "api_version" in data or "apiVersion" in data:
        for key in data:
            if key not in RESOURCE_KEYS:
                problems.append(f"{key}: unknown key")
        kind = data.get("kind")
        if kind is not None and kind != "ExtendedAgent":
            problems.append(f"kind: expected 'ExtendedAgent', got {kind!r}")
        metadata = data.get("metadata") or {}
        if not isinstance(metadata, dict):
            problems.append("metadata: must be a mapping")
            metadata = {}
        raw_name = metadata.get("name")
        name = str(raw_name) if raw_name is not None else None
        spec = data.get("spec") or {}
        if not isinstance(spec, dict):
            problems.append("spec: must be a mapping")
            spec = {}
        hooks = _validate_hookset(spec.get("hooks"), "spec.hooks", problems)
        agents = _validate_custom_agents(spec.get("customAgents"), "spec.customAgents", problems)
        models = _validate_models(data.get("models", spec.get("models")), "models", problems)
    else:
        for key in data:
            if key not in BARE_KEYS:
                problems.append(f"{key}: unknown key (expected hooks, customAgents, models)")
        raw_name = data.get("name")
        name = str(raw_name) if raw_name is not None else None
        hooks = _validate_hookset(data.get("hooks"), "hooks", problems)
        agents = _validate_custom_agents(data.get("customAgents"), "customAgents", problems)
        models = _validate_models(data.get("models"), "models", problems)
    if problems:
        raise ConfigError(problems, source)
    return Config(name=name, hooks=hooks, customAgents=agents, models=models, base_dir=base_dir)


def duplicate_key_problems(node: yaml.Node) -> list[str]:
    """Located messages for mapping keys that appear twice (``hooks.Stop: duplicate key 'Stop' at line 5``).

    YAML and ``json`` both keep the last value silently, so a second ``Stop:`` would
    quietly drop the first list of hooks. Merge keys (``<<``) may be overridden.
    """
    problems: list[str] = []
    seen_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, tuple[Any, ...]]] = [(node, ())]
    while stack:
        current, path = stack.pop()
        if id(current) in seen_nodes:  # aliases: walk each node once
            continue
        seen_nodes.add(id(current))
        if isinstance(current, yaml.SequenceNode):
            stack.extend((item, (*path, i)) for i, item in reversed(list(enumerate(current.value))))
        elif isinstance(current, yaml.MappingNode):
            keys: set[tuple[str, str]] = set()
            children: list[tuple[yaml.Node, tuple[Any, ...]]] = []
            for key_node, value_node in current.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = (key_node.tag, key_node.value)
                if key in keys:
                    where = _loc((*path, key_node.value))
                    problems.append(
                        f"{where}: duplicate key {key_node.value!r} at line {key_node.start_mark.line + 1}"
                    )
                keys.add(key)
                children.append((value_node, (*path, key_node.value)))
            stack.extend(reversed(children))
    return problems


def parse_yaml(text: str, loader_class: type[yaml.SafeLoader] = yaml.SafeLoader) -> tuple[Any, list[str]]:
    """The single YAML document of ``text`` and its duplicate-key problems.

    With duplicate keys the document is not built: ``(None, problems)``. Malformed YAML
    raises :class:`yaml.YAMLError`, a document nested too deeply :class:`RecursionError`.
    """
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, []
        duplicates = duplicate_key_problems(node)
        if duplicates:
            return None, duplicates
        return loader.construct_document(node), []
    finally:
        loader.dispose()  # type: ignore[no-untyped-call]


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    if context and context_mark is not None:
        start = f"line {context_mark.line + 1}, column {context_mark.column + 1}"
        problem += f" ({context} that starts at {start})"
    return f"malformed YAML{where}: {problem}"


def unique_object(pairs: list[tuple[str, Any]], duplicates: list[str]) -> dict[str, Any]:
    """``json`` object hook: the object, noting in ``duplicates`` each key given twice
    (``json`` alone keeps the last value silently)."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            duplicates.append(key)
        obj[key] = value
    return obj


def _json_duplicates(text: str) -> list[str]:
    """Located duplicate keys of a JSON document that ``json`` parsed (it keeps the last silently)."""
    found: list[str] = []
    json.loads(text, object_pairs_hook=functools.partial(unique_object, duplicates=found))
    if not found:
        return []
    try:
        # Strict JSON has no raw tabs inside strings, so this keeps lines and meaning.
        node = yaml.compose(text.replace("\t", " "), Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        node = None
    located = duplicate_key_problems(node) if node is not None else []
    return located or [f"<root>: duplicate key {key!r}" for key in found]


def parse_document(text: str, source: str = "<config>") -> Any:
    """Parse YAML or JSON text (JSON is YAML, but JSON errors read better from json).

    Duplicate mapping keys are an error (both parsers would keep the last one silently).
    """
    stripped = text.lstrip()
    if stripped.startswith("{") or stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                [f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"], source
            ) from None
        except RecursionError:
            raise ConfigError(["malformed JSON: nested too deeply"], source) from None
        except ValueError as exc:  # e.g. an integer over Python's 4300-digit limit
            raise ConfigError([f"malformed JSON: {exc}"], source) from None
        duplicates = _json_duplicates(text)
        if duplicates:
            raise ConfigError(duplicates, source)
        return data
    try:
        data, duplicates = parse_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError([_yaml_problem(exc)], source) from None
    except RecursionError:
        raise ConfigError(["malformed YAML: nested too deeply"], source) from None
    except (ValueError, TypeError, OverflowError) as exc:  # a scalar its tag cannot build (2001-13-45)
        raise ConfigError([f"malformed YAML: {exc}"], source) from None
    if duplicates:
        raise ConfigError(duplicates, source)
    return data


def load_config(path: str | Path) -> Config:
    """Read, parse and validate a config file (YAML or JSON)."""
    p = Path(path)
    try:
        text = read_text(p, "config file")
    except FileNotFoundError:
        raise ConfigError([f"file not found: {p}"], str(p)) from None
    except (NotARegularFile, FileTooLarge) as exc:
        raise ConfigError([str(exc)], str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([f"cannot read {p}: {exc}"], str(p)) from None
    return config_from_data(parse_document(text, str(p)), base_dir=p.resolve().parent, source=str(p))


def config_json_schema() -> dict[str, Any]:
    """JSON Schema of the bare configuration form (what `judge config schema` prints)."""

    class HooksDocument(BaseModel):
        """A judge hook configuration (bare form). The resource form nests the same
        `hooks` and `customAgents` under `spec`."""

        model_config = ConfigDict(extra="forbid", title="judge hook configuration")
        hooks: HookSet = Field(default_factory=HookSet, description="Agent-level hooks.")
        customAgents: dict[str, CustomAgent] = Field(
            default_factory=dict, description="Custom agents and their hooks."
        )
        models: dict[str, str] = Field(default_factory=dict, description="Tier -> model mapping.")

    return HooksDocument.model_json_schema(by_alias=True)
