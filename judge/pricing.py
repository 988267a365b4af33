"""What a judgement costs: a price per model, in US dollars per million tokens.

Prices come from, first to last: the environment (``JUDGE_PRICES``, a JSON object), the
configuration's ``prices:`` mapping, then the built-in table below. Keys are model labels
as hooks report them (``openai:gpt-5-mini``, ``anthropic:claude-haiku-4-5``); a key may end
with ``*`` to cover every model it starts with (``fake:*``). Values are
``{"input": USD, "output": USD}`` per million tokens.

The built-in table holds the providers' public list prices (per million tokens, without
batch or cache discounts; ``judge eval --batch`` applies :data:`BATCH_DISCOUNT`) of the
models it names, as published when this table was written; providers change them, so a
deployment that budgets money should set its own in ``prices:``. A model with no known
price has no cost (``costUsd`` is absent, and reports say how many judgements had no
price) — never a guessed one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

from judge.decision import CascadeStage, Usage

PRICES_ENV = "JUDGE_PRICES"
#: The share of the list price both providers take off batch requests (OpenAI Batch API,
#: Anthropic Message Batches: 50 % when this was written). ``judge eval --batch`` prices
#: its batch judgements with it; ``JUDGE_BATCH_DISCOUNT`` (0 to 1) overrides it.
BATCH_DISCOUNT = 0.5
BATCH_DISCOUNT_ENV = "JUDGE_BATCH_DISCOUNT"


@dataclass(frozen=True)
class Price:
    """US dollars per million input and output tokens."""

    input: float
    output: float

    def cost(self, usage: Usage) -> float:
        return (usage.input_tokens * self.input + usage.output_tokens * self.output) / 1_000_000


BUILTIN_PRICES: dict[str, Price] = {
    "anthropic:claude-opus-4-5": Price(5.0, 25.0),
    "anthropic:claude-sonnet-4-5": Price(3.0, 15.0),
    "anthropic:claude-haiku-4-5": Price(1.0, 5.0),
    "openai:gpt-5": Price(1.25, 10.0),
    "openai:gpt-5-mini": Price(0.25, 2.0),
    "openai:gpt-5-nano": Price(0.05, 0.40),
    "fake:*": Price(0.0, 0.0),
}


class PriceError(ValueError):
    """A price table entry is malformed."""


def parse_prices(data: object, where: str) -> dict[str, Price]:
    """``{label: Price}`` from a JSON-like mapping; :class:`PriceError` naming ``where``."""
    if not isinstance(data, Mapping):
        raise PriceError(f"{where}: must be a mapping of model -> {{input, output}}")
    prices: dict[str, Price] = {}
    for label, value in data.items():
        if not isinstance(value, Mapping) or set(value) != {"input", "output"}:
            raise PriceError(f"{where}.{label}: must be {{input: USD, output: USD}} per million tokens")
        numbers = [value["input"], value["output"]]
        if any(isinstance(n, bool) or not isinstance(n, int | float) or n < 0 for n in numbers):
            raise PriceError(f"{where}.{label}: prices must be numbers >= 0")
        prices[str(label)] = Price(float(numbers[0]), float(numbers[1]))
    return prices


def price_table(
    configured: Mapping[str, Price] | None = None, env: Mapping[str, str] | None = None
) -> dict[str, Price]:
    """The prices in force: built-in, then ``configured`` (``prices:``), then ``JUDGE_PRICES``."""
    env = os.environ if env is None else env
    table = {**BUILTIN_PRICES, **(configured or {})}
    raw = env.get(PRICES_ENV)
    if raw:
        try:
            table.update(parse_prices(json.loads(raw), PRICES_ENV))
        except (ValueError, PriceError):
            pass  # reported by judge validate; a broken override never breaks a decision
    return table


def price_for(label: str | None, table: Mapping[str, Price]) -> Price | None:
    """The price of the model ``label`` (an exact key first, else the longest ``prefix*``)."""
    if not label:
        return None
    if label in table:
        return table[label]
    matches = [k for k in table if k.endswith("*") and label.startswith(k[:-1])]
    return table[max(matches, key=len)] if matches else None


def cost_usd(label: str | None, usage: Usage | None, table: Mapping[str, Price]) -> float | None:
    """What ``usage`` of ``label`` cost, or None when its price is unknown."""
    if usage is None:
        return None
    price = price_for(label, table)
    return None if price is None else round(price.cost(usage), 8)


def stages_cost(stages: list[CascadeStage], table: Mapping[str, Price]) -> float | None:
    """Price each cascade stage (``costUsd``) and return their total, or None when no
    stage has a known price (a stage without one adds nothing)."""
    costs = []
    for stage in stages:
        stage.cost_usd = cost_usd(stage.model, stage.usage, table)
        if stage.cost_usd is not None:
            costs.append(stage.cost_usd)
    return round(sum(costs), 8) if costs else None


def batch_cost(cost: float | None, discount: float = BATCH_DISCOUNT) -> float | None:
    """What a judgement costing ``cost`` at list price costs as a batch request."""
    return None if cost is None else round(cost * (1.0 - discount), 8)
