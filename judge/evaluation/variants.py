"""The variants of one ``judge eval`` run: each ``--config`` × each ``--model``.

``--model M`` (repeatable) judges every prompt hook with M; ``--config C`` (repeatable)
judges with the hooks config C instead of the suite's. One variant (or none given) is
an ordinary run; several make a comparison (:mod:`judge.cli.compare`): every
combination of the given configs and models is one variant, with its own output folder
``DIR/<slug>/``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from judge.config import Config, Hook, HookSet
from judge.errors import SuiteError, UsageError
from judge.evaluation.suite import Suite, load_suite

#: Most variants one comparison runs (every pair is tested: 16 variants are 120 pairs).
MAX_VARIANTS = 16


@dataclass(frozen=True)
class Variant:
    """One way of judging the suite."""

    name: str  # what reports call it: "openai:gpt-4o", "strict.yaml", "strict.yaml + Fast"
    slug: str  # its folder under DIR
    model: str | None = None
    config: str | None = None  # a hooks config file replacing the suite's


def slugify(text: str) -> str:
    """A folder name for ``text``: lower case, runs of other characters as ``-``."""
    return re.sub(r"[^a-z0-9._]+", "-", text.lower()).strip("-.") or "variant"


def plan_variants(models: Sequence[str] | str | None, configs: Sequence[str] | str | None) -> list[Variant]:
    """Every combination of ``configs`` and ``models`` (each may be empty: the suite's own)."""
    models = [models] if isinstance(models, str) else list(models or [])
    configs = [configs] if isinstance(configs, str) else list(configs or [])
    seen: dict[Path, str] = {}
    for path in configs:
        key = Path(path).expanduser().resolve()
        if key in seen:
            raise UsageError(
                f"--config {path} given twice (as {seen[key]!r} first): each variant must differ"
            )
        seen[key] = path
    count = max(len(models), 1) * max(len(configs), 1)
    if count > MAX_VARIANTS:
        raise UsageError(
            f"{count} variants ({len(configs) or 1} config(s) x {len(models) or 1} model(s)); "
            f"at most {MAX_VARIANTS} can be compared in one run"
        )
    config_plans: list[str | None] = [*configs] or [None]
    model_plans: list[str | None] = [*models] or [None]
    plans = [(config, model) for config in config_plans for model in model_plans]
    variants: list[Variant] = []
    used: set[str] = set()
    for config, model in plans:
        names = [part for part in (config, model) if part is not None]
        slugs = ([slugify(Path(config).stem)] if config else []) + ([slugify(model)] if model else [])
        base = "--".join(slugs) or "suite"
        slug, n = base, 2
        while slug in used:
            slug, n = f"{base}-{n}", n + 1
        used.add(slug)
        variants.append(Variant(name=" + ".join(names) or "suite", slug=slug, model=model, config=config))
    return variants


def load_variant_suite(
    path: str | Path,
    variant: Variant,
    *,
    check: bool = True,
    on_warning: Callable[[str], None] | None = None,
) -> Suite:
    """The suite at ``path`` judged the variant's way (raises
    :class:`~judge.evaluation.suite.SuiteError` when it cannot be).

    With ``check``, the configuration it judges with (the variant's model in place) goes
    through the checks of ``judge validate`` first: an error (an unknown tier that a
    lenient gateway would still answer, a template that would fail every case) refuses
    the run before any model is called; warnings go to ``on_warning``."""
    suite = load_suite(path, config_override=variant.config)
    if variant.model is not None:
        suite = dataclasses.replace(suite, config=with_model(suite.config, variant.model))
    if check:
        _check_config(suite, variant, on_warning)
    return suite


def _check_config(suite: Suite, variant: Variant, on_warning: Callable[[str], None] | None) -> None:
    from judge.validation import check_config

    source = str(suite.config_path) if suite.config_path is not None else str(suite.path)
    findings = check_config(suite.config)
    errors = [f"{source}: {f}" for f in findings if f.severity == "error"]
    if errors:
        flag = f" (with --model {variant.model})" if variant.model is not None else ""
        raise SuiteError(
            [*errors, f"{source}: the configuration cannot run{flag}; fix it (judge validate {source})"]
        )
    if on_warning is not None:
        for finding in findings:
            on_warning(f"{source}: {finding}")


def _hookset(hooks: HookSet, model: str) -> HookSet:
    def replace(entries: list[Hook]) -> list[Hook]:
        return [h.model_copy(update={"model": model}) if h.type == "prompt" else h for h in entries]

    return hooks.model_copy(
        update={
            "Stop": replace(hooks.Stop),
            "SubagentStop": replace(hooks.SubagentStop),
            "PostToolUse": replace(hooks.PostToolUse),
            "PreToolUse": replace(hooks.PreToolUse),
        }
    )


def with_model(config: Config, model: str | None) -> Config:
    """``config`` with every prompt hook's ``model`` set to ``model`` (unchanged if None): what
    ``--model TIER_OR_MODEL`` judges with (the flag is :class:`judge.cli.model_flag.ModelFlag`)."""
    if model is None:
        return config
    agents = {
        name: agent.model_copy(update={"hooks": _hookset(agent.hooks, model)})
        for name, agent in config.custom_agents.items()
    }
    return config.model_copy(update={"hooks": _hookset(config.hooks, model), "custom_agents": agents})
