"""Checks of model names: tiers, provider prefixes and ``fake:`` forms, with near-miss hints.

The runtime is lenient on purpose (a bare name goes to the default provider), so a typo
such as ``ReasoningFats`` or ``opneai:gpt-4o`` would only fail at the first judgement,
as a hook error that ``failMode: allow`` turns into a silent pass. These checks run
before that: ``judge validate``, ``judge serve`` and ``judge claude-code``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from judge.errors import HookError
from judge.llm.tiers import ALIASES, BASE_URL_VARS, PROVIDERS, TIERS, canonical_tier, resolve_model
from judge.redact import redact_url
from judge.suggest import closest

#: ``fake:<mode>`` forms (besides ``fake:<script file>``).
FAKE_MODES: tuple[str, ...] = (
    "allow",
    "block",
    "reasonless",
    "impossible",
    "error",
    "heuristic",
    "optimizer",
)
#: Fake modes that take a reason after them (``fake:block:<reason>``).
_WITH_REASON = ("block", "impossible")
_TIER_NAMES: dict[str, str] = {t.lower(): t for t in TIERS} | {alias: alias for alias in ALIASES}


def _close(word: str, choices: list[str]) -> str | None:
    return closest(word.lower(), choices)


#: The prefix of the variables that choose a tier's model (``JUDGE_MODEL_REASONINGFAST``).
TIER_VARIABLE = "JUDGE_MODEL_"


def tier_variable_problems(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """(variable, problem) of each ``JUDGE_MODEL_*`` variable no tier reads: a misspelt
    one (``JUDGE_MODEL_REASONINGFATS``) would be ignored in silence, and the tier served
    by another model than the one meant."""
    known = {tier.upper(): tier for tier in TIERS}
    found = []
    for name in sorted(env):
        if not name.startswith(TIER_VARIABLE) or name[len(TIER_VARIABLE) :] in known:
            continue
        suffix = name[len(TIER_VARIABLE) :]
        tier = canonical_tier(suffix) or closest(suffix, known)
        hint = f" (did you mean {TIER_VARIABLE}{tier.upper()}?)" if tier else ""
        found.append(
            (
                f"${name}",
                f"no tier reads this variable{hint}: it is ignored; the tiers' variables are "
                + ", ".join(TIER_VARIABLE + t for t in known),
            )
        )
    return found


def fake_problem(spec: str, base_dir: Path | None) -> str | None:
    """What is wrong with ``fake:<spec>``, or None (files are resolved as at run time)."""
    mode, sep, rest = spec.partition(":")
    if mode in FAKE_MODES:
        if sep and mode not in _WITH_REASON:
            return f"fake:{mode} takes nothing after it, got 'fake:{spec}'"
        return None
    path = Path(spec).expanduser()
    if not path.is_absolute() and base_dir is not None and (base_dir / path).exists():
        path = base_dir / path
    if path.is_file():
        from judge.llm.providers.fake import script_provider

        try:
            script_provider(path, f"fake:{spec}")
        except HookError as exc:
            return str(exc)
        return None
    near = _close(mode, list(FAKE_MODES))
    if near is not None:
        suggestion = f"fake:{near}" + (f":{rest}" if sep and near in _WITH_REASON else "")
        return f"unknown fake model 'fake:{spec}' (did you mean {suggestion}?)"
    return (
        f"unknown fake model 'fake:{spec}': use fake:allow, fake:block[:reason], fake:reasonless, "
        "fake:impossible[:reason], fake:error, fake:heuristic, fake:optimizer or fake:<script.json|yaml> "
        "(no such file)"
    )


def explicit_model_problem(model: str, base_dir: Path | None) -> str | None:
    """What is wrong with a model that is not a tier (``openai:x``, ``fake:allow``, bare)."""
    text = model.strip()
    prefix, sep, rest = text.partition(":")
    if sep:
        provider = prefix.lower()
        if provider == "fake":
            return fake_problem(rest.strip(), base_dir)
        if provider in PROVIDERS:
            return None
        near = _close(provider, list(PROVIDERS))
        if near is not None:
            return f"unknown provider {prefix!r} in {text!r} (did you mean {near}:{rest}?)"
        return (
            f"unknown provider {prefix!r} in {text!r}: use openai:, anthropic: or fake: "
            f"(a model name containing ':' needs its provider first, e.g. openai:{text})"
        )
    near = _close(text, list(_TIER_NAMES))
    if near is not None:
        tier = _TIER_NAMES[near]
        return f"unknown tier {text!r} (did you mean {tier}?)"
    return None  # a bare model name, served by the default provider


def model_problem(model: str, env: Mapping[str, str], base_dir: Path | None) -> str | None:
    """What is wrong with a hook's ``model``; for a tier, the model ``$JUDGE_MODEL_<TIER>``
    maps it to is checked too (the config's ``models:`` values are checked where written)."""
    tier = canonical_tier(model)
    if tier is None:
        return explicit_model_problem(model, base_dir)
    variable = f"JUDGE_MODEL_{tier.upper()}"
    configured = env.get(variable)
    if not configured:
        return None  # the config's models: mapping, or the built-in default
    if canonical_tier(configured) is not None:
        return f"tier {tier} maps to another tier ({configured!r} from ${variable}); name a model"
    problem = explicit_model_problem(configured, base_dir)
    return f"tier {tier} is {configured!r} (from ${variable}): {problem}" if problem else None


#: Fake judges that reject without ever citing the transcript (``evidence: required``).
NON_CITING_FAKES: frozenset[str] = frozenset({"block", "reasonless", "impossible", "heuristic"})


def cannot_cite(model: str, models: Mapping[str, str], env: Mapping[str, str]) -> bool:
    """Whether ``model`` resolves to a fake judge whose rejections never carry citations."""
    try:
        resolved = resolve_model(model, models, env)
    except ValueError:
        return False
    return resolved.provider == "fake" and resolved.name.partition(":")[0] in NON_CITING_FAKES


#: A prompt hook's timeout below this, with its model on a local server, gets a warning.
LOCAL_TIMEOUT_HINT = 60


def local_timeout_problem(
    model: str, timeout: int, models: Mapping[str, str], env: Mapping[str, str]
) -> str | None:
    """A warning when ``model`` is served from this machine or a private network (a local
    model server: often CPU, 10-60 s a judgement) and ``timeout`` is below
    :data:`LOCAL_TIMEOUT_HINT`; the hook would time out and fall to its failMode."""
    from judge.llm.providers.schemas import local_server

    if timeout >= LOCAL_TIMEOUT_HINT:
        return None
    try:
        resolved = resolve_model(model, models, env)
    except ValueError:
        return None
    url = env.get(BASE_URL_VARS.get(resolved.provider, ""), "")
    if not local_server(url):
        return None
    return (
        f"{timeout}s for {resolved.label} on the local server {redact_url(url)}: a judgement there takes "
        f"2-4 requests, often 10-60 s on a CPU; below {LOCAL_TIMEOUT_HINT}s it may time out and "
        "fall to its failMode (docs/models.md, knobs for slow hardware)"
    )
