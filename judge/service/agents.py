"""Custom agents of the HTTP service: name checks and PUT bodies (platform form or
resource document) validated into a :class:`~judge.config.CustomAgent`."""

from __future__ import annotations

import copy
import re
from pathlib import PurePath
from typing import Any

from judge.config import EVENTS, Config, CustomAgent, Hook, validate_custom_agent
from judge.config.models import PROMPT_ONLY_FIELDS
from judge.errors import ApiError, ConfigError

AGENT_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,127}\Z")  # \Z: no newline after


def check_name(name: str) -> str:
    if not AGENT_NAME.match(name):
        raise ApiError(
            400,
            f"invalid agent name {name[:80]!r}: use 1-128 letters, digits, '_', '.', '-' "
            "(starting with a letter or digit)",
        )
    return name


def agent_properties(agent: CustomAgent) -> dict[str, Any]:
    """The stored (normalised) properties of a validated custom agent: each hook with its
    options, a command hook without the prompt-only defaults (``model``,
    ``maxRejections``, ``evidence``) it never uses."""
    props = agent.model_dump(mode="json", by_alias=True, exclude_none=True)
    props["hooks"] = {
        event: [_hook_json(hook) for hook in agent.hooks.for_event(event)]
        for event in EVENTS
        if agent.hooks.for_event(event)
    }
    cleaned: dict[str, Any] = without_command_defaults(props)
    return cleaned


def _hook_json(hook: Hook) -> dict[str, Any]:
    unused: set[str] = set()
    if hook.type == "command":
        unused = {name for name in PROMPT_ONLY_FIELDS if name not in hook.model_fields_set}
    data: dict[str, Any] = hook.model_dump(mode="json", by_alias=True, exclude_none=True, exclude=unused)
    return data


def without_command_defaults(props: Any) -> Any:
    """A copy of stored properties without the command-only defaults (``cwd``, ``env``) that
    were once stored on prompt hooks too, where validation refuses them."""
    props = copy.deepcopy(props)
    hooks = props.get("hooks") if isinstance(props, dict) else None
    for entries in hooks.values() if isinstance(hooks, dict) else ():
        for hook in entries if isinstance(entries, list) else ():
            if isinstance(hook, dict) and hook.get("type") == "prompt":
                if hook.get("cwd") == "temp":
                    hook.pop("cwd")
                if hook.get("env") == []:
                    hook.pop("env")
    return props


def _calibration_files_outside(agent: CustomAgent, prefix: str) -> list[str]:
    """A calibration file of an agent registered over HTTP stays inside the service's
    configuration folder: the service reads it, and a client must not point the service
    at its other files (nothing of a file is ever shown, but whether it exists would be)."""
    problems = []
    for event in EVENTS:
        for i, hook in enumerate(agent.hooks.for_event(event)):
            if hook.calibration is None:
                continue
            path = PurePath(hook.calibration.file)
            if path.is_absolute() or ".." in path.parts or hook.calibration.file.startswith("~"):
                problems.append(
                    f"{prefix}.hooks.{event}[{i}].calibration.file: must be a relative path inside the "
                    "service's configuration folder for agents registered over HTTP"
                )
    return problems


def agent_from_document(name: str, doc: Any, service: Config | None = None) -> CustomAgent:
    """Validate a PUT body: the platform form or the YAML/JSON resource document. With the
    service's configuration, also what ``judge serve --config`` checks before it starts
    (templates compile and render, models resolve): a hook that can never run would
    otherwise answer every call per its failMode."""
    if not isinstance(doc, dict):
        raise ApiError(400, f"body must be an object, got {type(doc).__name__}")
    if "properties" in doc:
        unknown = sorted(set(doc) - {"name", "properties"})
        if unknown:
            raise ApiError(400, "invalid custom agent", [f"{k}: unknown key" for k in unknown])
        given = doc.get("name")
        if given is not None and given != name:
            raise ApiError(400, f"name in the body ({given!r:.80}) does not match the URL ({name!r})")
        body, prefix = doc["properties"], "properties"
    elif "spec" in doc or "kind" in doc:
        unknown = sorted(set(doc) - {"api_version", "apiVersion", "kind", "metadata", "spec"})
        problems = [f"{k}: unknown key" for k in unknown]
        kind = doc.get("kind")
        if kind is not None and kind != "ExtendedAgent":
            problems.append(f"kind: expected 'ExtendedAgent', got {kind!r:.80}")
        metadata = doc.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            problems.append("metadata: must be a mapping")
        elif metadata and metadata.get("name") not in (None, name):
            problems.append(f"metadata.name: {metadata.get('name')!r:.80} does not match the URL ({name!r})")
        if problems:
            raise ApiError(400, "invalid custom agent", problems)
        body, prefix = doc.get("spec") or {}, "spec"
    else:
        raise ApiError(
            400,
            'expected {"name": ..., "properties": {"instructions": ..., "hooks": {...}}} '
            "or a resource document with spec",
        )
    try:
        agent = validate_custom_agent(body, prefix)
    except ConfigError as exc:
        raise ApiError(400, "invalid custom agent", exc.problems) from None
    # A hook's `env` passes the service's own variables (its API keys among them) to the
    # hook: only the people who write the service's --config may name them.
    named = [
        f"{prefix}.hooks.{event}[{i}].env: not allowed for agents registered over HTTP "
        "(the service's environment stays private); put such hooks in the --config file"
        for event in EVENTS
        for i, hook in enumerate(agent.hooks.for_event(event))
        if hook.env
    ]
    named += _calibration_files_outside(agent, prefix)
    if named:
        raise ApiError(400, "invalid custom agent", named)
    if service is not None:
        from judge.validation import check_config

        trial = service.model_copy(update={"custom_agents": {name: agent}})
        place = trial.hooks_key.removesuffix("hooks") + f"customAgents.{name}."
        errors = [
            str(f).replace(place, f"{prefix}.", 1)
            for f in check_config(trial)
            if f.severity == "error" and f.where.startswith(place)
        ]
        if errors:
            raise ApiError(400, "invalid custom agent", errors)
    return agent
