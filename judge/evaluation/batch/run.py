"""``judge eval --batch``: judge through the providers' batch APIs (OpenAI Batch API,
Anthropic Message Batches) at their lower price, hours of latency allowed.

One run:

1. :func:`~judge.evaluation.batch.requests.plan_batch` routes every (case, repeat):
   to a batch when all its hooks are prompt hooks on OpenAI or Anthropic models and its
   transcript can be inlined, else the normal way (the reason is recorded);
2. the batch requests not already answered (judgement cache) or submitted (``--resume``)
   are submitted, one batch per provider endpoint and model, and their ids are saved at
   once in ``DIR/batch.json``;
3. the normal cases are judged while the batches run;
4. the batches are polled every ``JUDGE_BATCH_POLL_SECONDS`` (default 30) until they end;
   a crash or Ctrl-C here loses nothing: ``--resume`` polls the saved batches again,
   never submitting them twice;
5. the answers go through the engine (:class:`BatchAnswerJudge`), so hook rules, verdict
   parsing, results and metrics are those of the normal path. A request the provider
   rejected is that hook's error (its ``failMode`` applies); requests a batch never ran
   (expired, cancelled, failed) are judged the normal way, with the reason recorded.

Batch judgements are priced at the list price less ``JUDGE_BATCH_DISCOUNT`` (default 0.5,
the providers' published batch discount) and their ``durationMs`` is the batch's
turnaround. ``report.json`` gets a ``batch`` section saying which cases went where.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.errors import HookError
from judge.evaluation.batch.answers import AnsweredFirstJudge, BatchAnswerJudge, keep_answers
from judge.evaluation.batch.requests import (
    Pair,
    Plan,
    max_transcript_chars,
    plan_batch,
)
from judge.evaluation.batch.state import (
    BATCH_ROUTE,
    BatchState,
    SavedBatch,
    SavedRoute,
    load_state,
    report_section,
    save_state,
)
from judge.evaluation.batch.status import (
    BatchClient,
    BatchError,
    BatchSetupError,
    BatchStatus,
    Outcome,
    batch_discount,
    poll_seconds,
)
from judge.evaluation.cache import JudgementCache
from judge.evaluation.interrupts import InterruptGuard
from judge.evaluation.progress import Progress
from judge.evaluation.runner import CaseResult, pairs, run_suite
from judge.evaluation.suite import Suite
from judge.hooks.engine import default_judge
from judge.hooks.judging import PromptJudge
from judge.llm.providers.clients import api_settings
from judge.llm.tiers import BASE_URL_VARS
from judge.logs.jsonl import now_iso
from judge.pricing import batch_cost
from judge.redact import redact_url


def _client(provider: str, base_url: str | None, env: Mapping[str, str]) -> BatchClient:
    if provider == "openai":
        from judge.evaluation.batch.openai import OpenAIBatches

        key, _ = api_settings(env, "OPENAI_API_KEY", "OPENAI_BASE_URL", "openai")
        return OpenAIBatches(key, base_url)
    from judge.evaluation.batch.anthropic import AnthropicBatches

    key, _ = api_settings(env, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "anthropic")
    return AnthropicBatches(key, base_url)


@dataclass
class BatchOutcome:
    """How a ``--batch`` run ended, and what to report."""

    state: BatchState
    interrupted: bool = False
    failure: str | None = None
    discount: float = 0.0
    max_transcript_chars: int = 0


class _Run:
    """One ``--batch`` run's steps: submitting, judging pairs, polling, reading answers."""

    def __init__(
        self,
        suite: Suite,
        out: Path,
        repeats: int,
        concurrency: int,
        progress: Progress,
        quiet: bool,
        env: Mapping[str, str],
        say: Callable[[str], None],
    ) -> None:
        self.suite, self.out, self.repeats, self.concurrency = suite, out, repeats, concurrency
        self.progress, self.quiet, self.env, self.note = progress, quiet, env, say
        self.all_pairs = set(pairs(suite.cases, repeats))
        self.clients: dict[tuple[str, str | None], BatchClient] = {}

    def say(self, text: str) -> None:
        if not self.quiet:
            self.note(text)

    def client(self, provider: str, base_url: str | None) -> BatchClient:
        if base_url is not None and "***" in base_url:  # saved without its credentials
            live = self.env.get(BASE_URL_VARS.get(provider, ""))
            base_url = live if live and redact_url(live) == base_url else base_url
        found = self.clients.get((provider, base_url))
        if found is None:
            found = self.clients[(provider, base_url)] = _client(provider, base_url, self.env)
        return found

    def judge_pairs(
        self,
        todo: set[Pair],
        judge: PromptJudge | None,
        cache_path: Path | None,
        emit: Callable[[CaseResult], None],
    ) -> bool:
        """Judge ``todo`` through the runner; False when Ctrl-C stopped it."""
        if not todo:
            return True
        return run_suite(
            self.suite,
            repeats=self.repeats,
            concurrency=self.concurrency,
            judge=judge,
            cache_path=cache_path,
            on_result=emit,
            skip=self.all_pairs - todo,
            guard=InterruptGuard(note=self.note),
        )

    def submit(self, plan: Plan, state: BatchState, needed: set[str]) -> None:
        covered = {key for saved in state.batches for key in saved.keys}
        groups: dict[tuple[str, str | None, str], list[str]] = {}
        for key in sorted(needed - covered):
            groups.setdefault(plan.requests[key].group, []).append(key)
        for (provider, base_url, model), keys in groups.items():
            client = self.client(provider, base_url)
            for chunk in _chunks(keys, plan, client.max_requests, client.max_bytes):
                batch_id = client.submit((key, plan.body(key)) for key in chunk)
                state.batches.append(
                    SavedBatch(
                        provider=provider,
                        base_url=redact_url(base_url) if base_url else base_url,  # batch.json is an artifact
                        model=model,
                        id=batch_id,
                        keys=chunk,
                        submitted_at=now_iso(),
                    )
                )
                save_state(self.out, state)  # before anything else can fail: --resume finds it
                self.say(
                    f"batch: submitted {provider} batch {batch_id} ({len(chunk)} request(s), model {model})"
                )

    def poll(self, batches: list[SavedBatch], state: BatchState, interval: float) -> dict[str, BatchStatus]:
        statuses: dict[str, BatchStatus] = {}
        while True:
            for saved in batches:
                if saved.id in statuses and statuses[saved.id].ended:
                    continue
                status = self.client(saved.provider, saved.base_url).poll(saved.id)
                statuses[saved.id] = status
                saved.status, saved.problem, saved.elapsed_s = status.status, status.problem, status.elapsed_s
            save_state(self.out, state)
            done = sum(s.done for s in statuses.values())
            total = sum(s.total for s in statuses.values()) or sum(len(b.keys) for b in batches)
            words = ", ".join(f"{b.provider} {b.id} {statuses[b.id].status}" for b in batches)
            self.progress.status(f"batches: {done}/{total} requests done ({words})")
            if all(s.ended for s in statuses.values()):
                return statuses
            time.sleep(interval)

    def answers(
        self, active: list[SavedBatch], state: BatchState, interval: float
    ) -> tuple[dict[str, Outcome], dict[str, float]]:
        """Poll ``active`` until they end; each request's outcome and its batch's turnaround."""
        answers: dict[str, Outcome] = {}
        elapsed: dict[str, float] = {}
        if not active:
            return answers, elapsed
        statuses = self.poll(active, state, interval)
        for saved in active:
            status = statuses[saved.id]
            if status.problem is not None:
                self.say(
                    f"batch: {saved.provider} batch {saved.id} {status.problem}; "
                    "its unfinished requests are judged the normal way"
                )
            found = self.client(saved.provider, saved.base_url).results(status)
            why = (
                f"{status.problem} before judging it"
                if status.problem
                else f"({status.status}) returned no result for it"
            )
            missing = Outcome("unfinished", f"the batch {why}")
            for key in saved.keys:
                answers[key] = found.get(key) or missing
                elapsed[key] = status.elapsed_s or 0.0
        return answers, elapsed


def _chunks(keys: list[str], plan: Plan, max_requests: int, max_bytes: int) -> list[list[str]]:
    out: list[list[str]] = [[]]
    size = 0
    for key in keys:
        body = plan.requests[key].size + 200  # the line's envelope
        if out[-1] and (len(out[-1]) >= max_requests or size + body > max_bytes):
            out.append([])
            size = 0
        out[-1].append(key)
        size += body
    return [chunk for chunk in out if chunk]


def batch_settings_problem(env: Mapping[str, str] | None = None) -> str | None:
    """What is wrong with the ``JUDGE_BATCH_*`` settings (None: nothing)."""
    env = os.environ if env is None else env
    try:
        batch_discount(env), poll_seconds(env), max_transcript_chars(env)
    except BatchSetupError as exc:
        return str(exc)
    return None


def _use_answers(
    run: _Run,
    plan: Plan,
    todo_batch: dict[Pair, list[str]],
    needed: set[str],
    answers: dict[str, Outcome],
    elapsed: dict[str, float],
    routes: dict[Pair, str],
    discount: float,
    judge: PromptJudge | None,
    cache: JudgementCache | None,
    emit: Callable[[CaseResult], None],
) -> bool:
    """Judge the batched pairs from the batches' answers; a pair whose batch did not finish
    uses what it did answer (it is paid for) and judges the rest the normal way. False:
    interrupted."""
    fallback: dict[Pair, str] = {}
    for pair, keys in todo_batch.items():
        unfinished = [answers[k].value for k in keys if k in needed and answers[k].kind == "unfinished"]
        if unfinished:
            fallback[pair] = routes[pair] = str(unfinished[0])
    ready = set(todo_batch) - set(fallback)

    def emit_batch(result: CaseResult) -> None:
        result.cost_usd = batch_cost(result.cost_usd, discount)
        if not result.cached:
            result.duration_ms = round(
                max((elapsed.get(k, 0.0) for k in todo_batch[(result.id, result.repeat)]), default=0.0)
                * 1000.0,
                3,
            )
        emit(result)

    answer_judge = BatchAnswerJudge(answers, plan.providers, cache)
    if not run.judge_pairs(ready, answer_judge, None, emit_batch):
        return False
    live = judge if judge is not None else default_judge()
    return run.judge_pairs(set(fallback), AnsweredFirstJudge(answer_judge, live, cache), None, emit)


def run_batch(
    suite: Suite,
    *,
    out: Path,
    repeats: int,
    concurrency: int,
    skip: set[Pair],
    cache_path: Path | None,
    judge: PromptJudge | None,
    resume: bool,
    on_result: Callable[[CaseResult], None],
    progress: Progress,
    quiet: bool = False,
    env: Mapping[str, str] | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> BatchOutcome:
    """Run ``suite``'s pairs not in ``skip`` through batches where possible (module docstring)."""
    env = os.environ if env is None else env
    state = load_state(out) if resume else BatchState()
    outcome = BatchOutcome(state)
    try:
        outcome.discount = batch_discount(env)
        interval = poll_seconds(env)
        outcome.max_transcript_chars = max_transcript_chars(env)
    except BatchSetupError as exc:
        outcome.failure = str(exc)
        return outcome
    try:
        plan = plan_batch(suite, repeats, env)
    except KeyboardInterrupt:
        outcome.interrupted = True
        return outcome
    routes = state.route_map()
    for pair in pairs(suite.cases, repeats):
        if pair not in skip or pair not in routes:
            routes[pair] = BATCH_ROUTE if pair in plan.batch else plan.normal[pair]
    todo_batch = {pair: keys for pair, keys in plan.batch.items() if pair not in skip}
    todo_normal = {pair for pair in plan.normal if pair not in skip}
    run = _Run(suite, out, repeats, concurrency, progress, quiet, env, say)
    total = len(run.all_pairs)
    progress.start(total, done=total - len(todo_batch) - len(todo_normal))

    def emit(result: CaseResult) -> None:
        on_result(result)
        progress.advance(result)

    cache = JudgementCache(cache_path) if cache_path is not None else None
    try:
        reasons = Counter(routes[p] for p in todo_normal)
        run.say(
            f"batch: {len(todo_batch)} judgement(s) go to batch APIs, {len(todo_normal)} the normal way"
            + (" (" + "; ".join(f"{n} x {why}" for why, n in reasons.most_common()) + ")" if reasons else "")
        )
        needed = {
            key for keys in todo_batch.values() for key in keys if cache is None or cache.get(key) is None
        }
        try:
            run.submit(plan, state, needed)
        except (BatchError, HookError) as exc:
            outcome.failure = f"cannot submit the batch: {exc}"
            return outcome
        if not run.judge_pairs(todo_normal, judge, cache_path, emit):
            outcome.interrupted = True
            return outcome
        active = [saved for saved in state.batches if needed & set(saved.keys)]
        try:
            answers, elapsed = run.answers(active, state, interval)
        except BatchError as exc:
            outcome.failure = f"polling the batches failed: {exc}"
            return outcome
        used = _use_answers(
            run, plan, todo_batch, needed, answers, elapsed, routes, outcome.discount, judge, cache, emit
        )
        if not used:
            outcome.interrupted = True
            return outcome
        keep_answers(answers, plan, cache)  # after the judging, which reports its own cache hits
        return outcome
    except KeyboardInterrupt:  # while planning, submitting or polling: the batches are saved
        outcome.interrupted = True
        return outcome
    finally:
        order = pairs(suite.cases, repeats)
        state.routes = [SavedRoute(id=i, repeat=r, route=routes[(i, r)]) for i, r in order]
        save_state(out, state)
        if cache is not None:
            cache.close()
        plan.close()
        progress.finish()


def add_batch_section(out: Path, outcome: BatchOutcome) -> dict[str, Any]:
    """Add the ``batch`` section to ``DIR/report.json``; the section."""
    import json

    section = report_section(outcome.state, outcome.discount, outcome.max_transcript_chars)
    path = out / "report.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    report["batch"] = section
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return section
