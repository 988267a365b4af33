"""``--model TIER_OR_MODEL`` of ``judge eval``: one model for every prompt hook of a run.

A user points a suite at a real model (or an offline ``fake:`` one) without editing the
config. The flag is repeatable in the public contract (a side-by-side comparison of
several models is planned); today one model is accepted and a second is a usage error.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any


class ModelFlag(argparse.Action):
    """``--model M``: checked like a hook's ``model``; given twice is an error."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        value = str(values).strip()
        previous = getattr(namespace, self.dest, None)
        if previous is not None:
            parser.error(
                f"{option_string} given twice ({previous!r}, {value!r}): one run judges with one "
                "model; run judge eval once per model to compare"
            )
        if not value:
            parser.error(f"{option_string}: name a tier (e.g. ReasoningFast) or a model (e.g. openai:gpt-4o)")
        from judge.validation.models import model_problem  # lazily: the CLI starts fast

        problem = model_problem(value, os.environ, None)
        if problem:
            parser.error(f"{option_string} {value}: {problem}")
        setattr(namespace, self.dest, value)
