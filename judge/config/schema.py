"""JSON Schema of the configuration (what ``judge config schema`` prints).

It covers both forms: the bare mapping (``hooks:``, ``customAgents:``, ``models:``) and
the resource document (``api_version`` / ``kind: ExtendedAgent`` / ``metadata`` /
``spec``). Editors use it for completion; ``judge validate`` checks more (templates,
models, located messages).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from judge.config.models import Budgets, CustomAgent, HookSet, ModelPrice

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

_MODELS_DESCRIPTION = "Tier -> model mapping, e.g. `ReasoningFast: openai:gpt-5.4-mini`."
_PRICES_DESCRIPTION = "Model label -> {input, output} prices in USD per million tokens."
_BUDGETS_DESCRIPTION = "Spending limits of prompt hooks."


class BareDocument(BaseModel):
    """The bare form: hooks per event, custom agents and tier mappings at the top level."""

    model_config = ConfigDict(extra="forbid", title="bare configuration")
    name: str | None = Field(None, description="A name for the configuration.")
    hooks: HookSet = Field(default_factory=HookSet, description="Agent-level hooks.")
    customAgents: dict[str, CustomAgent] = Field(
        default_factory=dict, description="Custom agents and their hooks."
    )
    models: dict[str, str] = Field(default_factory=dict, description=_MODELS_DESCRIPTION)
    prices: dict[str, ModelPrice] = Field(default_factory=dict, description=_PRICES_DESCRIPTION)
    budgets: Budgets = Field(default_factory=Budgets, description=_BUDGETS_DESCRIPTION)


class Metadata(BaseModel):
    """The resource's metadata (only ``name`` is used)."""

    model_config = ConfigDict(extra="allow")
    name: str | None = Field(None, description="The agent's name.")


class Spec(BaseModel):
    """The resource's spec: the same hooks, custom agents and models as the bare form."""

    model_config = ConfigDict(extra="allow")
    hooks: HookSet = Field(default_factory=HookSet, description="Agent-level hooks.")
    customAgents: dict[str, CustomAgent] = Field(
        default_factory=dict, description="Custom agents and their hooks."
    )
    models: dict[str, str] = Field(default_factory=dict, description=_MODELS_DESCRIPTION)


class ResourceDocument(BaseModel):
    """The platform's resource form: ``kind: ExtendedAgent`` with hooks under ``spec``."""

    model_config = ConfigDict(extra="forbid", title="resource document")
    api_version: str | None = Field(None, description="API version of the resource.")
    apiVersion: str | None = Field(None, description="API version (camelCase spelling).")
    kind: Literal["ExtendedAgent"] | None = Field(None, description="Always `ExtendedAgent`.")
    metadata: Metadata = Field(default_factory=Metadata, description="Resource metadata.")
    spec: Spec = Field(default_factory=Spec, description="The agent's hooks and custom agents.")
    models: dict[str, str] = Field(default_factory=dict, description=_MODELS_DESCRIPTION)
    prices: dict[str, ModelPrice] = Field(default_factory=dict, description=_PRICES_DESCRIPTION)
    budgets: Budgets = Field(default_factory=Budgets, description=_BUDGETS_DESCRIPTION)


class ConfigDocument(RootModel[BareDocument | ResourceDocument]):
    """A judge hook configuration, in either form."""


def config_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of both configuration forms."""
    schema = ConfigDocument.model_json_schema(by_alias=True)
    schema["title"] = "judge hook configuration"
    schema["description"] = (
        "Prompt and command hooks per event (Stop, SubagentStop, PostToolUse, PreToolUse), "
        "either bare (`hooks:`) or as a resource document (`kind: ExtendedAgent`, `spec.hooks`)."
    )
    return {"$schema": SCHEMA_DIALECT, **schema}
