"""The judge's published scorecard, reproduced by one command.

    .venv/bin/python bench/scorecard.py                    # the full card: 40 LLMBar pairs, 10 τ-bench cases
    .venv/bin/python bench/scorecard.py --pairs 4 --tau 2  # a small slice

What it does, every step written to files under ``--out`` (default ``bench-scorecard/``):

1. converts the first ``--pairs`` LLMBar "natural" pairs (two cases each) and the first
   ``--tau`` τ-bench airline trajectories from ``--datasets`` (default ``../shared/datasets``)
   with ``judge datasets convert`` — the suites come with the prompts judge ships for them
   (their hooks' timeouts raised to ``--timeout``, as a CPU-bound local model needs);
2. starts the real model with ``../shared/tools/real-model.sh start 1.5b`` (Qwen2.5-Coder
   1.5B on llama.cpp; ``--no-start`` uses the server the environment already names) and
   samples at ``--temperature`` (default 0.7: samples must be able to differ);
3. runs ``judge eval`` per suite with ``samples: 1`` and every probe, then with
   ``samples: 3`` (the first sample of each judgement comes from the cache: it is the
   ``samples: 1`` judgement), all in one judgement cache;
4. writes ``--summary`` (default ``bench/scorecard/scorecard.json``): every figure of the
   card, read from the runs' report.json, calibration.json, run.json and results.jsonl;
5. rewrites the scorecard tables in bench/README.md and docs/evals.md from that file
   (:mod:`scorecard_tables`; ``--tables-only`` does just this step).

``--resume`` continues interrupted runs (finished judgements are kept in results.jsonl and
the cache). Nothing here is a CI dependency: the tests render the tables from the committed
summary and check them against the documents, and run this script offline on a fake judge.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scorecard_tables import DOCUMENTS, SUMMARY, write_tables

ROOT = Path(__file__).resolve().parents[1]
REAL_MODEL = ROOT.parent / "shared" / "tools" / "real-model.sh"
SUITES = {
    "llmbar": ("llmbar", "llmbar/natural.json"),
    "tau-bench": ("tau-bench", "tau-bench/gpt-4o-airline.json"),
}


def _judge(*args: str, env: dict[str, str] | None = None) -> int:
    """``python -m judge ARGS`` in the repository, its output passed through."""
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=ROOT, env=env, check=False).returncode


def prepare(out: Path, datasets: Path, pairs: int, tau: int, timeout: int) -> dict[str, Path]:
    """The suites, converted; each gets ``agent-k3.yaml`` (its hooks with ``samples: 3``)."""
    suites: dict[str, Path] = {}
    for name, count in (("llmbar", pairs), ("tau-bench", tau)):
        if count <= 0:
            continue
        kind, source = SUITES[name]
        folder = out / "suites" / name
        code = _judge(
            "datasets", "convert", kind, str(datasets / source), "--out", str(folder), "--limit", str(count)
        )
        if code != 0:
            raise SystemExit(f"scorecard: converting {datasets / source} failed")
        agent = yaml.safe_load((folder / "agent.yaml").read_text(encoding="utf-8"))
        for hook in agent["hooks"]["Stop"]:
            hook["timeout"] = timeout
        (folder / "agent.yaml").write_text(yaml.safe_dump(agent, sort_keys=False), encoding="utf-8")
        for hook in agent["hooks"]["Stop"]:
            hook["samples"] = 3
        (folder / "agent-k3.yaml").write_text(yaml.safe_dump(agent, sort_keys=False), encoding="utf-8")
        suites[name] = folder / "suite.yaml"
    return suites


def running_model(size: str) -> dict[str, str] | None:
    """The variables for a real-model server already answering on its port (another run's:
    it is used and left running), or None."""
    import urllib.request

    port = os.environ.get("REAL_MODEL_PORT", "8089")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=3) as answer:
            if answer.status != 200:
                return None
    except OSError:
        return None
    name = f"qwen2.5-coder-{size}-instruct"
    return {
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY": "local",
        "JUDGE_MODEL_REASONINGFAST": f"openai:{name}",
    }


def start_model(size: str) -> dict[str, str]:
    """Start the real model; the variables it prints (``export A=1 B=2``)."""
    proc = subprocess.run(
        ["bash", str(REAL_MODEL), "start", size], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"scorecard: the real model did not start:\n{proc.stderr.strip()}")
    found: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        if line.startswith("export "):
            for word in shlex.split(line.partition("#")[0])[1:]:
                key, _, value = word.partition("=")
                found[key] = value
    return found


def stop_model() -> None:
    subprocess.run(["bash", str(REAL_MODEL), "stop"], check=False, capture_output=True)


def run_evals(
    suites: dict[str, Path], out: Path, env: dict[str, str], concurrency: int, resume: bool
) -> None:
    """Per suite: samples 1 with every probe, then samples 3 (module docstring)."""
    cache = out / "cache.sqlite"
    common = ["--concurrency", str(concurrency), "--cache", str(cache), *(["--resume"] if resume else [])]
    for name, suite in suites.items():
        runs = out / "runs"
        code = _judge(
            "eval", str(suite), "--out", str(runs / f"{name}-k1"), "--probes", "all", *common, env=env
        )
        if code not in (0, 1):
            raise SystemExit(f"scorecard: judge eval of {name} (samples 1) failed ({code})")
        k3 = ["--config", str(suite.parent / "agent-k3.yaml"), "--out", str(runs / f"{name}-k3")]
        code = _judge("eval", str(suite), *k3, *common, env=env)
        if code not in (0, 1):
            raise SystemExit(f"scorecard: judge eval of {name} (samples 3) failed ({code})")


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _seconds(run: Path) -> dict[str, Any]:
    """Seconds per judgement over the judgements the run and its probes made (not served
    from the cache: an interrupted card resumed later times only what it judged then)."""
    files = [run / "results.jsonl", *sorted((run / "probes").glob("*.jsonl"))]
    fresh = []
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                result = json.loads(line)
                if not result.get("cached") and result.get("decision") is not None:
                    fresh.append(result["durationMs"] / 1000.0)
    return {
        "timed": len(fresh),
        "median": round(statistics.median(fresh), 1) if fresh else None,
        "mean": round(statistics.fmean(fresh), 1) if fresh else None,
    }


def _agreement(run: Path) -> dict[str, Any]:
    """The prompt hook's own figures (calibration.json) and the run's errors."""
    report = _load(run / "report.json")
    found: dict[str, Any] = {"n": report["n"], "errors": report["errors"], "accuracy": report.get("accuracy")}
    calibration = run / "calibration.json"
    if calibration.is_file():
        [record] = [r for r in _load(calibration)["records"] if r["index"] == 0]
        for key in ("cases", "kappa", "kappaCi95", "blockPrecision", "blockPrecisionCi95", "blockRecall",
                    "blockRecallCi95", "allowRecall", "confusion"):  # fmt: skip
            found[key] = record[key]
    return found


def summarize(suites: dict[str, Path], out: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """Every figure of the card, from the runs' files."""
    card: dict[str, Any] = {"format": 1, **settings, "suites": {}}
    for name in suites:
        k1, k3 = out / "runs" / f"{name}-k1", out / "runs" / f"{name}-k3"
        report1, report3 = _load(k1 / "report.json"), _load(k3 / "report.json")
        samples = (report3.get("samples") or {}).get("hooks.Stop[0]") or {}
        probes = {
            probe: {
                key: entry[key]
                for key in ("n", "flips", "flipRate", "blockToAllow", "allowToBlock", "errors")
            }
            for probe, entry in (report1.get("probes") or {}).items()
        }
        card["suites"][name] = {
            "cases": report1["cases"],
            "k1": {
                **_agreement(k1),
                "seconds": _seconds(k1),
                "judgingSeconds": _load(k1 / "run.json")["judgingSeconds"],
            },
            "k3": {
                **_agreement(k3),
                "flipRate": samples.get("flipRate"),
                "flipped": samples.get("flipped"),
                "judgements": samples.get("judgements"),
                "meanAgreement": samples.get("meanAgreement"),
                "judgingSeconds": _load(k3 / "run.json")["judgingSeconds"],
            },
            "probes": probes,
        }
    return card


def _shown(argv: list[str] | None) -> list[str]:
    """The command's arguments as the card records them: where its files went and
    ``--resume`` left out (they change no figure, and a path is this machine's)."""
    args = list(sys.argv[1:] if argv is None else argv)
    shown: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("--out", "--summary", "--datasets"):
            skip = True
        elif arg.split("=", 1)[0] not in ("--out", "--summary", "--datasets", "--resume"):
            shown.append(arg)
    return shown


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=40, help="LLMBar natural pairs (two cases each)")
    parser.add_argument("--tau", type=int, default=10, help="τ-bench airline trajectories")
    parser.add_argument("--out", default="bench-scorecard", help="where the suites and runs go")
    parser.add_argument("--datasets", default=str(ROOT.parent / "shared" / "datasets"))
    parser.add_argument("--size", default="1.5b", help="the real model's size (real-model.sh)")
    parser.add_argument("--no-start", action="store_true", help="use the model server the environment names")
    parser.add_argument("--model", help="with --no-start: the model (default: $JUDGE_MODEL_REASONINGFAST)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=300, help="hook timeout, seconds (1-300)")
    parser.add_argument("--temperature", default="0.7", help="JUDGE_TEMPERATURE for every judgement")
    parser.add_argument("--resume", action="store_true", help="continue interrupted runs")
    parser.add_argument("--summary", default=str(ROOT / SUMMARY), help="the summary file written")
    parser.add_argument("--tables-only", action="store_true", help="only rewrite the tables from --summary")
    parser.add_argument("--no-tables", action="store_true", help="do not rewrite the tables")
    args = parser.parse_args(argv)
    summary = Path(args.summary)
    if args.tables_only:
        write_tables(_load(summary), [ROOT / doc for doc in DOCUMENTS])
        return 0
    out = Path(args.out).resolve()
    suites = prepare(out, Path(args.datasets), args.pairs, args.tau, args.timeout)
    env = dict(os.environ)
    running = None if args.no_start else running_model(args.size)
    started = not args.no_start and running is None
    if running is not None:
        print("scorecard: a real-model server is already running: using it (and leaving it running)")
        env.update(running)
    elif started:
        env.update(start_model(args.size))
    if args.model:
        env["JUDGE_MODEL_REASONINGFAST"] = args.model
    env.update({"JUDGE_TEMPERATURE": args.temperature, "JUDGE_MAX_OUTPUT_TOKENS": "512"})
    try:
        run_evals(suites, out, env, args.concurrency, args.resume)
    finally:
        if started:
            stop_model()
    settings = {
        "command": "python bench/scorecard.py " + " ".join(shlex.quote(a) for a in _shown(argv)),
        "model": env.get("JUDGE_MODEL_REASONINGFAST", "ReasoningFast"),
        "temperature": float(args.temperature),
        "timeout": args.timeout,
        "concurrency": args.concurrency,
        "pairs": args.pairs,
        "tau": args.tau,
        "machine": f"{os.cpu_count()} CPUs, {platform.machine()}, {_cpu()}, "
        f"Python {platform.python_version()}",
    }
    card = summarize(suites, out, settings)
    summary.parent.mkdir(parents=True, exist_ok=True)
    summary.write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"scorecard: {summary}")
    if not args.no_tables:
        write_tables(card, [ROOT / doc for doc in DOCUMENTS])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
