"""The judge on a REAL model behind an OpenAI-compatible server (llama.cpp, Ollama, vLLM).

Runs ``judge eval`` (in process, so each judgement's tool use can be observed) over
three suites, once with text tool calls on and once with them off
(``JUDGE_TEXT_TOOL_CALLS``), and prints per suite and mode:

- tool use: the share of transcript-dependent cases (every case with a transcript in
  the ``realmodel`` and ``llmbar`` suites) where the model called a tool before its
  verdict (until it has read something, the judge requires a call: ``tool_choice:
  required``, or a call schema where the server ignores that); "first time asked" counts
  only the judgements where the model did not first answer unread and get sent back;
  "read before verdict" also counts the read the judge makes itself for a model that
  still answers without reading (evidence first);
- verdicts parsed: judgements that ended in a parsed verdict (the rest are errors:
  unparseable answers and timeouts, counted separately);
- accuracy and Cohen's kappa (block = positive) with 95 % Wilson intervals;
- how many answers were blocked, and the output tokens of all judgements (a model that
  rambles shows here: every reply written to the token cap);
- seconds per judgement (median and mean, wall clock, tool rounds included).

Suites: ``evals/smoke`` (its prompt hook pointed at the model), ``evals/realmodel``
(transcript-dependent cases) and the first ``--pairs`` pairs of LLMBar's ``natural.json``
converted by ``judge datasets convert llmbar`` (two cases per pair). Usage::

    export OPENAI_BASE_URL=http://127.0.0.1:8089/v1 OPENAI_API_KEY=local
    python bench/bench_real_model.py --model openai:qwen2.5-coder-1.5b-instruct \\
        --llmbar path/to/llmbar/natural.json --pairs 40 --concurrency 2 --out bench-real

Every figure comes from this run; seconds depend on the machine and on what else runs
on it. ``--resume`` keeps finished judgements (results.jsonl and the tool-use log).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from judge.cli.eval import eval_main
from judge.evaluation.metrics import compute_report
from judge.evaluation.runner import read_results
from judge.evaluation.stats import wilson_interval
from judge.hooks.judging import PromptRequest
from judge.llm import JudgementTrace, LLMJudge

ROOT = Path(__file__).resolve().parents[1]
SUITES = ("smoke", "realmodel", "llmbar")
MODES = {"on": True, "off": False}


def _key(final_output: Any, transcript: str) -> str:
    return json.dumps([str(final_output or ""), transcript.strip()])


def _point_at_model(agent: Path, timeout: int) -> None:
    """Point every prompt hook of ``agent`` at the ReasoningFast tier with ``timeout``."""
    data = yaml.safe_load(agent.read_text(encoding="utf-8"))
    for hooks in (data.get("hooks") or {}).values():
        for hook in hooks:
            if hook.get("type") == "prompt":
                hook["model"] = "ReasoningFast"
                hook["timeout"] = timeout
    agent.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def prepare(out: Path, llmbar: Path | None, pairs: int, timeout: int) -> dict[str, Path]:
    """Suite folders under ``out/suites``, their hooks pointed at the model."""
    suites: dict[str, Path] = {}
    for name in ("smoke", "realmodel"):
        folder = out / "suites" / name
        folder.mkdir(parents=True, exist_ok=True)
        for item in (ROOT / "evals" / name).iterdir():
            if item.is_file():
                (folder / item.name).write_bytes(item.read_bytes())
        _point_at_model(folder / "agent.yaml", timeout)
        suites[name] = folder / "suite.yaml"
    if llmbar is not None:
        folder = out / "suites" / "llmbar"
        command = [sys.executable, "-m", "judge", "datasets", "convert", "llmbar", str(llmbar)]
        subprocess.run([*command, "--out", str(folder), "--limit", str(pairs)], check=True, cwd=ROOT)
        _point_at_model(folder / "agent.yaml", timeout)
        suites["llmbar"] = folder / "suite.yaml"
    return suites


def _cases(suite: Path) -> list[dict[str, Any]]:
    lines = (suite.parent / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def run(suite: Path, out: Path, mode: str, concurrency: int, resume: bool) -> None:
    """``judge eval SUITE --out OUT`` with an observing judge; traces to OUT/traces.jsonl."""
    out.mkdir(parents=True, exist_ok=True)
    traces = out / "traces.jsonl"
    if not resume:
        traces.write_text("", encoding="utf-8")

    def observe(request: PromptRequest, trace: JudgementTrace) -> None:
        path = request.transcript_path
        transcript = path.read_text(encoding="utf-8", errors="replace") if path is not None else ""
        line = {"key": _key(request.context.get("final_output"), transcript), **trace.__dict__}
        with traces.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")

    judge = LLMJudge(text_tools=MODES[mode], observer=observe)
    args = argparse.Namespace(
        suite=str(suite),
        out=str(out),
        concurrency=concurrency,
        repeats=1,
        resume=resume,
        no_cache=True,
        fail_under=[],
        cache=None,
        quiet=False,
    )
    os.environ["JUDGE_TEXT_TOOL_CALLS"] = "1" if MODES[mode] else "0"
    code = eval_main(args, judge=judge)
    if code not in (0, 1):
        raise SystemExit(f"judge eval failed on {suite} (exit {code})")


def _ci(successes: int, n: int) -> str:
    if n == 0:
        return "-"
    low, high = wilson_interval(successes, n)
    return f"{successes / n:.2f} [{low:.2f}, {high:.2f}]"


def summarize(suite: Path, out: Path) -> dict[str, Any]:
    """The figures of one run (see the module docstring)."""
    cases = {case["id"]: case for case in _cases(suite)}
    results = [r.model_dump(by_alias=True) for r in read_results(out / "results.jsonl")]
    report = compute_report(read_results(out / "results.jsonl"))  # also for an unfinished run
    traces: dict[str, dict[str, Any]] = {}
    trace_file = out / "traces.jsonl"
    for line in (trace_file.read_text() if trace_file.exists() else "").splitlines():
        if line.strip():
            record = json.loads(line)
            traces[record["key"]] = record
    dependent = used = unasked = read = 0
    text_calls = 0
    for result in results:
        case = cases[result["id"]]
        trace = traces.get(_key(case["context"].get("final_output"), case.get("transcript") or ""), {})
        calls = [str(c) for c in trace.get("tool_calls") or []]
        text_calls += any(c.startswith("text:") for c in calls)
        if case.get("transcript") or case.get("transcript_path"):
            dependent += 1
            decided = trace.get("verdict") is not None
            # the model's own calls; "judge:" is the read the judge made for it
            own = decided and any(not c.startswith("judge:") for c in calls)
            used += own
            unasked += own and not trace.get("asked_to_read")
            read += decided and bool(calls)
    errors = [r for r in results if r.get("error")]
    unparsed = [r for r in errors if "not a verdict" in str(r["error"])]
    seconds = [r["durationMs"] / 1000 for r in results if r.get("durationMs") is not None]
    output_tokens = sum(int((r.get("usage") or {}).get("outputTokens") or 0) for r in results)
    blocks = sum(r.get("decision") == "block" for r in results)
    confusion = report.get("confusion") or {}
    scored = sum(int(confusion.get(k, 0)) for k in ("tp", "fp", "tn", "fn"))
    correct = int(confusion.get("tp", 0)) + int(confusion.get("tn", 0))
    kappa = report.get("cohenKappa")
    return {
        "n": len(results),
        "tool use (transcript cases)": _ci(used, dependent) if dependent else "-",
        "first time asked": _ci(unasked, dependent) if dependent else "-",
        "read before verdict": _ci(read, dependent) if dependent else "-",
        "text-call judgements": text_calls,
        "verdicts parsed": _ci(len(results) - len(errors), len(results)),
        "unparseable": len(unparsed),
        "other errors": len(errors) - len(unparsed),
        "accuracy": _ci(correct, scored),
        "kappa": "-" if kappa is None else f"{kappa:.2f}",
        "blocks": blocks,
        "output tokens (all)": output_tokens,
        "s/judgement (median, mean)": (
            f"{statistics.median(seconds):.1f}, {statistics.fmean(seconds):.1f}" if seconds else "-"
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model", default=os.environ.get("JUDGE_MODEL_REASONINGFAST"), help="e.g. openai:NAME"
    )
    parser.add_argument("--llmbar", type=Path, help="LLMBar natural.json (skip the LLMBar suite without it)")
    parser.add_argument("--pairs", type=int, default=40, help="LLMBar pairs (two cases each; default 40)")
    parser.add_argument("--suites", default=",".join(SUITES), help="comma-separated: smoke,realmodel,llmbar")
    parser.add_argument("--modes", default="on,off", help="text tool calls: on,off (default both)")
    parser.add_argument("--concurrency", type=int, default=2, help="parallel judgements (default 2)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per judgement (default 300)")
    parser.add_argument("--out", type=Path, default=Path("bench-real-model"), help="output folder")
    parser.add_argument("--resume", action="store_true", help="keep finished judgements")
    parser.add_argument(
        "--report-only", action="store_true", help="print the figures of OUT's runs (no judging)"
    )
    args = parser.parse_args(argv)
    if not args.model:
        parser.error("--model (or JUDGE_MODEL_REASONINGFAST) is required, e.g. openai:NAME")
    local = not args.report_only and str(args.model).startswith("openai:")
    if local and not os.environ.get("OPENAI_BASE_URL"):
        parser.error("set OPENAI_BASE_URL (and OPENAI_API_KEY) to the model server")
    os.environ["JUDGE_MODEL_REASONINGFAST"] = args.model
    wanted = [s for s in args.suites.split(",") if s]
    modes = [m for m in args.modes.split(",") if m]
    for name in [*wanted, *modes]:
        if name not in (*SUITES, *MODES):
            parser.error(f"unknown suite or mode {name!r}")
    if args.report_only:
        suites = {name: args.out / "suites" / name / "suite.yaml" for name in wanted}
    else:
        suites = prepare(args.out, args.llmbar if "llmbar" in wanted else None, args.pairs, args.timeout)
    rows: list[tuple[str, str, dict[str, Any]]] = []
    for mode in modes:
        for name in wanted:
            if name not in suites:
                continue
            out = args.out / f"{name}-{mode}"
            if not args.report_only:
                print(f"== {name}, text tool calls {mode}", file=sys.stderr, flush=True)
                run(suites[name], out, mode, args.concurrency, args.resume)
            if (out / "results.jsonl").exists() and suites[name].exists():
                rows.append((name, mode, summarize(suites[name], out)))
    if not rows:
        return 1
    headers = ["suite", "text tool calls", *rows[0][2]]
    print(f"model: {args.model}; concurrency {args.concurrency}; timeout {args.timeout} s")
    print("| " + " | ".join(headers) + " |")
    print("|" + "---|" * len(headers))
    for name, mode, figures in rows:
        print("| " + " | ".join([name, mode, *(str(v) for v in figures.values())]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
