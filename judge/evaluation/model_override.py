"""``judge eval --model TIER_OR_MODEL``: a config with every prompt hook's model replaced
(the flag itself is :class:`judge.cli.model_flag.ModelFlag`; :mod:`judge.evaluation.variants`
applies it)."""

from __future__ import annotations

from judge.config import Config, Hook, HookSet


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
    """``config`` with every prompt hook's ``model`` set to ``model`` (unchanged if None)."""
    if model is None:
        return config
    agents = {
        name: agent.model_copy(update={"hooks": _hookset(agent.hooks, model)})
        for name, agent in config.custom_agents.items()
    }
    return config.model_copy(update={"hooks": _hookset(config.hooks, model), "custom_agents": agents})
