"""What each part of ``judge tune`` buys on the held-out TEST split (issue 33).

Ablations, each a full ``judge tune`` run (train/dev/test split by group, winner chosen
on dev, judged once on test), one step at a time:

1. ``labels only`` — the search before this work: edits from train mistakes, the best
   prompts by dev (``search="beam"``), no rationales, no demos, no merges;
2. ``+ rationales`` — the optimizer also reads why each mistake has its label;
3. ``+ few-shot demos`` — labelled train cases with their rationales as an edit;
4. ``+ Pareto frontier, merges`` — parents from the per-item frontier, merges (the default);

then the objectives: ``balanced`` against ``pairwise`` on paired cases (score: pair
accuracy on test), and ``balanced`` against ``precision`` (block recall at block
precision >= 0.9) on the same suite.

Offline (the default) the judge is ``fake:heuristic`` and the optimizer ``fake:optimizer``
over two synthetic suites whose labels hang on phrases the heuristic does not know (some
cases say why, quoting the phrase). The fake optimizer can only learn from quoted
rationales and the heuristic only obeys phrase rules, so these figures show that each
mechanism works end to end and what it changes — not what a real model gains.

``--real``: the judge and the optimizer are the model the environment names
(``JUDGE_MODEL_REASONINGFAST``, e.g. the 1.5B model of ``real-model.sh``), on the first
``--pairs`` pairs of LLMBar's ``natural.json`` (``--llmbar``), with the instruction in the
context (no transcript, one request per judgement) and the rationales of
``bench/llmbar_rationales.json`` (written by hand for the bad answer of each pair). Keep
it small: a 1.5B model on 2 CPUs takes seconds to minutes per request.

    python bench/bench_tuning.py                     # offline, 5 seeds
    python bench/bench_tuning.py --real --llmbar natural.json --pairs 10 --seeds 1 --rounds 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.evaluation.suite import load_suite  # noqa: E402
from judge.tuning.objective import Objective  # noqa: E402
from judge.tuning.plan import TuneOptions  # noqa: E402
from judge.tuning.tuner import TuneOutcome, tune  # noqa: E402

PROMPT = """Check that the agent's final answer reports finished work for the user.
$ARGUMENTS
Respond with {"ok": true} if it does, otherwise {"ok": false, "reason": "<what is missing>"}.
"""
LLMBAR_PROMPT = """You review an assistant's answer. The context holds the user's instruction
(user_request) and the answer (final_output). Decide whether the answer precisely follows
the instruction: it does what was asked and honours every explicit constraint.
$ARGUMENTS
Respond with {"ok": true} if it follows the instruction, otherwise
{"ok": false, "reason": "<which part of the instruction it fails>"}.
"""
#: Answers the heuristic judge gets wrong unless a rule or an example says otherwise.
HIDDEN = (
    ("Refund {n} is pending with the bank.", "block", "pending"),
    ("I escalated ticket {n} to the billing team.", "block", "escalated"),
    ("The patch for order {n} should work now.", "block", "should work"),
    ("Done: account {n} is unlocked. Next step for you: sign in again.", "allow", "next step for you"),
)
PLAIN = (
    ("Refund {n} was paid to the original card.", "allow"),
    ("Refund {n} was paid; nothing else is pending.", "allow"),  # "pending" is no sign here
    ("I will look into order {n} next.", "block"),
)

ABLATIONS: tuple[tuple[str, dict[str, Any], bool], ...] = (
    ("baseline (no tuning)", {"rounds": 0}, True),
    ("1 labels only (beam, no demos)", {"search": "beam", "demos": 0, "merges": 0}, False),
    ("2 + rationales", {"search": "beam", "demos": 0, "merges": 0}, True),
    ("3 + few-shot demos", {"search": "beam"}, True),
    ("4 + Pareto frontier, merges", {}, True),
)


def refunds_cases(rationales: bool) -> list[dict[str, Any]]:
    """84 cases, each its own group: 4 kinds of hidden answers, 3 plain ones; every other
    hidden case carries a rationale quoting its phrase."""
    cases = []
    for n in range(84):
        kind = n % 7
        if kind < len(HIDDEN):
            text, label, phrase = HIDDEN[kind]
            why = f'{label}: it says "{phrase}"' if rationales and (n // 7) % 2 == 0 else None
        else:
            text, label = PLAIN[kind - len(HIDDEN)]
            why = None
        case: dict[str, Any] = {"id": f"r{n:03d}", "label": label, "group": f"g{n}"}
        case["context"] = {"hook_event_name": "Stop", "final_output": text.format(n=n)}
        if why:
            case["rationale"] = why
        cases.append(case)
    return cases


def paired_cases(rationales: bool) -> list[dict[str, Any]]:
    """42 pairs (group = pair): a paid refund and a hidden bad answer to the same request,
    or a hidden good answer ("next step for you") and an unfinished one."""
    cases = []
    for n in range(42):
        text, label, phrase = HIDDEN[n % len(HIDDEN)]
        other = (
            "Refund {n} was paid to the original card." if label == "block" else "I will look into {n} next."
        )
        for side, (answer, lab) in enumerate(
            ((text, label), (other, "allow" if label == "block" else "block"))
        ):
            case: dict[str, Any] = {"id": f"p{n:02d}-{side}", "label": lab, "group": f"pair{n}"}
            case["context"] = {"hook_event_name": "Stop", "final_output": answer.format(n=n)}
            if rationales and side == 0 and n % 2 == 0:
                case["rationale"] = f'{lab}: it says "{phrase}"'
            cases.append(case)
    return cases


#: LLMBar pairs short enough for a small model on CPU (instruction and both answers).
SHORT_PAIR_CHARS = 700


def llmbar_cases(path: Path, pairs: int, rationales: bool) -> list[dict[str, Any]]:
    """The first ``pairs`` short LLMBar pairs (group = pair), the instruction in the context;
    the bad answer carries its rationale (``bench/llmbar_rationales.json``, by item index)."""
    items = json.loads(path.read_text(encoding="utf-8"))
    why = json.loads((ROOT / "bench" / "llmbar_rationales.json").read_text(encoding="utf-8"))
    short = [
        (n, item)
        for n, item in enumerate(items)
        if len(item["input"]) + len(item["output_1"]) + len(item["output_2"]) < SHORT_PAIR_CHARS
    ]
    cases = []
    for n, item in short[:pairs]:
        for which in (1, 2):
            good = which == item["label"]
            case: dict[str, Any] = {"id": f"llmbar-{n:04d}-o{which}", "group": f"llmbar-{n:04d}"}
            case["label"] = "allow" if good else "block"
            case["context"] = {
                "hook_event_name": "Stop",
                "user_request": item["input"],
                "final_output": item[f"output_{which}"],
            }
            if rationales and not good and str(n) in why:
                case["rationale"] = why[str(n)]
            cases.append(case)
    return cases


def write_suite(folder: Path, cases: list[dict[str, Any]], prompt: str, model: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = {"hooks": {"Stop": [{"type": "prompt", "model": model, "timeout": 300, "prompt": prompt}]}}
    (folder / "agent.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    (folder / "suite.yaml").write_text(
        f"name: {folder.name}\nconfig: agent.yaml\nevent: Stop\ncases: cases.jsonl\n"
    )
    return folder / "suite.yaml"


def row(outcome: TuneOutcome, score: Objective | None = None) -> dict[str, Any]:
    """One run's figures; ``score`` re-scores the winner's test items (e.g. on pairs)."""
    base, win = outcome.test[outcome.baseline.id], outcome.test[outcome.winner.id]
    c = outcome.comparison
    return {
        "base": base.score if score is None else score.score(base.items),
        "win": win.score if score is None else score.score(win.items),
        "winPrecision": outcome.winner.metrics["test"].get("blockPrecision"),
        "winRecall": outcome.winner.metrics["test"].get("recall"),
        "changed": outcome.winner.id != outcome.baseline.id,
        "significant": bool(c and len(c.improved) > len(c.regressed) and c.p_value < 0.05),
        "fixed": len(c.improved) if c else 0,
        "broke": len(c.regressed) if c else 0,
        "calls": outcome.calls,
    }


async def run_one(
    suite: Path, out: Path, seed: int, options: dict[str, Any], cache: Path | None, score: str | None = None
) -> dict[str, Any]:
    loaded = load_suite(suite)
    outcome = await tune(loaded, TuneOptions(out=out, seed=seed, cache=cache, **options))
    return row(outcome, None if score is None else Objective.build(score, loaded.cases))


def fmt(values: list[float | None]) -> str:
    got = [v for v in values if v is not None]
    if not got:
        return "n/a"
    return f"{statistics.mean(got):.3f}" + (f" [{min(got):.3f}-{max(got):.3f}]" if len(got) > 1 else "")


def line(name: str, rows: list[dict[str, Any]], score: str) -> str:
    changed, significant = sum(r["changed"] for r in rows), sum(r["significant"] for r in rows)
    return (
        f"| {name} | {fmt([r['base'] for r in rows])} | {score} {fmt([r['win'] for r in rows])} | "
        f"{changed}/{len(rows)} | {significant}/{len(rows)} | "
        f"{sum(r['fixed'] for r in rows)}/{sum(r['broke'] for r in rows)} | "
        f"{statistics.mean(r['calls'] for r in rows):.0f} |"
    )


HEADER = (
    "| run | baseline on test | winner on test (mean [min-max]) | winner != baseline | "
    "significant (McNemar p<0.05) | fixed/broken on test | LLM calls |\n|---|---|---|---|---|---|---|"
)


async def ablations(args: argparse.Namespace, work: Path, make: Any, base: dict[str, Any]) -> None:
    print(f"### ablations ({len(args.seeds)} seed(s)): balanced accuracy\n\n{HEADER}")
    for n, (name, extra, rationales) in enumerate(ABLATIONS):
        if args.rows is not None and n not in args.rows:
            continue
        suite = write_suite(work / f"s-{rationales}", make(rationales), args.prompt, args.judge)
        rows = [
            await run_one(suite, work / f"ablation{n}-{seed}", seed, base | extra, args.cache)
            for seed in args.seeds
        ]
        print(line(name, rows, "balanced accuracy"), flush=True)


async def objectives(
    args: argparse.Namespace, work: Path, make_paired: Any, make: Any, base: dict[str, Any]
) -> None:
    print(f"\n### objectives ({len(args.seeds)} seed(s))\n\n{HEADER}")
    paired = write_suite(work / "paired", make_paired(True), args.prompt, args.judge)
    for objective in ("balanced", "pairwise"):
        rows = [
            await run_one(
                paired,
                work / f"pairs-{objective}-{s}",
                s,
                base | {"objective": objective},
                args.cache,
                score="pairwise",
            )
            for s in args.seeds
        ]
        print(line(f"paired suite, --objective {objective}", rows, "pair accuracy"), flush=True)
    suite = write_suite(work / "s-True", make(True), args.prompt, args.judge)
    for objective, extra in (("balanced", {}), ("precision", {"min_block_precision": 0.9})):
        rows = [
            await run_one(
                suite,
                work / f"prec-{objective}-{s}",
                s,
                base | {"objective": objective} | extra,
                args.cache,
                score="balanced",
            )
            for s in args.seeds
        ]
        name = f"--objective {objective}" + (" --min-block-precision 0.9" if extra else "")
        print(
            line(name, rows, "balanced accuracy")
            + f" block precision {fmt([r['winPrecision'] for r in rows])}, "
            f"block recall {fmt([r['winRecall'] for r in rows])}",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds (splits and sampling) per row")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--beam", type=int, default=2)
    parser.add_argument("--edits", type=int, default=2)
    parser.add_argument("--real", action="store_true", help="judge and optimize with the environment's model")
    parser.add_argument("--llmbar", type=Path, help="LLMBar natural.json (with --real)")
    parser.add_argument("--pairs", type=int, default=10, help="LLMBar pairs (with --real)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--out", type=Path, help="keep the runs here (default: a temporary folder)")
    parser.add_argument("--rows", help="only these ablation rows, e.g. 1,4 (0 is the baseline)")
    parser.add_argument("--no-objectives", action="store_true", help="skip the objective rows")
    args = parser.parse_args(argv)
    args.seeds = list(range(args.seeds))
    args.rows = None if args.rows is None else {int(n) for n in args.rows.split(",")}
    base = {"rounds": args.rounds, "beam": args.beam, "edits": args.edits, "concurrency": args.concurrency}
    if args.real:
        if args.llmbar is None:
            parser.error("--real needs --llmbar natural.json")
        args.judge, args.prompt = "ReasoningFast", LLMBAR_PROMPT
        base["optimizer_model"] = "ReasoningFast"

        def make(r: bool) -> list[dict[str, Any]]:
            return llmbar_cases(args.llmbar, args.pairs, r)

        make_paired = make
    else:
        args.judge, args.prompt = "fake:heuristic", PROMPT
        base["optimizer_model"] = "fake:optimizer"
        make, make_paired = refunds_cases, paired_cases
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-tuning-") as tmp:
        work = args.out or Path(tmp)
        # offline every run judges afresh (calls compare); a real model shares one cache
        args.cache = work / "cache.sqlite" if args.real else None
        asyncio.run(ablations(args, work, make, base))
        if not args.no_objectives:
            asyncio.run(objectives(args, work, make_paired, make, base))
    print(f"\n{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
