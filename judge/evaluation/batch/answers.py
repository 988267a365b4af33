"""The batch's answers as a judge: :class:`BatchAnswerJudge` answers the engine's prompt
requests from what a provider batch returned (or from the judgement cache), so a batch
run goes through the same engine, reports and cache as a live one."""

from __future__ import annotations

from collections.abc import Mapping

from judge.errors import HookError
from judge.evaluation.batch.requests import Plan, batch_key, read_answer
from judge.evaluation.batch.status import Outcome
from judge.evaluation.cache import CachingJudge, JudgementCache
from judge.hooks.judging import PromptJudge, PromptRequest, PromptVerdict
from judge.llm.providers.base import SDKProvider


class BatchAnswerJudge(CachingJudge):
    """Answers the engine's prompt requests from batch outcomes (or the judgement cache,
    where batch verdicts are kept apart from normal ones by :func:`batch_key`)."""

    def __init__(
        self,
        outcomes: Mapping[str, Outcome],
        providers: Mapping[str, SDKProvider],
        cache: JudgementCache | None,
    ) -> None:
        self.outcomes = outcomes
        self.providers = providers
        self.batch_cache = cache
        self.hits = 0
        self.misses = 0

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        raise HookError("a batch judgement needs its case id")  # the runner always passes it

    async def evaluate_cached(
        self, request: PromptRequest, case_id: str | None = None
    ) -> tuple[PromptVerdict, bool]:
        key = batch_key(request, case_id or "")
        if self.batch_cache is not None:
            found = self.batch_cache.get(key)
            if found is not None:
                self.hits += 1
                return found, True
        self.misses += 1
        outcome = self.outcomes.get(key)
        if outcome is None or outcome.kind == "unfinished":
            raise HookError("the batch returned no answer for this judgement")
        if outcome.kind == "error":
            raise HookError(str(outcome.value))
        try:
            verdict = read_answer(_provider_for(self.providers, request), outcome.value)
        except HookError:
            raise
        except Exception as exc:  # a malformed answer body (TransientError: no choices)
            raise HookError(f"the batch answer cannot be read: {exc}") from None
        if self.batch_cache is not None:
            self.batch_cache.put(key, verdict)
        return verdict, False


def _provider_for(providers: Mapping[str, SDKProvider], request: PromptRequest) -> SDKProvider:
    from judge.llm.tiers import resolve_model

    if not isinstance(request.hook.model, str):  # cascades never go to a batch
        raise HookError("a model cascade is not judged in a batch")
    return providers[resolve_model(request.hook.model, request.models).label]


class AnsweredFirstJudge(CachingJudge):
    """For a case a batch answered in part (it expired, was cancelled or failed before the
    rest): the batch's answers where it gave one, already paid for, and ``live`` (cached
    as usual) for the requests it left unanswered."""

    def __init__(self, answers: BatchAnswerJudge, live: PromptJudge, cache: JudgementCache | None) -> None:
        self.answers = answers
        self.live: PromptJudge = CachingJudge(live, cache) if cache is not None else live
        self.hits = 0
        self.misses = 0

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        return await self.live.evaluate(request)

    async def evaluate_cached(
        self, request: PromptRequest, case_id: str | None = None
    ) -> tuple[PromptVerdict, bool]:
        key = batch_key(request, case_id or "")
        kept = self.answers.batch_cache is not None and self.answers.batch_cache.get(key) is not None
        outcome = self.answers.outcomes.get(key)
        if kept or (outcome is not None and outcome.kind != "unfinished"):
            return await self.answers.evaluate_cached(request, case_id)
        if isinstance(self.live, CachingJudge):
            return await self.live.evaluate_cached(request, case_id)
        return await self.live.evaluate(request), False


def keep_answers(outcomes: Mapping[str, Outcome], plan: Plan, cache: JudgementCache | None) -> None:
    """Put every verdict the batches returned in the cache, the ones the engine will not
    ask for included (a PreToolUse hook after a denial): each was paid for, and an
    answer left out would be asked for, and waited on, in a new batch on every re-run."""
    if cache is None:
        return
    for key, outcome in outcomes.items():
        request = plan.requests.get(key)
        if outcome.kind != "answer" or request is None or cache.get(key) is not None:
            continue
        provider = plan.providers.get(f"{request.provider}:{request.model}")
        if provider is None:
            continue
        try:
            cache.put(key, read_answer(provider, outcome.value))
        except Exception:  # not a verdict: the engine reports it if it asks for this one
            continue
