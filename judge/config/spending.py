"""What prompt hooks may cost: prices per model and the spending budgets of a configuration."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ModelPrice(BaseModel):
    """A model's price in US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0, description="USD per million input tokens.")
    output: float = Field(ge=0, description="USD per million output tokens.")


class Budgets(BaseModel):
    """Spending limits of prompt hooks (kept where the gate has state: the service, judge
    claude-code, judge run --state). A prompt hook whose budget is spent is not run: it is a
    hook error ``budget exhausted ...`` and its failMode decides."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    per_session_usd: float | None = Field(
        None, gt=0, alias="perSessionUsd", description="USD one session may spend on prompt hooks."
    )
    per_day_usd: float | None = Field(
        None, gt=0, alias="perDayUsd", description="USD all sessions may spend per UTC day."
    )
