"""Rejections that cite evidence: how many hallucinated citations are caught, and the cost.

Runs the suite `evals/evidence/` twice in the same process, once with its hook's
`evidence: required` and once with `evidence: off` (the baseline), through the real path
(`run_cases` -> engine -> LLMJudge -> tool loop -> evidence check). The judge is scripted
(`evals/evidence/judge_script.yaml`, the fake provider) and every model call waits
`--latency` seconds, as a real model would. Some cases cite real lines; `reask-*` cases
hallucinate one citation and then correct it; `invented-*` cases (good answers) invent
their evidence twice. Case tags `hallucinated:N` say how many hallucinated citations a
case delivers when evidence is required.

Prints: hallucinated citations caught (target: all) and false alarms on real citations;
then per mode the model calls, tokens, wall time and accuracy, with ratios against
`evidence: off`, and the model calls per judgement of each kind of case.

    .venv/bin/python bench/bench_evidence.py [--repeats 5] [--latency 0.05] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, table

from judge.config import Config, HookSet
from judge.evaluation import compute_report, load_suite, run_cases
from judge.hooks.judging import PromptRequest
from judge.llm import JudgementTrace, LLMJudge
from judge.llm.providers.base import Completion, Message, Provider, ToolChoice, ToolSpec
from judge.llm.providers.fake import fake_provider

SUITE = ROOT / "evals" / "evidence" / "suite.yaml"
#: The suite's kinds of case (each case's first tag).
KINDS = ("genuine", "reask", "invented", "good")


class Metered:
    """A provider that waits ``latency`` per call and counts calls and tokens."""

    def __init__(self, inner: Provider, latency: float) -> None:
        self.inner = inner
        self.label = inner.label
        self.latency = latency
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0

    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        *,
        tool_choice: ToolChoice = "auto",
        timeout: float | None = None,
    ) -> Completion:
        self.calls += 1
        await asyncio.sleep(self.latency)
        completion = await self.inner.complete(messages, tools, tool_choice=tool_choice, timeout=timeout)
        self.input_tokens += completion.usage.input_tokens
        self.output_tokens += completion.usage.output_tokens
        return completion


def with_evidence(config: Config, evidence: str) -> Config:
    stop = [hook.model_copy(update={"evidence": evidence}) for hook in config.hooks.Stop]
    return config.model_copy(update={"hooks": HookSet(Stop=stop)})


async def run_mode(evidence: str, repeats: int, latency: float, concurrency: int) -> dict[str, Any]:
    suite = load_suite(SUITE)
    model = suite.config.hooks.Stop[0].model.removeprefix("fake:")
    provider = Metered(fake_provider(model, suite.base_dir), latency)
    traces: list[tuple[str, JudgementTrace]] = []

    def observe(request: PromptRequest, trace: JudgementTrace) -> None:
        traces.append((str(request.context.get("case")), trace))

    judge = LLMJudge(provider_for=lambda _model: provider, observer=observe)
    start = time.perf_counter()
    results = await run_cases(
        with_evidence(suite.config, evidence),
        suite.event,
        suite.cases,
        base_dir=suite.base_dir,
        repeats=repeats,
        concurrency=concurrency,
        judge=judge,
    )
    wall = time.perf_counter() - start
    report = compute_report(results, name=f"evidence {evidence}")
    tags = {case.id: case.tags for case in suite.cases}
    hallucinating = {cid for cid, t in tags.items() if any(x.startswith("hallucinated:") for x in t)}
    scripted = sum(int(t.split(":")[1]) for ts in tags.values() for t in ts if t.startswith("hallucinated:"))
    caught = sum(t.citation_problems for case, t in traces if case in hallucinating)
    false_alarms = sum(t.citation_problems for case, t in traces if "genuine" in tags[case])
    labels = {case.id: case.label for case in suite.cases}
    false_blocks = sum(1 for r in results if r.decision == "block" and labels[r.id] == "allow")
    return {
        "judgements": len(results),
        "calls": provider.calls,
        "tokens": provider.input_tokens + provider.output_tokens,
        "wall": wall,
        "accuracy": report.get("accuracy"),
        "reasks": sum(t.evidence_reasks for _, t in traces),
        "scripted": scripted * repeats if evidence == "required" else 0,
        "caught": caught,
        "false_alarms": false_alarms,
        "errors": sum(1 for r in results if r.error),
        "false_blocks": false_blocks,
        "calls_by_kind": {
            kind: sum(t.requests for case, t in traces if tags[case][0] == kind) for kind in KINDS
        },
        "judgements_by_kind": {kind: sum(1 for case, _ in traces if tags[case][0] == kind) for kind in KINDS},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="times each of the suite's cases is judged")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds each model call takes")
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args(argv)
    off = asyncio.run(run_mode("off", args.repeats, args.latency, args.concurrency))
    on = asyncio.run(run_mode("required", args.repeats, args.latency, args.concurrency))

    print(
        f"evals/evidence: {on['judgements']} judgements per mode ({args.repeats} repeats), model latency "
        f"{args.latency:g} s, concurrency {args.concurrency}; "
        f"{platform.machine()}, Python {platform.python_version()}"
    )
    print(
        f"hallucinated citations caught: {on['caught']}/{on['scripted']} "
        f"({'all' if on['caught'] == on['scripted'] else 'NOT all'}); false alarms on real citations: "
        f"{on['false_alarms']}; re-asks: {on['reasks']}; rejections left to failMode: {on['errors']}"
    )
    print(
        f"good answers blocked on invented evidence: {off['false_blocks']} with evidence off, "
        f"{on['false_blocks']} with evidence required (failMode allow)"
    )
    rows = []
    for name, m in (("evidence: off (baseline)", off), ("evidence: required", on)):
        rows.append(
            [
                name,
                m["calls"],
                f"{m['calls'] / off['calls']:.2f}x",
                m["tokens"],
                f"{m['tokens'] / off['tokens']:.2f}x",
                round(m["wall"], 3),
                f"{m['wall'] / off['wall']:.2f}x",
                m["accuracy"],
            ]
        )
    print(table(["mode", "model calls", "vs off", "tokens", "vs off", "wall s", "vs off", "accuracy"], rows))
    kinds = []
    for kind in KINDS:
        n_off, n_on = off["judgements_by_kind"][kind], on["judgements_by_kind"][kind]
        per_off = off["calls_by_kind"][kind] / max(1, n_off)
        per_on = on["calls_by_kind"][kind] / max(1, n_on)
        kinds.append([kind, n_on, round(per_off, 2), round(per_on, 2), f"{per_on / per_off:.2f}x"])
    print(table(["cases", "judgements", "calls/judgement off", "required", "vs off"], kinds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
