"""``--model TIER_OR_MODEL`` of ``judge eval`` (repeatable): the models a run judges with.

Once, it points a suite at a real model (or an offline ``fake:`` one) without editing the
config. Several times, each model is one variant of a side-by-side comparison
(:mod:`judge.cli.compare`); naming the same model twice is a usage error.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any


def model_key(value: str) -> str:
    """What makes two spellings the same model: tiers ignore case, providers too."""
    from judge.llm.tiers import PROVIDERS, canonical_tier

    tier = canonical_tier(value)
    if tier is not None:
        return tier
    prefix, sep, rest = value.partition(":")
    if sep and prefix.strip().lower() in PROVIDERS:
        return f"{prefix.strip().lower()}:{rest.strip()}"
    return value


class ModelFlag(argparse.Action):
    """``--model M``: checked like a hook's ``model``; appended to a list; twice the same is an error."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        value = str(values).strip()
        previous: list[str] = list(getattr(namespace, self.dest, None) or [])
        if not value:
            parser.error(f"{option_string}: name a tier (e.g. ReasoningFast) or a model (e.g. openai:gpt-4o)")
        from judge.validation.model_names import model_problem  # lazily: the CLI starts fast

        problem = model_problem(value, os.environ, None)
        if problem:
            parser.error(f"{option_string} {value}: {problem}")
        twin = next((p for p in previous if model_key(p) == model_key(value)), None)
        if twin is not None:
            same = "" if twin == value else f" (as {twin!r})"
            parser.error(f"{option_string} {value} given twice{same}: each compared model must differ")
        setattr(namespace, self.dest, [*previous, value])
