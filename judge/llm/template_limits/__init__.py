"""Resource limits of hook templates, on top of Jinja's sandbox.

Jinja's sandbox keeps a template away from Python's internals; it does not bound what a
template costs. ``{{ 'x' * 3000000000 }}`` took 8 GB, two nested ``range(99999)`` loops
hung ``judge validate``, ``'x'.zfill(10**9)`` or a list of a million references to a
million-item list (small in memory, 10^12 items printed) froze a whole ``judge serve``.
Here every step of a render is bounded before it runs (:mod:`.budget` for the limits,
:mod:`.sizes` for what each costly operation would build, :mod:`.environment` for where
they are checked), so a render ends within one bounded step of its limit in time,
output, the size of any value it builds and everything it builds in all. A step past a
limit raises :class:`jinja2.exceptions.SecurityError` naming it: a template error (the
hook's failMode decides; ``judge validate`` reports it).

Renders also run off the event loop (:func:`judge.llm.prompts.render_prompt_async`), so
even a render working up to its deadline holds up only its own judgement.
"""

from judge.llm.template_limits.budget import (
    MAX_BUILT,
    MAX_EXPONENT,
    MAX_LENGTH,
    MAX_OUTPUT,
    MAX_POWER_BITS,
    MAX_RANGE_ITEMS,
    MAX_RENDER_SECONDS,
    RenderBudget,
    render_budget,
)
from judge.llm.template_limits.environment import BoundedEnvironment

__all__ = [
    "MAX_BUILT",
    "MAX_EXPONENT",
    "MAX_LENGTH",
    "MAX_OUTPUT",
    "MAX_POWER_BITS",
    "MAX_RANGE_ITEMS",
    "MAX_RENDER_SECONDS",
    "BoundedEnvironment",
    "RenderBudget",
    "render_budget",
]
