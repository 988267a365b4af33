"""The hook engine: context in, decision out. Pure — no printing, no files of its own.

The rules live here:

* which hooks run: agent level first, then the running custom agent's; tool events
  filter by matcher;
* a hook whose calibration is not ``ok`` (its ``calibration:`` record is missing, stale
  or below a floor, as found when the configuration was loaded and handed in with it:
  ``Config.calibration``) runs as shadow, and its result says why (``calibration``);
* a prompt hook with ``samples: k`` judges k times within its one timeout and votes
  (:mod:`judge.hooks.samples`);
* Stop: all hooks run concurrently, results in declared order; a reasonless JSON
  rejection is an approval; exit code 2 always blocks; only prompt rejections count
  against ``maxRejections`` (the maximum over the prompt hooks); ``c + 1 >= max``
  forces the stop; an impossible answer, a stalled loop and running background tasks
  end it too, and every Stop gets its outcome (:mod:`judge.hooks.outcomes`);
* PostToolUse: sequential; any block withholds the result; the last
  ``additionalContext`` wins;
* PreToolUse: sequential; the first denial wins and short-circuits; ``updatedInput``
  is passed on to later hooks and returned - unless the rewrites, taken together, leave
  the input as it was (a rewrite that changes nothing is not a rewrite); errors fail
  closed by default.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.config import STOP_EVENTS, TOOL_EVENTS, Config, Hook
from judge.context import context_json, parse_context
from judge.decision import CascadeStage, Decision, HookOutcome, Usage, asked, last_additional_context
from judge.errors import CascadeError, HookError
from judge.hooks.answers import HookAnswer, parse_hook_output
from judge.hooks.cascade import judge_cascade
from judge.hooks.command import OUTPUT_CAP, run_command_hook
from judge.hooks.judging import PromptJudge, PromptRequest, PromptVerdict
from judge.hooks.outcomes import deferred_outcome, defers, stop_decision
from judge.hooks.samples import judge_samples
from judge.pricing import Price, cost_usd, price_table, stages_cost
from judge.state.stop_memory import StopMemory

DEFAULT_EXIT2_REASON = "Blocked by hook (exit code 2)"
DEFAULT_POST_BLOCK_REASON = "Tool result blocked by hook"
DEFAULT_PRE_BLOCK_REASON = "Tool call blocked by hook"


class NoModelJudge:
    """A judge that has no model: every prompt hook is a hook error (for tests and dry runs)."""

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        raise HookError("no model configured for prompt hooks")


def default_judge() -> PromptJudge:
    """The LLM judge of :mod:`judge.llm` (providers chosen from the environment)."""
    from judge.llm.judge import LLMJudge

    judge: PromptJudge = LLMJudge()
    return judge


def _dumps(context: dict[str, Any]) -> str:
    return json.dumps(context, ensure_ascii=False)


def _same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same (``1`` and ``true`` are not; key order aside)."""
    try:
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    except (TypeError, ValueError):
        return False


@dataclass(frozen=True)
class _Run:
    """What every hook of one evaluation shares."""

    transcript: Path | None
    repeat: int
    #: Why prompt hooks are not judged (a spent budget: their failMode decides), or None.
    unjudged: str | None = None


class Engine:
    """Evaluates the hooks of one configuration.

    ``judge`` evaluates prompt hooks (default: the LLM judge). ``command_env`` adds
    variables to command hooks' scrubbed environment.
    """

    def __init__(
        self,
        config: Config,
        judge: PromptJudge | None = None,
        command_env: dict[str, str] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.config = config
        self._judge = judge
        self.command_env = command_env or {}
        self.clock = clock
        configured = {label: Price(p.input, p.output) for label, p in config.prices.items()}
        self.prices = price_table(configured)

    @property
    def judge(self) -> PromptJudge:
        """The prompt judge; the default LLM judge is built on first use (command-only
        configurations never import the provider SDKs)."""
        if self._judge is None:
            self._judge = default_judge()
        return self._judge

    @judge.setter
    def judge(self, value: PromptJudge) -> None:
        self._judge = value

    # -- one hook ---------------------------------------------------------------

    async def _judgement(self, hook: Hook, context: dict[str, Any], run: _Run) -> PromptVerdict:
        """A prompt hook's verdict within its ``timeout``: the one timer of a judgement (a
        cascade shares it out among its stages, :mod:`judge.hooks.cascade`)."""
        if run.unjudged is not None:
            raise HookError(run.unjudged)  # not judged: the model is not called
        request = PromptRequest(
            hook=hook,
            context=context,
            transcript_path=run.transcript,
            models=self.config.models,
            base_dir=self.config.base_dir,
            repeat=run.repeat,
            deadline=asyncio.get_running_loop().time() + hook.timeout,
        )
        if not isinstance(hook.model, str):
            return await judge_cascade(self.judge, request)
        if hook.samples > 1:  # k judgements, each by the same deadline
            return await judge_samples(self.judge, request)
        try:
            async with asyncio.timeout_at(request.deadline):
                return await self.judge.evaluate(request)
        except TimeoutError:
            model = self._model_label(request)
            raise HookError(f"timed out after {hook.timeout}s", model=model) from None

    async def _answer(
        self, event: str, hook: Hook, context: dict[str, Any], run: _Run
    ) -> tuple[HookAnswer, str | None, PromptVerdict | None]:
        """Run one hook; return its answer, the exit-2 flag as reason source, the verdict."""
        transcript = run.transcript
        if hook.type == "prompt":
            verdict = await self._judgement(hook, context, run)
            answer = HookAnswer(
                "allow" if verdict.ok else "block",
                verdict.reason,
                impossible=verdict.impossible and not verdict.ok,
            )
            return answer, None, verdict
        extra_env = dict(self.command_env)
        extra_env["JUDGE_HOOK_EVENT"] = event

        def stdin(transcript_seen_as: str | None) -> str:
            # A hook that runs as another user reads its own copy of the transcript.
            if transcript_seen_as is None or transcript_seen_as == context.get("execution_summary"):
                return _dumps(context)
            return _dumps({**context, "execution_summary": transcript_seen_as})

        result = await run_command_hook(
            hook, stdin, extra_env=extra_env, transcript=transcript, base_dir=self.config.base_dir
        )
        if result.timed_out:
            raise HookError(f"timed out after {hook.timeout}s")
        if result.exit_code == 2:
            reason = result.stderr.strip() or DEFAULT_EXIT2_REASON
            return HookAnswer("block", reason), "exit2", None
        if result.exit_code != 0:
            tail = result.stderr.strip()[-500:]
            detail = f": {tail}" if tail else ""
            code = result.exit_code
            how = (
                f"was killed by signal {-code}"
                if code is not None and code < 0
                else f"exited with code {code}"
            )
            raise HookError(f"command {how}{detail}")
        if result.stdout_truncated:
            raise HookError(f"command output exceeded the {OUTPUT_CAP // (1024 * 1024)} MB cap")
        if not result.stdout.strip():
            return HookAnswer("allow"), None, None
        return parse_hook_output(result.stdout), None, None

    def _model_label(self, request: PromptRequest) -> str | None:
        """The model a prompt hook was being judged by (None when it cannot be resolved)."""
        from judge.llm.tiers import model_label

        model, env = request.hook.model, getattr(self.judge, "env", None)
        with contextlib.suppress(ValueError):
            return model_label(model, request.models, env) if isinstance(model, str) else None
        return None

    async def run_hook(
        self,
        event: str,
        level: str,
        index: int,
        hook: Hook,
        context: dict[str, Any],
        transcript: Path | None,
        repeat: int = 0,
        unjudged: str | None = None,
    ) -> HookOutcome:
        """Run one hook and apply the event's per-hook rules (reasonless blocks, failMode).
        ``unjudged``: why prompt hooks are not judged (a spent budget), or None."""
        start = self.clock()
        verdict: PromptVerdict | None = None
        error: str | None = None
        failed_model: str | None = None
        failed_usage: Usage | None = None
        stages: list[CascadeStage] | None = None
        try:
            run = _Run(transcript, repeat, unjudged)
            answer, source, verdict = await self._answer(event, hook, context, run)
            stages = verdict.stages if verdict else None
        except HookError as exc:
            error = str(exc) or type(exc).__name__
            failed_model = exc.model
            failed_usage = exc.usage if isinstance(exc.usage, Usage) else None
            stages = exc.stages if isinstance(exc, CascadeError) else None
        except Exception as exc:  # a bug or an unexpected failure is still a hook error
            error = f"{type(exc).__name__}: {exc}"
        duration = (self.clock() - start) * 1000.0
        outcome = HookOutcome(
            level="agent" if level == "agent" else "custom",
            index=index,
            type=hook.type,
            decision="allow",
            durationMs=round(duration, 3),
            model=verdict.model if verdict else failed_model,
            usage=verdict.usage if verdict else failed_usage,
            costUsd=cost_usd(verdict.model, verdict.usage, self.prices)
            if verdict
            else cost_usd(failed_model, failed_usage, self.prices),
            mode="shadow" if hook.mode == "shadow" else None,
            citations=verdict.citations if verdict else None,
            samples=verdict.samples if verdict else None,
            agreement=verdict.agreement if verdict else None,
        )
        if stages is not None:  # a cascade: every stage called is priced and paid for
            outcome.stages = stages
            outcome.cost_usd = stages_cost(stages, self.prices)
            outcome.usage = sum((s.usage for s in stages), Usage())
        if error is not None:
            outcome.error = error
            if hook.fail_mode_for(event) == "block":
                outcome.decision = "block"
                outcome.reason = f"Hook error: {error}"
                outcome.counts_as_rejection = hook.type == "prompt"
            return outcome
        reason = answer.reason.strip() if answer.reason and answer.reason.strip() else None
        outcome.additional_context = answer.additional_context
        outcome.updated_input = answer.updated_input
        outcome.asks = answer.ask and event == "PreToolUse"
        if outcome.asks:
            outcome.reason = reason
        if answer.decision == "block":
            if event in STOP_EVENTS:
                # A rejection without a reason is an approval (exit 2 always has one).
                if reason is None and source != "exit2":
                    return outcome
                if answer.impossible:  # it cannot be finished without the user: not counted
                    outcome.decision, outcome.reason, outcome.impossible = "block", reason, True
                    return outcome
            elif reason is None:
                reason = DEFAULT_POST_BLOCK_REASON if event == "PostToolUse" else DEFAULT_PRE_BLOCK_REASON
            outcome.decision = "block"
            outcome.reason = reason
            outcome.counts_as_rejection = hook.type == "prompt"
        else:
            outcome.reason = reason
        return outcome

    async def _hook(
        self, event: str, level: str, index: int, hook: Hook, context: dict[str, Any], run: _Run
    ) -> HookOutcome:
        outcome = await self.run_hook(
            event, level, index, hook, context, run.transcript, run.repeat, run.unjudged
        )
        outcome.calibration = self.config.calibration_at(event, level, index, hook, context.get("agent_name"))
        return outcome

    # -- one event --------------------------------------------------------------

    def selected_hooks(self, event: str, context: dict[str, Any]) -> list[tuple[str, int, Hook]]:
        hooks = self.config.hooks_for(event, context.get("agent_name"))
        if event in TOOL_EVENTS:
            tool = context.get("tool_name")
            hooks = [(lvl, i, h) for lvl, i, h in hooks if h.matches(tool)]
        return hooks

    async def evaluate(
        self,
        event: str,
        context: dict[str, Any],
        transcript: str | Path | None = None,
        repeat: int = 0,
        stop_hook_active: bool = False,
        budget_exhausted: str | None = None,
        last_rejection: StopMemory | None = None,
    ) -> Decision:
        """Evaluate ``event`` for ``context`` (a JSON object, validated here).

        ``transcript`` is used when the context has no ``execution_summary``.
        ``stop_hook_active``: the host's own "already continuing" flag (Claude Code's);
        Stop hooks see ``stop_hook_active`` true when it is set or the count is above 0.
        ``budget_exhausted`` (why) makes every prompt hook a hook error without calling its
        model (its failMode decides). ``last_rejection``: the Stop loop's previous rejection
        (kept by the gate), to end a stalled loop. Raises
        :class:`judge.errors.ContextError` for a malformed context.
        """
        ctx = context_json(parse_context(event, context))
        if not ctx.get("execution_summary") and transcript is not None:
            ctx["execution_summary"] = str(transcript)
        path = Path(ctx["execution_summary"]) if ctx.get("execution_summary") else None
        hooks = self.selected_hooks(event, ctx)
        run = _Run(path, repeat, budget_exhausted)
        if event in STOP_EVENTS:
            return await self._stop(event, ctx, hooks, run, stop_hook_active, last_rejection)
        if event == "PreToolUse":
            return await self._pre_tool_use(ctx, hooks, run)
        return await self._post_tool_use(ctx, hooks, run)

    async def _stop(
        self,
        event: str,
        ctx: dict[str, Any],
        hooks: list[tuple[str, int, Hook]],
        run: _Run,
        host_active: bool = False,
        last: StopMemory | None = None,
    ) -> Decision:
        count = int(ctx.get("stop_rejection_count") or 0)
        ctx["stop_hook_active"] = count > 0 or host_active

        async def one(level: str, index: int, hook: Hook) -> HookOutcome:
            if defers(hook, ctx):  # background tasks run: judged when the agent stops after them
                return deferred_outcome(level, index, hook)
            return await self._hook(event, level, index, hook, ctx, run)

        outcomes = list(await asyncio.gather(*(one(lvl, i, h) for lvl, i, h in hooks)))
        return stop_decision(event, ctx, hooks, outcomes, last)

    async def _post_tool_use(
        self,
        ctx: dict[str, Any],
        hooks: list[tuple[str, int, Hook]],
        run: _Run,
    ) -> Decision:
        outcomes: list[HookOutcome] = []
        for lvl, i, h in hooks:
            outcomes.append(await self._hook("PostToolUse", lvl, i, h, ctx, run))
        blocking = [o for o in outcomes if o.effective and o.decision == "block"]
        return Decision(
            event="PostToolUse",
            decision="block" if blocking else "allow",
            reason="\n".join(o.reason or DEFAULT_POST_BLOCK_REASON for o in blocking) or None,
            additional_context=last_additional_context(outcomes),
            hooks=outcomes,
        )

    async def _pre_tool_use(
        self,
        ctx: dict[str, Any],
        hooks: list[tuple[str, int, Hook]],
        run: _Run,
    ) -> Decision:
        outcomes: list[HookOutcome] = []
        updated: dict[str, Any] | None = None
        current = dict(ctx)
        for lvl, i, h in hooks:
            outcome = await self._hook("PreToolUse", lvl, i, h, current, run)
            outcomes.append(outcome)
            if not outcome.effective:
                continue  # recorded; it neither denies nor rewrites
            if outcome.decision == "block":
                # The first denial wins; later hooks (and the tool) do not run.
                return Decision(
                    event="PreToolUse",
                    decision="block",
                    reason=outcome.reason or DEFAULT_PRE_BLOCK_REASON,
                    hooks=outcomes,
                )
            if outcome.updated_input is not None:
                updated = outcome.updated_input
                current = {**current, "tool_input": updated}
        if updated is not None and _same_json(updated, ctx.get("tool_input")):
            updated = None  # rewrites that leave the input as it was are no rewrite
        return Decision(
            event="PreToolUse",
            decision="allow",
            updatedInput=updated,
            additional_context=last_additional_context(outcomes),
            ask=asked(outcomes),
            hooks=outcomes,
        )
