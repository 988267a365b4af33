"""Located validation of whole configuration documents (either form) and loading files.

Two forms are accepted:

* the platform's resource document (``api_version`` / ``kind: ExtendedAgent`` /
  ``metadata`` / ``spec.hooks`` / ``spec.customAgents``), and
* a bare mapping with ``hooks:`` (plus optional ``customAgents:`` and ``models:``).

Every problem is reported with its place, e.g.
``hooks.PostToolUse[1].matcher: invalid regex 'a(': missing ), unterminated subpattern``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from judge.config.models import (
    EVENTS,
    TOOL_EVENTS,
    Budgets,
    Config,
    CustomAgent,
    Hook,
    HookSet,
    ModelPrice,
    type_field_problems,
)
from judge.config.parse import parse_document, place
from judge.errors import ConfigError
from judge.files import FileTooLarge, NotARegularFile, read_text

if TYPE_CHECKING:
    from judge.hooks.calibration import Source

BARE_KEYS = frozenset({"hooks", "customAgents", "models", "name", "prices", "budgets"})
RESOURCE_KEYS = frozenset(
    {"api_version", "apiVersion", "kind", "metadata", "spec", "models", "prices", "budgets"}
)


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
        where = place(loc)
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


#: Keys of a custom agent that judge reads (its other properties are the platform's).
_AGENT_KEYS = ("hooks", "mode", "instructions")


def _misplaced_keys(rest: dict[str, Any], here: str) -> list[str]:
    """Keys of a custom agent that look like judge's but are not: a misspelt ``hooks`` would
    otherwise leave the agent without hooks, silently."""
    problems = []
    for key in rest:
        if key in _AGENT_KEYS:
            continue
        if key in ("customAgents", "custom_agents"):
            problems.append(f"{here}.{key}: custom agents cannot be nested; define them at the top level")
            continue
        # Only near misses of judge's keys: other keys (a "model", "tools") are the platform's.
        lower = str(key).lower()
        if lower in _AGENT_KEYS or lower.startswith("hook"):
            guess = lower if lower in _AGENT_KEYS else "hooks"
            problems.append(f"{here}.{key}: unknown key (did you mean {guess}?)")
    return problems


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
        problems += _misplaced_keys(rest, here)
        if "instructions" in rest and not isinstance(rest["instructions"], (str, type(None))):
            problems.append(f"{here}.instructions: must be a string")
            rest.pop("instructions")
        if rest.get("mode", "enforce") not in ("enforce", "shadow"):
            problems.append(f"{here}.mode: must be 'enforce' or 'shadow', got {rest['mode']!r}")
            rest.pop("mode")
        agents[str(name)] = CustomAgent.model_validate({**rest, "hooks": hookset})
    return agents


def _validate_prices(raw: Any, problems: list[str]) -> dict[str, ModelPrice]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(
            "prices: must be a mapping of model label -> {input, output} (USD per million tokens)"
        )
        return {}
    prices: dict[str, ModelPrice] = {}
    for label, value in raw.items():
        try:
            prices[str(label)] = ModelPrice.model_validate(value)
        except ValidationError as exc:
            problems.extend(_pydantic_problems(f"prices.{label}", exc))
    return prices


def _validate_budgets(raw: Any, problems: list[str]) -> Budgets:
    if raw is None:
        return Budgets()
    try:
        return Budgets.model_validate(raw)
    except ValidationError as exc:
        problems.extend(_pydantic_problems("budgets", exc))
        return Budgets()


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


def config_from_data(
    data: Any,
    base_dir: Path | None = None,
    source: str | None = None,
    calibration: Mapping[str, Source] | None = None,
) -> Config:
    """Validate a parsed document (either form) into a :class:`Config`, with the calibration
    of its calibrated hooks found (:func:`judge.hooks.calibration.calibrated`: the files
    they name, read now, or ``calibration``'s texts of them)."""
    problems: list[str] = []
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError([f"<root>: must be a mapping, got {type(data).__name__}"], source)
    name: str | None = None
    resource = "spec" in data or "kind" in data or "api_version" in data or "apiVersion" in data
    if resource:
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
                problems.append(f"{key}: unknown key (expected hooks, customAgents, models, prices, budgets)")
        raw_name = data.get("name")
        name = str(raw_name) if raw_name is not None else None
        hooks = _validate_hookset(data.get("hooks"), "hooks", problems)
        agents = _validate_custom_agents(data.get("customAgents"), "customAgents", problems)
        models = _validate_models(data.get("models"), "models", problems)
    prices = _validate_prices(data.get("prices"), problems)
    budgets = _validate_budgets(data.get("budgets"), problems)
    if problems:
        raise ConfigError(problems, source)
    config = Config(
        name=name,
        hooks=hooks,
        customAgents=agents,
        models=models,
        prices=prices,
        budgets=budgets,
        base_dir=base_dir,
        hooks_key="spec.hooks" if resource else "hooks",
    )
    return _calibrated(config, calibration)


def _calibrated(config: Config, sources: Mapping[str, Source] | None) -> Config:
    """``config`` with its hooks' calibration found (only configurations that have some
    import the calibration code)."""
    if not any(h.calibration for e in EVENTS for _, _, h in config.every_hook_for(e)):
        return config
    from judge.hooks.calibration import calibrated

    return calibrated(config, sources)


def read_config_text(path: str | Path) -> str:
    """A config file's text (bounded), or a :class:`ConfigError` saying why not."""
    p = Path(path)
    try:
        return read_text(p, "config file")
    except FileNotFoundError:
        raise ConfigError([f"file not found: {p}"], str(p)) from None
    except (NotARegularFile, FileTooLarge) as exc:
        raise ConfigError([str(exc)], str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([f"cannot read {p}: {exc}"], str(p)) from None


def config_from_text(text: str, path: str | Path, calibration: Mapping[str, Source] | None = None) -> Config:
    """Parse and validate ``text`` as the config file ``path`` (relative paths in it are
    relative to that file's folder); ``calibration`` as :func:`config_from_data`."""
    p = Path(path)
    data = parse_document(text, str(p))
    return config_from_data(data, base_dir=p.resolve().parent, source=str(p), calibration=calibration)


def load_config(path: str | Path) -> Config:
    """Read, parse and validate a config file (YAML or JSON)."""
    return config_from_text(read_config_text(path), path)
