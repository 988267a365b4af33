"""What the gate remembers of a Stop loop's last rejection, to notice a stalled loop.

A loop is stalled when the agent comes back with the same final answer and the judge
rejects it with the same reason again (:mod:`judge.hooks.outcomes` owns the rule). The
state stores (:mod:`judge.state.sqlite`, :mod:`judge.state.postgres`) keep one
:class:`StopMemory` per session key in the row of its rejection count (read and written
with it, in one statement each), and forget it with the count when the loop ends; only
digests are kept, never the agent's text.
"""

from __future__ import annotations

from typing import NamedTuple


class StopMemory(NamedTuple):
    """The last rejected round of one Stop loop."""

    #: SHA-256 (hex) of the final answer, normalised (case folded, whitespace collapsed).
    answer: str
    #: SHA-256 (hex) of the rejection's reasons, normalised the same way.
    reason: str
    #: How many identical repeats of that round the loop has had so far (0: none yet).
    repeats: int = 0
