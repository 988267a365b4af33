"""Train/dev/test splits: deterministic, seedable, and never leaking a group."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from judge.tuning.splits import SplitError, parse_split, split_items


@dataclass(frozen=True)
class Item:
    id: str
    group: str | None
    label: str | None


def random_items(rng: random.Random, n: int) -> list[Item]:
    items = []
    for i in range(n):
        roll = rng.random()
        group = None if roll < 0.3 else f"g{rng.randrange(max(1, n // 3))}"
        items.append(Item(id=f"c{i}", group=group, label=rng.choice(["allow", "block", None])))
    return items


@pytest.mark.parametrize("seed", range(60))
def test_no_group_ever_spans_two_splits(seed: int) -> None:
    rng = random.Random(1000 + seed)
    items = random_items(rng, rng.randrange(5, 120))
    split = split_items(items, (0.2, 0.4, 0.4), seed=seed)
    where: dict[str, str] = {}
    for name in ("train", "dev", "test"):
        for item_id in split.ids(name):
            assert item_id not in where, f"{item_id} in two splits"
            where[item_id] = name
    assert sorted(where) == sorted(i.id for i in items)
    by_group: dict[str, set[str]] = {}
    for item in items:
        if item.group is not None:
            by_group.setdefault(item.group, set()).add(where[item.id])
    leaks = {g: s for g, s in by_group.items() if len(s) > 1}
    assert leaks == {}


def test_same_seed_same_split_and_other_seed_differs() -> None:
    items = random_items(random.Random(7), 80)
    a = split_items(items, (0.2, 0.4, 0.4), seed=3)
    b = split_items(list(items), (0.2, 0.4, 0.4), seed=3)
    c = split_items(items, (0.2, 0.4, 0.4), seed=4)
    assert a == b
    assert (a.train, a.dev, a.test) != (c.train, c.dev, c.test)


def test_sizes_follow_the_ratios_for_ungrouped_items() -> None:
    items = [Item(id=f"c{i}", group=None, label="block" if i % 2 else "allow") for i in range(100)]
    split = split_items(items, (0.2, 0.4, 0.4), seed=0)
    assert (len(split.train), len(split.dev), len(split.test)) == (20, 40, 40)
    # stratified: each split holds both labels in equal measure
    labels = {i.id: i.label for i in items}
    for name in ("train", "dev", "test"):
        got = [labels[i] for i in split.ids(name)]
        assert abs(got.count("block") - got.count("allow")) <= 2


def test_zero_test_share_gives_empty_test() -> None:
    items = [Item(id=f"c{i}", group=None, label="allow") for i in range(10)]
    split = split_items(items, (0.5, 0.5, 0.0), seed=1)
    assert split.test == [] and len(split.train) == len(split.dev) == 5


def test_duplicate_ids_are_refused() -> None:
    with pytest.raises(SplitError, match="duplicate case id 'x'"):
        split_items([Item("x", None, None), Item("x", None, None)])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("20/40", "TRAIN/DEV/TEST"),
        ("a/b/c", "three numbers"),
        ("20/40/30", "add up to 100"),
        ("-10/60/50", "must not be negative"),
        ("0/50/50", "train and a dev share"),
    ],
)
def test_bad_split_values_are_explained(text: str, message: str) -> None:
    with pytest.raises(SplitError, match=message):
        parse_split(text)


def test_parse_split_accepts_percentages() -> None:
    assert parse_split("20/40/40") == (0.2, 0.4, 0.4)
    assert parse_split("30,30,40") == (0.3, 0.3, 0.4)
