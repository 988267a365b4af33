"""JSON Schema of the configuration (what ``judge config schema`` prints)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from judge.config.models import CustomAgent, HookSet


def config_json_schema() -> dict[str, Any]:
    """JSON Schema of the bare configuration form (what `judge config schema` prints)."""

    class HooksDocument(BaseModel):
        """A judge hook configuration (bare form). The resource form nests the same
        `hooks` and `customAgents` under `spec`."""

        model_config = ConfigDict(extra="forbid", title="judge hook configuration")
        hooks: HookSet = Field(default_factory=HookSet, description="Agent-level hooks.")
        customAgents: dict[str, CustomAgent] = Field(
            default_factory=dict, description="Custom agents and their hooks."
        )
        models: dict[str, str] = Field(default_factory=dict, description="Tier -> model mapping.")

    return HooksDocument.model_json_schema(by_alias=True)
