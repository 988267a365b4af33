"""Located validation of hook entries: one hook set (event -> list of hooks), each hook
checked against :class:`~judge.config.models.Hook` with its place in the document
(``hooks.PostToolUse[1].matcher: ...``) and the near miss of an unknown key or event.

For ``judge validate``, hooks with problems are also kept in a *partial* configuration,
without the keys their problems are about (:func:`salvaged`), so the deeper checks
(models, templates) report on the rest of them in the same run; such a configuration is
never run (loading raises on any problem).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from judge.config.models import EVENTS, TOOL_EVENTS, Hook, HookSet, type_field_problems
from judge.config.parse import place
from judge.suggest import did_you_mean


def keys_of(model: type[BaseModel]) -> list[str]:
    """The keys a document may use for ``model`` (aliases where a field has one)."""
    return [field.alias or name for name, field in model.model_fields.items()]


def pydantic_problems(prefix: str, exc: ValidationError, model: type[BaseModel]) -> list[str]:
    problems = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if p not in ("function-after[_type_fields()]",))
        msg = str(err["msg"])
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if err["type"] == "extra_forbidden":
            msg = "unknown key" + (did_you_mean(str(loc[-1]), keys_of(model)) if loc else "")
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


_SNAKE_ALIASES = {
    "fail_mode": "failMode",
    "max_rejections": "maxRejections",
    "background_tasks": "backgroundTasks",
}


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


def validate_hookset(raw: Any, prefix: str, problems: list[str], places: dict[str, str]) -> HookSet:
    """The hooks of ``raw`` (problems appended to ``problems``); hooks kept for the checks at
    another index than written are noted in ``places`` (kept place -> written place)."""
    if raw is None:
        return HookSet()
    if not isinstance(raw, dict):
        problems.append(f"{prefix}: must be a mapping of event name to a list of hooks")
        return HookSet()
    good: dict[str, list[Hook]] = {}
    for event, entries in raw.items():
        where = f"{prefix}.{event}"
        if event not in EVENTS:
            problems.append(f"{where}: {unknown_event(str(event))}")
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
                found = pydantic_problems(here, exc, Hook)
                problems.extend(found + [p for p in raw_problems if p not in found])
                _keep_for_checks(salvaged(entry, exc), event, i, here, hooks, places)
                continue
            if raw_problems:
                problems.extend(raw_problems)
                _keep_for_checks(hook, event, i, here, hooks, places)
                continue
            if event in TOOL_EVENTS and hook.matcher is None:
                problems.append(f"{here}.matcher: required for {event} hooks")
            if event in TOOL_EVENTS:  # options of the Stop rules would do nothing here
                problems += [
                    f"{here}.{name}: only for Stop and SubagentStop hooks" for name in hook.stop_options_set()
                ]
            _keep_for_checks(hook, event, i, here, hooks, places)
        good[event] = hooks
    return HookSet.model_validate(good)


def unknown_event(event: str) -> str:
    """The problem of an event name judge does not know, with the near miss (``stop``)."""
    hint = did_you_mean(event, EVENTS) or f" (expected one of {', '.join(EVENTS)})"
    return f"unknown event {event!r}{hint}"


def salvaged(entry: dict[str, Any], exc: ValidationError) -> Hook | None:
    """``entry`` without the keys its problems are about (a missing prompt or command
    stood in for), so the checks of ``judge validate`` still look at the rest of it (its
    model, its template) in the same run; None when even that is not a hook. Never run."""
    bad = {str(err["loc"][0]) for err in exc.errors() if err["loc"]}
    kept = {k: v for k, v in entry.items() if k not in bad and k not in _SNAKE_ALIASES}
    if kept.get("type", "prompt") == "prompt":
        kept.setdefault("prompt", "$ARGUMENTS")
        kept.pop("command", None)
        kept.pop("script", None)
    elif "command" not in kept and "script" not in kept:
        kept["command"] = "true"
    try:
        return Hook.model_validate(kept)
    except ValidationError:
        return None


def _keep_for_checks(
    hook: Hook | None, event: str, index: int, here: str, hooks: list[Hook], places: dict[str, str]
) -> None:
    """Keep ``hook`` (written at ``here``) in the event's list, noting its written place
    when hooks before it were dropped."""
    if hook is None:
        return
    kept_at = here.rsplit("[", 1)[0] + f"[{len(hooks)}]"
    if kept_at != here:
        places[kept_at] = here
    hooks.append(hook)
