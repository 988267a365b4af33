"""Model cascade vs the strong model alone: accuracy, cost and latency, measured in one run.

The suite is `evals/cascade` (20 labelled final answers). Two scripted models answer on
the local model server through the real OpenAI SDK: a cheap, quick one (`fast-model`,
keyword rules that block finished answers mentioning a "next step", cannot decide on an
emoji and miss dangerous answers that read as finished) and a careful, slow one
(`strong-model`, right on all but one). The same cases are judged three ways with
`judge eval`: the strong model alone (the baseline), the fast model alone, and the
cascade `[fast-model, strong-model]`. Costs use made-up prices (fast: $0.10/$0.40,
strong: $3/$15 per million input/output tokens); tokens are the server's counts.

    .venv/bin/python bench/bench_cascade.py [--fast-latency 0.05] [--strong-latency 0.4] [--repeats 1]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, table

from judge.cli import main as cli_main
from judge.testing import LLMRequest, LLMServer, Reply, say

SUITE = ROOT / "evals" / "cascade"
PRICES = {
    "openai:fast-model": {"input": 0.1, "output": 0.4},
    "openai:strong-model": {"input": 3.0, "output": 15.0},
}
FAST_BLOCKS = re.compile(r"TODO|not yet|skipped|failing|untested|next step", re.IGNORECASE)
STRONG_BLOCKS = re.compile(r"TODO|not yet|skipped|failing|rm -rf|hardcoded", re.IGNORECASE)
ANSWER = re.compile(r'"final_output": "((?:[^"\\]|\\.)*)"')
UNFINISHED = "The answer is not finished."
DANGEROUS = "The answer reports unfinished, failing or dangerous work; finish it and report the checks."
CAREFUL = "I read the answer in full: the work it describes is finished, checked and safe to hand over."


def answer_for(fast_latency: float, strong_latency: float):  # type: ignore[no-untyped-def]
    def answer(request: LLMRequest) -> Reply:
        found = ANSWER.search(request.text)
        text = json.loads(f'"{found.group(1)}"') if found else ""
        if request.model == "fast-model":
            if FAST_BLOCKS.search(text):
                return Reply(
                    text='{"ok": false, "reason": "The answer is not finished."}', delay=fast_latency
                )
            if "\U0001f389" in text:
                return say("Hard to say, it looks cheerful.", delay=fast_latency)
            return Reply(text='{"ok": true}', delay=fast_latency)
        if STRONG_BLOCKS.search(text):
            reason = (
                "The answer reports unfinished, failing or dangerous work; finish it and report the checks."
            )
            return Reply(text=json.dumps({"ok": False, "reason": reason}), delay=strong_latency)
        return Reply(text=json.dumps({"ok": True, "reason": CAREFUL}), delay=strong_latency)

    return answer


def variant(work: Path, name: str, model: object) -> Path:
    """A copy of the suite whose prompt hook judges with ``model``."""
    folder = work / name
    folder.mkdir()
    config = yaml.safe_load((SUITE / "agent.yaml").read_text(encoding="utf-8"))
    config["prices"] = PRICES
    config["hooks"]["Stop"][0]["model"] = model
    (folder / "agent.yaml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    (folder / "cases.jsonl").write_text((SUITE / "cases.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "suite.yaml").write_text((SUITE / "suite.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    return folder / "suite.yaml"


def run(suite: Path, out: Path, repeats: int) -> tuple[dict[str, object], float]:
    start = time.perf_counter()
    args = ["eval", str(suite), "--out", str(out), "--no-cache", "--quiet", "--repeats", str(repeats)]
    args += ["--concurrency", "4", "--workers", "1"]
    code = cli_main(args)
    wall = time.perf_counter() - start
    if code not in (0, 1):
        raise RuntimeError(f"judge eval {suite} exited {code}")
    return json.loads((out / "report.json").read_text(encoding="utf-8")), wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast-latency", type=float, default=0.05, help="seconds per fast-model answer")
    parser.add_argument("--strong-latency", type=float, default=0.4, help="seconds per strong-model answer")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)
    rows = []
    with LLMServer(handler=answer_for(args.fast_latency, args.strong_latency), record=False) as server:
        saved = dict(os.environ)
        os.environ.update(server.env("openai"))
        try:
            with tempfile.TemporaryDirectory(prefix="bench-cascade-") as tmp:
                work = Path(tmp)
                runs = [
                    ("strong alone (baseline)", "openai:strong-model"),
                    ("fast alone", "openai:fast-model"),
                    ("cascade [fast, strong]", ["openai:fast-model", "openai:strong-model"]),
                ]
                importlib.import_module("openai")  # the SDK's first import is not the judge's time
                run(variant(work, "warmup", "openai:fast-model"), work / "warmup-out", 1)
                results = {}
                for n, (label, model) in enumerate(runs):
                    suite = variant(work, f"v{n}", model)
                    results[label] = run(suite, work / f"out{n}", args.repeats)
        finally:
            os.environ.clear()
            os.environ.update(saved)
    base, _ = results["strong alone (baseline)"]
    base_cost = float(base["costUsd"])  # type: ignore[arg-type]
    for label, (report, _wall) in results.items():
        cascade = (report.get("cascade") or {}).get("agent[0]")  # type: ignore[union-attr]
        strong_calls = cascade["stages"][1]["calls"] if cascade else (report["n"] if "strong" in label else 0)
        latency = report["latencyMs"]["mean"]  # type: ignore[index]
        cost = float(report["costUsd"])  # type: ignore[arg-type]
        rows.append(
            [
                label,
                report.get("accuracy"),
                report["errors"],
                cost,
                f"{cost / base_cost:.2f}x" if base_cost else "n/a",
                f"{strong_calls}/{report['n']}",
                latency,
                f"{latency / base['latencyMs']['mean']:.2f}x",  # type: ignore[index]
            ]
        )
    print(
        f"evals/cascade, {base['n']} judgements per row; fast-model answers in {args.fast_latency:g} s, "
        f"strong-model in {args.strong_latency:g} s (local server, OpenAI SDK)"
    )
    headers = [
        "judged by",
        "accuracy",
        "errors",
        "cost USD",
        "cost vs strong",
        "strong calls",
        "mean ms",
        "ms vs strong",
    ]
    print(table(headers, rows))
    cascade_report = results["cascade [fast, strong]"][0]["cascade"]["agent[0]"]  # type: ignore[index]
    first = cascade_report["firstAlone"]
    print(
        f"in the cascade run: first stage alone accuracy {first['accuracy']:.3f} ({first['scored']} scored), "
        f"escalated {cascade_report['escalated']['judgements']}, strong overrode the fast model "
        f"{cascade_report['stages'][1]['overrides']} time(s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
