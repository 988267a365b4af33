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

from judge.config.entries import pydantic_problems, validate_hookset
from judge.config.models import EVENTS, Budgets, Config, CustomAgent, ModelPrice
from judge.config.parse import parse_document
from judge.errors import ConfigError
from judge.files import FileTooLarge, NotARegularFile, read_text
from judge.suggest import closest, did_you_mean

if TYPE_CHECKING:
    from judge.hooks.calibration import Source

BARE_KEYS = frozenset({"hooks", "customAgents", "models", "name", "prices", "budgets"})
RESOURCE_KEYS = frozenset(
    {"api_version", "apiVersion", "kind", "metadata", "spec", "models", "prices", "budgets"}
)


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
        from judge.llm.tiers import ALIAS_NAMES, TIERS, canonical_tier, parse_model

        for key, value in raw.items():
            if canonical_tier(key) is None:
                hint = did_you_mean(key, [*TIERS, *ALIAS_NAMES]) or (
                    f" (expected one of {', '.join(TIERS)}, or {', '.join(ALIAS_NAMES)})"
                )
                problems.append(f"{prefix}.{key}: unknown tier{hint}")
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
        # (a platform's "model" is not a misspelt "mode": only case slips of the others)
        lower = str(key).lower()
        near_hooks = closest(str(key), ("hooks",)) is not None or lower.startswith("hook")
        guess = lower if lower in _AGENT_KEYS else "hooks" if near_hooks else None
        if guess is not None:
            problems.append(f"{here}.{key}: unknown key (did you mean {guess}?)")
    return problems


def _validate_custom_agents(
    raw: Any, prefix: str, problems: list[str], places: dict[str, str]
) -> dict[str, CustomAgent]:
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
        hookset = validate_hookset(body.get("hooks"), f"{here}.hooks", problems, places)
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
            problems.extend(pydantic_problems(f"prices.{label}", exc, ModelPrice))
    return prices


def _validate_budgets(raw: Any, problems: list[str]) -> Budgets:
    if raw is None:
        return Budgets()
    try:
        return Budgets.model_validate(raw)
    except ValidationError as exc:
        problems.extend(pydantic_problems("budgets", exc, Budgets))
        return Budgets()


def validate_custom_agent(body: Any, prefix: str = "properties") -> CustomAgent:
    """Validate one custom agent definition (``{"instructions": ..., "hooks": {...}}``)."""
    problems: list[str] = []
    if not isinstance(body, dict):
        raise ConfigError([f"{prefix}: must be a JSON object"])
    agents = _validate_custom_agents({"_": body}, prefix, problems, {})
    problems = [p.replace(f"{prefix}._", prefix, 1) for p in problems]
    if problems:
        raise ConfigError(problems)
    return agents["_"]


def _resource_parts(data: dict[str, Any], problems: list[str], places: dict[str, str]) -> dict[str, Any]:
    for key in data:
        if key not in RESOURCE_KEYS:
            problems.append(f"{key}: unknown key{did_you_mean(str(key), RESOURCE_KEYS)}")
    kind = data.get("kind")
    if kind is not None and kind != "ExtendedAgent":
        problems.append(f"kind: expected 'ExtendedAgent', got {kind!r}")
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        problems.append("metadata: must be a mapping")
        metadata = {}
    raw_name = metadata.get("name")
    spec = data.get("spec") or {}
    if not isinstance(spec, dict):
        problems.append("spec: must be a mapping")
        spec = {}
    return {
        "name": str(raw_name) if raw_name is not None else None,
        "hooks": validate_hookset(spec.get("hooks"), "spec.hooks", problems, places),
        "customAgents": _validate_custom_agents(
            spec.get("customAgents"), "spec.customAgents", problems, places
        ),
        "models": _validate_models(data.get("models", spec.get("models")), "models", problems),
        "hooks_key": "spec.hooks",
    }


def _bare_parts(data: dict[str, Any], problems: list[str], places: dict[str, str]) -> dict[str, Any]:
    for key in data:
        if key not in BARE_KEYS:
            near = did_you_mean(str(key), BARE_KEYS)
            problems.append(
                f"{key}: unknown key{near or ' (expected hooks, customAgents, models, prices, budgets)'}"
            )
    raw_name = data.get("name")
    return {
        "name": str(raw_name) if raw_name is not None else None,
        "hooks": validate_hookset(data.get("hooks"), "hooks", problems, places),
        "customAgents": _validate_custom_agents(data.get("customAgents"), "customAgents", problems, places),
        "models": _validate_models(data.get("models"), "models", problems),
        "hooks_key": "hooks",
    }


def partial_config(
    data: Any, base_dir: Path | None = None, source: str | None = None
) -> tuple[Config, list[str]]:
    """A parsed document's problems, and the configuration of what validated (with the
    hooks that had problems kept without the keys the problems are about): what
    ``judge validate`` checks further, so one run reports every problem. Never run it."""
    problems: list[str] = []
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError([f"<root>: must be a mapping, got {type(data).__name__}"], source)
    places: dict[str, str] = {}
    resource = "spec" in data or "kind" in data or "api_version" in data or "apiVersion" in data
    parts = _resource_parts(data, problems, places) if resource else _bare_parts(data, problems, places)
    prices = _validate_prices(data.get("prices"), problems)
    budgets = _validate_budgets(data.get("budgets"), problems)
    config = Config(prices=prices, budgets=budgets, base_dir=base_dir, places=places, **parts)
    return config, problems


def config_from_data(
    data: Any,
    base_dir: Path | None = None,
    source: str | None = None,
    calibration: Mapping[str, Source] | None = None,
) -> Config:
    """Validate a parsed document (either form) into a :class:`Config`, with the calibration
    of its calibrated hooks found (:func:`judge.hooks.calibration.calibrated`: the files
    they name, read now, or ``calibration``'s texts of them)."""
    config, problems = partial_config(data, base_dir, source)
    if problems:
        raise ConfigError(problems, source)
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


def load_partial_config(path: str | Path) -> tuple[Config, list[str]]:
    """:func:`partial_config` of a config file (a :class:`ConfigError` when it cannot even
    be read or parsed)."""
    p = Path(path)
    data = parse_document(read_config_text(p), str(p))
    return partial_config(data, base_dir=p.resolve().parent, source=str(p))
