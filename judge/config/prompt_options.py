"""Options only prompt hooks take: ``calibration:`` (the file of measured agreement the hook
is judged by, and the floors its record must meet before the hook may act) and
``samples`` / ``aggregate`` / ``escalateBelow`` (self-consistency: k judgements per call).

```yaml
calibration:
  file: runs/smoke/calibration.json   # written by `judge eval --out runs/smoke`
  minKappa: 0.6
  minBlockPrecision: 0.8
  minCases: 30
```

Only the shapes and their checks live here. Which record belongs to the hook, and whether
it meets the floors, is :mod:`judge.hooks.calibration`; writing records is
:mod:`judge.evaluation.calibration`; running samples is :mod:`judge.hooks.samples`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: How a prompt hook's samples make its verdict (``samples: k``).
Aggregate = Literal["majority", "any", "all"]
#: Most samples a hook may ask for.
MAX_SAMPLES = 9
#: Floors a record must meet when the hook does not set its own.
DEFAULT_MIN_KAPPA = 0.6
DEFAULT_MIN_BLOCK_PRECISION = 0.8
DEFAULT_MIN_CASES = 30
#: Longest ``file`` accepted (a path, not a document).
MAX_FILE_CHARS = 4096


class CalibrationPolicy(BaseModel):
    """When a prompt hook may enforce: a record in ``file`` measured for this hook's prompt
    and model, meeting every floor. Otherwise the hook runs as shadow and says why."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    file: str = Field(
        description="The calibration file `judge eval --out DIR` wrote (`DIR/calibration.json`), "
        "relative to the config file's folder."
    )
    min_kappa: float = Field(
        DEFAULT_MIN_KAPPA,
        ge=-1.0,
        le=1.0,
        alias="minKappa",
        description="Lowest Cohen's kappa (agreement with the labels beyond chance) that may "
        f"enforce (-1 to 1; default {DEFAULT_MIN_KAPPA}).",
    )
    min_block_precision: float = Field(
        DEFAULT_MIN_BLOCK_PRECISION,
        ge=0.0,
        le=1.0,
        alias="minBlockPrecision",
        description="Lowest share of the hook's blocks that the labels call blocks (0 to 1; "
        f"default {DEFAULT_MIN_BLOCK_PRECISION}): how often a sent-back agent deserved it.",
    )
    min_cases: int = Field(
        DEFAULT_MIN_CASES,
        ge=1,
        le=1_000_000,
        alias="minCases",
        description=f"Fewest labelled cases the record must rest on (default {DEFAULT_MIN_CASES}).",
    )

    @field_validator("file")
    @classmethod
    def _a_path(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name a file (e.g. runs/smoke/calibration.json)")
        if len(value) > MAX_FILE_CHARS or "\x00" in value:
            raise ValueError("must be a path (no NUL, at most 4096 characters)")
        return value

    @field_validator("min_cases", mode="before")
    @classmethod
    def _an_integer(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be an integer, got {value!r}")
        return value

    @field_validator("min_kappa", "min_block_precision", mode="before")
    @classmethod
    def _a_number(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"must be a number, got {value!r}")
        return value


def sampling_problems(
    samples: int, aggregate: str, escalate_below: float | None, model: str | tuple[str, ...]
) -> list[str]:
    """What is wrong with a prompt hook's ``samples`` / ``aggregate`` / ``escalateBelow``
    (messages start with the field they are about)."""
    problems = []
    if aggregate == "majority" and samples % 2 == 0:
        problems.append(
            f"samples: {samples} samples can tie under aggregate: majority; use an odd number "
            "(3, 5, ...) or aggregate: any / all"
        )
    if escalate_below is not None:
        if isinstance(model, str):
            problems.append("escalateBelow: only for cascades (a list of 2 or more models)")
        elif samples < 2:
            problems.append("escalateBelow: needs samples of 2 or more (it bounds their agreement)")
    return problems


def samples_in_range(value: Any) -> Any:
    """``samples`` is a whole number from 1 to :data:`MAX_SAMPLES` (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be an integer, got {value!r}")
    if not 1 <= value <= MAX_SAMPLES:
        raise ValueError(f"must be between 1 and {MAX_SAMPLES}, got {value}")
    return value
