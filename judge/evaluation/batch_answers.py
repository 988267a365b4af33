"""The batch's answers as a judge: :class:`BatchAnswerJudge` answers the engine's prompt
requests from what a provider batch returned (or from the judgement cache), so a batch
run goes through the same engine, reports and cache as a live one."""

from __future__ import annotations

from collections.abc import Mapping

from judge.decision import PromptRequest, PromptVerdict
from judge.errors import HookError
from judge.evaluation.batch_requests import batch_key, read_answer
from judge.evaluation.batch_status import Outcome
from judge.evaluation.cache import CachingJudge, JudgementCache
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
