"""The configuration's shapes: hooks per event, custom agents and the whole config.

One hook entry is :mod:`judge.config.hook` (its names are here too); the located
validation of whole documents is :mod:`judge.config.load`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from judge.config.fields import hook_place as hook_place
from judge.config.fields import shadow_copy
from judge.config.fields import type_field_problems as type_field_problems
from judge.config.hook import EVENTS as EVENTS
from judge.config.hook import MATCH_TIMEOUT as MATCH_TIMEOUT
from judge.config.hook import PROMPT_ONLY_FIELDS as PROMPT_ONLY_FIELDS
from judge.config.hook import STOP_EVENTS as STOP_EVENTS
from judge.config.hook import TOOL_EVENTS as TOOL_EVENTS
from judge.config.hook import FailMode as FailMode
from judge.config.hook import Hook as Hook
from judge.config.hook import HookMode
from judge.config.spending import Budgets as Budgets
from judge.config.spending import ModelPrice as ModelPrice
from judge.decision import HookCalibration


class HookSet(BaseModel):
    """Hooks per event."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    Stop: list[Hook] = Field(default_factory=list, description="Before the final answer.")
    SubagentStop: list[Hook] = Field(
        default_factory=list, description="Before a subagent's final answer (Stop rules)."
    )
    PostToolUse: list[Hook] = Field(default_factory=list, description="After a tool succeeded.")
    PreToolUse: list[Hook] = Field(default_factory=list, description="Before a tool runs.")

    def for_event(self, event: str) -> list[Hook]:
        hooks: list[Hook] = getattr(self, event, [])
        return hooks


class CustomAgent(BaseModel):
    """A custom agent: its hooks run after the agent-level hooks when it is the one running."""

    model_config = ConfigDict(extra="allow", frozen=True)

    instructions: str | None = Field(None, description="The custom agent's instructions.")
    hooks: HookSet = Field(default_factory=HookSet, description="Hooks of this custom agent.")
    mode: HookMode = Field(
        "enforce", description="`shadow` runs every hook of this custom agent in shadow mode (see Hook.mode)."
    )


class Config(BaseModel):
    """A validated hook configuration (either form, normalised)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    name: str | None = Field(None, description="metadata.name of the resource form.")
    hooks: HookSet = Field(default_factory=HookSet, description="Agent-level hooks.")
    custom_agents: dict[str, CustomAgent] = Field(
        default_factory=dict, alias="customAgents", description="Custom agents by name."
    )
    models: dict[str, str] = Field(
        default_factory=dict,
        description="Tier -> model mapping, e.g. `ReasoningFast: openai:gpt-5.4-mini`.",
    )
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="Model label -> price (USD per million tokens), over the built-in table; "
        "a label may end with `*` (`openai:*`).",
    )
    budgets: Budgets = Field(default_factory=Budgets, description="Spending limits of prompt hooks.")
    base_dir: Path | None = Field(
        None, exclude=True, description="Folder of the config file (for prompt includes)."
    )
    hooks_key: str = Field(
        "hooks", exclude=True, description="Where the hooks were written: `hooks` or `spec.hooks`."
    )
    places: dict[str, str] = Field(
        default_factory=dict,
        exclude=True,
        description="A partial configuration's hooks kept at another index than written "
        "(kept place -> written place; see judge.config.load.partial_config).",
    )
    #: Each calibrated hook's calibration (by :func:`hook_place`) as found when the
    #: configuration was loaded; None: not applied, hooks judged as written (what evals measure).
    calibration: dict[str, HookCalibration] | None = Field(default_factory=dict, exclude=True)

    def hooks_for(self, event: str, agent_name: str | None) -> list[tuple[str, int, Hook]]:
        """(level, index, hook) for ``event``: agent level first, then the custom agent's.

        A hook that may not enforce (its custom agent is in shadow mode, or its calibration
        is not ``ok``: :meth:`calibration_of`) comes as a shadow copy."""
        found = self.hooks.for_event(event)
        selected = [("agent", i, self._calibrated(h, hook_place(event, i))) for i, h in enumerate(found)]
        if agent_name and agent_name in self.custom_agents:
            agent = self.custom_agents[agent_name]
            custom = [
                self._calibrated(h, hook_place(event, i, agent_name))
                for i, h in enumerate(agent.hooks.for_event(event))
            ]
            if agent.mode == "shadow":
                custom = [shadow_copy(h) for h in custom]
            selected += [("custom", i, h) for i, h in enumerate(custom)]
        return selected

    def calibration_of(self, place: str, hook: Hook) -> HookCalibration | None:
        """The calibration ``hook`` (at ``place``, see :func:`hook_place`) is judged by: None
        without a ``calibration:`` block or when calibration is not applied (an eval); a
        calibrated hook nobody assessed is ``missing`` (it cannot enforce unmeasured)."""
        if hook.calibration is None or self.calibration is None:
            return None
        found = self.calibration.get(place)
        if found is None:
            return HookCalibration(
                status="missing",
                reason="the calibration was not loaded (load the configuration from its file)",
                file=hook.calibration.file,
            )
        return found

    def calibration_at(
        self, event: str, level: str, index: int, hook: Hook, agent_name: Any = None
    ) -> HookCalibration | None:
        """:meth:`calibration_of` a hook as :meth:`hooks_for` selected it (``level`` and index)."""
        agent = str(agent_name) if level == "custom" and agent_name is not None else None
        return self.calibration_of(hook_place(event, index, agent), hook)

    def _calibrated(self, hook: Hook, place: str) -> Hook:
        found = self.calibration_of(place, hook)
        return hook if found is None or found.status == "ok" else shadow_copy(hook)

    def every_hook_for(self, event: str) -> list[tuple[str, int, Hook]]:
        """:meth:`hooks_for` every agent at once: agent level, then each custom agent's
        (for when the running agent is not known)."""
        selected = self.hooks_for(event, None)
        for name in self.custom_agents:
            selected += [entry for entry in self.hooks_for(event, name) if entry[0] == "custom"]
        return selected

    def with_custom_agent(self, name: str, agent: CustomAgent) -> Config:
        """A copy with ``agent`` registered (or replaced) under ``name``."""
        agents = dict(self.custom_agents)
        agents[name] = agent
        return self.model_copy(update={"custom_agents": agents})
