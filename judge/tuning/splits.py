"""Deterministic train/dev/test splits that keep every ``group`` in one split.

Items without a ``group`` are their own group. Groups are shuffled with the seed within
their stratum (their majority label: block / allow / unlabelled), the strata are spread
evenly through one order, and the groups are assigned in that order to the split
furthest below its target share (overall plus within the group's stratum); the first
groups seed each split that has a share, so none is left empty when there are enough
groups. So the splits come out close to the requested
percentages, with both labels in each, even when groups differ in size. The same items and seed always
give the same split.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Protocol

from pydantic import BaseModel

SPLIT_NAMES: tuple[str, str, str] = ("train", "dev", "test")


class SplitError(ValueError):
    """A malformed ``--split`` value or an impossible split."""


class Splittable(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def group(self) -> str | None: ...
    @property
    def label(self) -> str | None: ...


class Split(BaseModel):
    """Item ids per split (in the original item order)."""

    train: list[str]
    dev: list[str]
    test: list[str]
    seed: int
    ratios: tuple[float, float, float]

    def ids(self, name: str) -> list[str]:
        if name not in SPLIT_NAMES:
            raise KeyError(name)
        ids: list[str] = getattr(self, name)
        return ids


def parse_split(text: str) -> tuple[float, float, float]:
    """``"20/40/40"`` → ``(0.2, 0.4, 0.4)``. Three non-negative numbers summing to 100."""
    parts = text.replace(",", "/").split("/")
    if len(parts) != 3:
        raise SplitError(f"--split must be TRAIN/DEV/TEST percentages like 20/40/40, got {text!r}")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise SplitError(f"--split must be three numbers like 20/40/40, got {text!r}") from None
    if any(v < 0 for v in values):
        raise SplitError(f"--split percentages must not be negative, got {text!r}")
    total = sum(values)
    if abs(total - 100.0) > 1e-6:
        raise SplitError(f"--split percentages must add up to 100, got {text!r} (sum {total:g})")
    if values[0] <= 0 or values[1] <= 0:
        raise SplitError(f"--split needs a train and a dev share above 0, got {text!r}")
    return (values[0] / 100.0, values[1] / 100.0, values[2] / 100.0)


def _group_key(item: Splittable) -> str:
    return f"g:{item.group}" if item.group is not None else f"i:{item.id}"


def _stratum(labels: Iterable[str | None]) -> str:
    counts = Counter(label or "" for label in labels)
    # Most common label; ties resolved by name so the result does not depend on order.
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def split_items(
    items: Sequence[Splittable], ratios: tuple[float, float, float] = (0.2, 0.4, 0.4), seed: int = 0
) -> Split:
    """Split ``items`` into train/dev/test by group (see the module docstring).

    Raises :class:`SplitError` on duplicate ids.
    """
    seen: set[str] = set()
    groups: dict[str, list[Splittable]] = {}
    for item in items:
        if item.id in seen:
            raise SplitError(f"duplicate case id {item.id!r}")
        seen.add(item.id)
        groups.setdefault(_group_key(item), []).append(item)
    strata: dict[str, list[str]] = {}
    for key in sorted(groups):
        strata.setdefault(_stratum(i.label for i in groups[key]), []).append(key)
    rng = random.Random(seed)
    # Spread every stratum evenly through one order, so each split gets its share of each label.
    order: list[tuple[float, str, str]] = []
    for stratum in sorted(strata):
        keys = strata[stratum]
        rng.shuffle(keys)
        order += [((n + 0.5) / len(keys), stratum, key) for n, key in enumerate(keys)]
    order.sort()
    total = sum(len(g) for g in groups.values())
    stratum_total = {name: sum(len(groups[k]) for k in keys) for name, keys in strata.items()}
    filled = [0, 0, 0]
    stratum_filled = {name: [0, 0, 0] for name in strata}
    assigned: dict[str, int] = {}
    live = [s for s in range(3) if ratios[s] > 0]
    for n, (_, stratum, key) in enumerate(order):
        if n < len(live) and len(order) >= len(live):
            target = live[n]  # every split with a share gets at least one group
        else:
            mine = stratum_filled[stratum]
            target = max(
                live,
                key=lambda s: (
                    ratios[s] * total - filled[s] + ratios[s] * stratum_total[stratum] - mine[s],
                    ratios[s],
                ),
            )
        assigned[key] = target
        filled[target] += len(groups[key])
        stratum_filled[stratum][target] += len(groups[key])
    out: list[list[str]] = [[], [], []]
    for item in items:
        out[assigned[_group_key(item)]].append(item.id)
    return Split(train=out[0], dev=out[1], test=out[2], seed=seed, ratios=ratios)
