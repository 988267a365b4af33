"""The LLM judge for prompt hooks: :class:`LLMJudge`.

``LLMJudge().evaluate(request)`` renders the hook's prompt, resolves its model tier to a
provider, binds ReadFile/GrepSearch to the rendered transcript, runs the tool loop and
returns a :class:`~judge.hooks.judging.PromptVerdict`. Every failure is a
:class:`~judge.errors.HookError` (the engine applies the hook's ``failMode``).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from typing import Any

from judge.config import STOP_EVENTS
from judge.decision import Usage
from judge.errors import HookError
from judge.files import NotARegularFile
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.llm.evidence import EvidenceCheck
from judge.llm.instructions import delimit_context
from judge.llm.loop import MAX_TOOL_ROUNDS, JudgementTrace, run_judgement
from judge.llm.prompts import judged_context, render_prompt_async
from judge.llm.providers import leased_provider
from judge.llm.providers.base import Provider
from judge.llm.providers.clients import require_key
from judge.llm.tiers import ResolvedModel, resolve_model
from judge.llm.tools import GREP_SECONDS, TranscriptTools
from judge.llm.tools.runner import tool_threads
from judge.llm.written_calls import evidence_first_enabled, text_tools_enabled
from judge.transcripts import prepare_transcript

_log = logging.getLogger(__name__)


#: SDKs whose import has finished.
_imported: set[str] = set()

#: Builds the provider for a resolved model (inject one in tests).
ProviderFactory = Callable[[ResolvedModel], Provider]

#: Called after each judgement (verdict or not) with what happened in it.
TraceObserver = Callable[[PromptRequest, JudgementTrace], None]


class LLMJudge:
    """The default prompt judge: environment-driven providers, or ``provider_for``.

    ``env`` defaults to :data:`os.environ`, read at each judgement. Judgements on one
    event loop reuse SDK clients (and their open connections) per provider, base URL
    and key; the loop's clients are closed when it shuts down
    (:mod:`judge.llm.providers.pool`). ``text_tools`` recognises tool calls the model
    writes as text (default: on unless ``JUDGE_TEXT_TOOL_CALLS=0`` in ``env``);
    ``observer`` sees each judgement's :class:`JudgementTrace` (benchmarks, tests);
    ``wrap`` wraps each judgement's provider (the money and call limits of ``judge eval``
    and ``judge tune``: one wrapper per judgement, so per-request hooks are never shared).
    """

    def __init__(
        self,
        provider_for: ProviderFactory | None = None,
        *,
        env: Mapping[str, str] | None = None,
        max_tool_rounds: int = MAX_TOOL_ROUNDS,
        grep_seconds: float = GREP_SECONDS,
        text_tools: bool | None = None,
        observer: TraceObserver | None = None,
        wrap: Callable[[Provider], Provider] | None = None,
    ) -> None:
        self.provider_for = provider_for
        self.wrap = wrap
        self.env = env
        self.text_tools = text_tools
        self.observer = observer
        self.max_tool_rounds = max_tool_rounds
        self.grep_seconds = grep_seconds

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        """Judge one prompt hook with one model by ``request``'s deadline; HookError on failure.

        The deadline bounds every step (the transcript's rendering, each tool round, each
        provider attempt); the engine's timer around this call is the hook's timeout, and a
        cascade (a list of models) is the engine's to share out (:mod:`judge.hooks.cascade`).
        Errors name the model that was tried (``HookError.model``) when it was resolved.
        """
        hook = request.hook
        if not isinstance(hook.model, str):
            raise HookError("a cascade is judged stage by stage (judge.hooks.cascade), one model at a time")
        env = os.environ if self.env is None else self.env
        try:
            model = resolve_model(hook.model, request.models, env)
        except ValueError as exc:
            raise HookError(f"model {hook.model!r}: {exc}") from None
        deadline = request.deadline_in(asyncio.get_running_loop())
        try:
            return await self._evaluate(request, model, env, deadline)
        except HookError as exc:
            if exc.model is None:
                exc.model = model.label
            raise

    async def _evaluate(
        self, request: PromptRequest, model: ResolvedModel, env: Mapping[str, str], deadline: float
    ) -> PromptVerdict:
        hook = request.hook
        shown = judged_context(request.context)
        # Off the event loop, and stopped at the hook's deadline (the loop's clock is monotonic).
        prompt = await render_prompt_async(
            hook.prompt or "", shown, request.base_dir, arguments=delimit_context(shown), deadline=deadline
        )
        with tool_threads(deadline) as (budget, executor):
            tools = None
            if request.transcript_path is not None:
                loop = asyncio.get_running_loop()
                try:
                    rendered = await loop.run_in_executor(
                        executor, prepare_transcript, request.transcript_path, budget.check
                    )
                except NotARegularFile as exc:
                    raise HookError(str(exc)) from None
                except FileNotFoundError:
                    # The tools are given over the transcript when it exists.
                    _log.warning("transcript %s not found; judged without it", request.transcript_path)
                    rendered = None
                except OSError as exc:
                    raise HookError(
                        f"transcript {request.transcript_path} cannot be read: {exc.strerror or exc}"
                    ) from None
                if rendered is not None:
                    tools = TranscriptTools(rendered, grep_seconds=self.grep_seconds, budget=budget)
            return await self._converse(model, env, request, prompt, tools, deadline, executor)

    async def _converse(
        self,
        model: ResolvedModel,
        env: Mapping[str, str],
        request: PromptRequest,
        prompt: str,
        tools: TranscriptTools | None,
        deadline: float,
        executor: Executor,
    ) -> PromptVerdict:
        text_tools = text_tools_enabled(env) if self.text_tools is None else self.text_tools
        trace = JudgementTrace()
        options: dict[str, Any] = {
            "max_tool_rounds": self.max_tool_rounds,
            "executor": executor,
            "text_tools": text_tools,
            "trace": trace,
            "evidence_first": evidence_first_enabled(env),
            "evidence": None,
        }
        if request.hook.evidence == "required":
            stop = request.context.get("hook_event_name") in STOP_EVENTS
            options["evidence"] = EvidenceCheck(tools, reasonless_allows=stop)
        try:
            if self.provider_for is not None:
                return await run_judgement(
                    self._wrapped(self.provider_for(model)), prompt, tools, deadline, **options
                )
            if model.provider in ("openai", "anthropic") and model.provider not in _imported:
                # A first SDK import takes seconds: keep it off the event loop. (Not
                # ``sys.modules``: a module is there from the moment its import starts.)
                # A missing key is said at once, without that import.
                require_key(model, env)
                await asyncio.to_thread(importlib.import_module, model.provider)
                _imported.add(model.provider)
            async with leased_provider(model, env, request.base_dir) as provider:
                return await run_judgement(self._wrapped(provider), prompt, tools, deadline, **options)
        except HookError as exc:
            if exc.usage is None and trace.requests:  # answered, but no usable verdict: still paid
                exc.usage = Usage(inputTokens=trace.input_tokens, outputTokens=trace.output_tokens)
            raise
        finally:
            if self.observer is not None:
                self.observer(request, trace)

    def _wrapped(self, provider: Provider) -> Provider:
        return provider if self.wrap is None else self.wrap(provider)
