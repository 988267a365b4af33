"""The money limit of a run (``judge eval --max-usd``, ``judge tune --max-usd``).

Every model request passes through a :class:`Metered` provider, which first reserves the
request's worst case against a :class:`UsdLimit` and refuses it
(:class:`SpendRefused`) when that does not fit in what is left:

* worst case = the model's price (:mod:`judge.pricing`) x (one input token per byte of
  every message and tool definition, plus a fixed overhead — a token is at least one
  byte of text) + the provider's output cap (``JUDGE_MAX_OUTPUT_TOKENS``) in output tokens;
* after the answer the reservation becomes the real charge: the answer's usage priced,
  or the worst case when the server reported no usage; a request sent again inside one
  call (a feature the server rejected) and a failed request are charged their worst case
  (they may have been billed).

A request that does not fit while others are in flight waits for them to settle (they
usually cost far less than their worst case) and is refused only when nothing in flight
could make room. So the spent total never passes the limit, even with requests in flight
at once, and concurrency does not waste the budget's end. A model
without a price cannot be limited: its requests are refused (and the commands refuse to
start). Reservations are per request: an SDK provider reports each HTTP request through
its ``before_request`` hook; for those, meter one provider object per judgement (the
LLM judge's ``wrap``), never one shared by concurrent judgements.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Protocol

from judge.config import Config
from judge.decision import Usage
from judge.errors import HookError
from judge.evaluation.runner import CaseResult
from judge.hooks.judging import PromptJudge
from judge.llm.providers.base import Completion, Message, Provider, ToolChoice, ToolSpec
from judge.llm.providers.features import DEFAULT_MAX_OUTPUT_TOKENS
from judge.llm.tiers import model_label
from judge.pricing import Price, price_for, price_table

#: Every refusal's message says this (eval drops such results: they were never judged).
REFUSAL = "the --max-usd budget is spent"
#: Input tokens added to every request's worst case (role markers, a response schema).
REQUEST_OVERHEAD_TOKENS = 1024
MESSAGE_OVERHEAD_TOKENS = 16


class SpendRefused(HookError):
    """A model request was refused: its worst case does not fit in the ``--max-usd`` budget."""


def worst_case_usd(price: Price, messages: list[Message], tools: list[ToolSpec], max_output: int) -> float:
    """The most one request can cost (see the module docstring)."""
    size = sum(len(m.content.encode("utf-8", "surrogatepass")) for m in messages)
    size += sum(
        len(c.raw_arguments.encode("utf-8", "surrogatepass")) + 64 for m in messages for c in m.tool_calls
    )
    size += len(json.dumps([asdict(t) for t in tools], ensure_ascii=False).encode("utf-8", "surrogatepass"))
    tokens = size + REQUEST_OVERHEAD_TOKENS + MESSAGE_OVERHEAD_TOKENS * len(messages)
    return price.cost(Usage(inputTokens=tokens, outputTokens=max_output))


class UsdLimit:
    """Spending against ``max_usd`` (see the module docstring).

    ``held`` is money kept back from everything but what is told it may use it
    (``judge tune`` holds the final test evaluation's share during the search).
    """

    def __init__(self, max_usd: float, prices: Mapping[str, Price]) -> None:
        if not max_usd > 0:
            raise ValueError("--max-usd must be above 0")
        self.max_usd = max_usd
        self.prices = dict(prices)
        self.spent = 0.0
        self.reserved = 0.0
        self.held = 0.0
        self.refused = 0
        self.requests = 0
        #: Reservations held by requests not yet settled.
        self.in_flight = 0
        #: The largest charge of one request, per model label.
        self.largest: dict[str, float] = {}
        self._changed: tuple[asyncio.AbstractEventLoop, asyncio.Condition] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def price(self, label: str) -> Price | None:
        return price_for(label, self.prices)

    def available(self) -> float:
        return max(0.0, self.max_usd - self.spent - self.reserved - self.held)

    def _refuse(self, label: str, worst: float) -> SpendRefused:
        self.refused += 1
        return SpendRefused(
            f"{label}: {REFUSAL}: ${self.spent:.4f} of ${self.max_usd:g} spent and this request "
            f"could cost up to ${worst:.4f}",
            model=label,
        )

    def reserve(self, label: str, worst: float) -> None:
        """Reserve ``worst`` now, or refuse (:class:`SpendRefused`)."""
        if worst > self.available():
            raise self._refuse(label, worst)
        self.reserved += worst
        self.requests += 1
        self.in_flight += 1

    async def acquire(self, label: str, worst: float) -> None:
        """Reserve ``worst``, waiting while requests in flight may still settle below their
        worst cases; refuse only when nothing in flight could make room."""
        loop = asyncio.get_running_loop()
        if self._changed is None or self._changed[0] is not loop:
            self._changed = (loop, asyncio.Condition())
        changed = self._changed[1]
        async with changed:
            while worst > self.available() and self.in_flight > 0:
                await changed.wait()
        self.reserve(label, worst)

    def _notify(self) -> None:
        if self._changed is None:
            return
        loop, changed = self._changed
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:  # no loop running: nobody can be waiting
            return
        if running is loop:

            async def tell() -> None:
                async with changed:
                    changed.notify_all()

            self._tasks.add(task := loop.create_task(tell()))
            task.add_done_callback(self._tasks.discard)

    def hold(self, usd: float) -> None:
        self.held = max(0.0, usd)
        self._notify()

    def release(self, worst: float) -> None:
        """A reservation whose request was not sent after all."""
        self.requests -= 1
        self._unreserve(worst, 1)
        self._notify()

    def _unreserve(self, usd: float, count: int) -> None:
        self.in_flight -= count
        # (a sum of floats does not come back to exactly 0)
        self.reserved = max(0.0, self.reserved - usd) if self.in_flight > 0 else 0.0

    def settle(self, label: str, reserved: float, charge: float, count: int = 1) -> None:
        """``count`` reservations (``reserved`` in all) become the real ``charge``."""
        self._unreserve(reserved, count)
        self.spent += charge
        self.largest[label] = max(self.largest.get(label, 0.0), charge)
        self._notify()

    def summary(self) -> dict[str, float | int]:
        return {"maxUsd": self.max_usd, "spentUsd": round(self.spent, 6), "refused": self.refused}


class Metered:
    """A provider whose requests are admitted by ``limit`` (when given) and then by
    ``on_request`` (``judge tune``'s call budget: it raises to refuse); see the module docstring."""

    def __init__(
        self, inner: Provider, limit: UsdLimit | None = None, on_request: Callable[[], None] | None = None
    ) -> None:
        self.inner = inner
        self.limit = limit
        self.on_request = on_request
        self.label = inner.label
        self._per_request = hasattr(inner, "before_request")

    def _worst(self, messages: list[Message], tools: list[ToolSpec]) -> tuple[Price | None, float]:
        if self.limit is None:
            return None, 0.0
        price = self.limit.price(self.label)
        if price is None:
            self.limit.refused += 1
            raise SpendRefused(
                f"{self.label} has no price, so {REFUSAL} for it: set one under prices: in the "
                "config (or JUDGE_PRICES)",
                model=self.label,
            )
        cap = getattr(self.inner, "max_output_tokens", DEFAULT_MAX_OUTPUT_TOKENS)
        return price, worst_case_usd(price, messages, tools, int(cap))

    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        *,
        tool_choice: ToolChoice = "auto",
        timeout: float | None = None,
    ) -> Completion:
        price, worst = self._worst(messages, tools)
        if self.limit is not None:
            await self.limit.acquire(self.label, worst)  # the first request's reservation
        held = self.limit is not None
        sent = 0
        previous = getattr(self.inner, "before_request", None)

        def admit() -> None:
            nonlocal sent, held
            if self.limit is not None and not held:
                self.limit.reserve(self.label, worst)  # a request sent again inside this call
            held = False
            try:
                if previous is not None:
                    previous()
                if self.on_request is not None:
                    self.on_request()
            except BaseException:
                if self.limit is not None:
                    self.limit.release(worst)
                raise
            sent += 1

        if self._per_request:
            self.inner.before_request = admit  # type: ignore[attr-defined]
        else:
            admit()
        try:
            completion = await self.inner.complete(messages, tools, tool_choice=tool_choice, timeout=timeout)
        except BaseException:
            if self.limit is not None:
                self.limit.settle(self.label, sent * worst, sent * worst, sent)
            raise
        finally:
            if self._per_request:
                self.inner.before_request = previous  # type: ignore[attr-defined]
            if held and self.limit is not None:  # never sent (refused, or failed before)
                self.limit.release(worst)
        if self.limit is not None and price is not None:
            usage = completion.usage
            actual = price.cost(usage) if usage.input_tokens or usage.output_tokens else worst
            self.limit.settle(self.label, sent * worst, actual + max(sent - 1, 0) * worst, sent)
        return completion

    async def aclose(self) -> None:
        """Close the wrapped provider's connections (when it has any)."""
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


# ---------------------------------------------------------------------------
# judge eval --max-usd


def config_prices(config: Config, env: Mapping[str, str] | None = None) -> dict[str, Price]:
    """The price table a run of ``config`` uses (built-in, ``prices:``, ``JUDGE_PRICES``)."""
    return price_table({label: Price(p.input, p.output) for label, p in config.prices.items()}, env)


def unpriced_models(
    config: Config, event: str, prices: Mapping[str, Price], env: Mapping[str, str] | None = None
) -> list[str]:
    """The models of ``event``'s prompt hooks (every stage of a cascade, custom agents'
    too) without a price: ``--max-usd`` cannot limit what they spend."""
    hooks = list(config.hooks.for_event(event))
    for agent in config.custom_agents.values():
        hooks += agent.hooks.for_event(event)
    missing: list[str] = []
    for hook in hooks:
        for model in hook.models if hook.type == "prompt" else []:
            try:
                label = model_label(model, config.models, env)
            except ValueError:
                continue  # judged as a hook error, which spends nothing
            if price_for(label, prices) is None and label not in missing:
                missing.append(label)
    return missing


class EvalFlags(Protocol):
    """The flags of ``judge eval`` that ``--max-usd`` depends on (``EvalSettings``)."""

    max_usd: float | None
    batch: bool
    recorded: bool
    workers: int | None
    judge: PromptJudge | None


def max_usd_problem(flags: EvalFlags, config: Config, event: str) -> str | None:
    """Why ``--max-usd`` cannot limit this eval run (None: it can): it is kept in this
    process, by the built-in judge, on priced models."""
    if flags.max_usd is None or not flags.max_usd > 0:
        return f"--max-usd must be above 0, got {flags.max_usd}"
    modes = {"--batch": flags.batch, "--recorded": flags.recorded, "--workers": (flags.workers or 1) > 1}
    clash = next((flag for flag, used in modes.items() if used), None)
    if clash is not None:
        return f"--max-usd cannot be combined with {clash}"
    if flags.judge is not None:
        return "--max-usd limits the built-in LLM judge; this run was given another judge"
    missing = unpriced_models(config, event, config_prices(config))
    if missing:
        return (
            f"--max-usd: no price for {', '.join(missing)}: set one under prices: in the config "
            "(or JUDGE_PRICES), so what it spends can be limited"
        )
    return None


def stopped_lines(limit: UsdLimit, judged: int, total: int, results: Path) -> list[str]:
    """What ``judge eval`` says when it stopped at its ``--max-usd``."""
    covered = " (report.json covers them and says so)" if judged else ""
    return [
        f"judge eval: stopped at --max-usd {limit.max_usd:g}: ${limit.spent:.4f} spent, and the next "
        f"request could have passed the limit; {judged} of {total} judgements are in {results}{covered}",
        "  run the same command with --resume (and a new --max-usd) to judge the rest",
    ]


class EvalBudget:
    """``judge eval --max-usd`` for one run in this process: the limit, the judge it meters
    (one meter per judgement), the results worth keeping (a case cut short by a refusal
    was never judged: ``--resume`` judges it) and when to start no more cases."""

    def __init__(self, max_usd: float, config: Config, env: Mapping[str, str] | None = None) -> None:
        self.limit = UsdLimit(max_usd, config_prices(config, env))
        self.env = env

    def judge(self) -> PromptJudge:
        from judge.llm.judge import LLMJudge

        judge: PromptJudge = LLMJudge(env=self.env, wrap=lambda provider: Metered(provider, self.limit))
        return judge

    def writer(self, write: Callable[[CaseResult], None]) -> Callable[[CaseResult], None]:
        def keep(result: CaseResult) -> None:
            if result.error is None or REFUSAL not in result.error:
                write(result)

        return keep

    def spent_out(self) -> bool:
        return self.limit.refused > 0

    def stopped(self, results: int, total: int) -> bool:
        """Whether the run stopped at the limit short of ``total`` results."""
        return self.spent_out() and results < total

    def summary(self, results: int | None = None, total: int | None = None) -> dict[str, float | int]:
        where = {} if results is None or total is None else {"judged": results, "of": total}
        return self.limit.summary() | where
