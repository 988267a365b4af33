"""Side by side with Inspect AI: the same canned responses graded by model_graded_qa and by judge eval.

Both grade the same N canned answers with the same local model server (an OpenAI-
compatible endpoint in another process, answering after `latency`), at the same
concurrency. Inspect AI runs from its own virtual environment (bench/.venv-inspect,
created and filled with `pip install inspect-ai openai` on first use); its grader is
`model_graded_qa(model="openai-api/bench/bench-model")` with BENCH_BASE_URL pointing at
the server, the solver only replays the canned answer (no model call). `judge eval`
runs a Stop prompt hook over the same answers. Each tool runs as a child process whose
CPU (user + system, from wait4's rusage) is divided by N; a start-up-only run of each
(imports, no grading) is measured too and subtracted in the "excl. start-up" column.
Target: judge at least 3x less CPU per judgement than Inspect AI.

If Inspect AI cannot be installed (no package index reachable), its rows are skipped
with the reason and the script still exits 0.

    .venv/bin/python bench/bench_inspect.py [--n 1000] [--latency 0.2] [--concurrency 100]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import PYTHON, ModelServer, compile_judge, machine, table, timed_child

HERE = Path(__file__).resolve().parent
DEFAULT_VENV = HERE / ".venv-inspect"
TARGET = 3.0
MODEL = "openai-api/bench/bench-model"

INSPECT_SCRIPT = """
import json, sys
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ChatMessageAssistant
from inspect_ai.scorer import model_graded_qa
from inspect_ai.solver import solver

cases_path, log_dir, concurrency, model = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

@solver
def canned():
    async def solve(state, generate):
        answer = state.metadata["answer"]
        state.output = ModelOutput.from_content(model="canned", content=answer)
        state.messages.append(ChatMessageAssistant(content=answer))
        return state
    return solve

with open(cases_path, encoding="utf-8") as fh:
    rows = [json.loads(line) for line in fh]
samples = [
    Sample(id=r["id"], input=r["question"], target=r["criterion"], metadata={"answer": r["answer"]})
    for r in rows
]
task = Task(dataset=samples, solver=canned(), scorer=model_graded_qa(model=model))
logs = eval(
    task, model="mockllm/model", max_connections=concurrency, max_samples=concurrency,
    display="none", log_dir=log_dir, log_level="error",
)
log = logs[0]
if log.status != "success":
    sys.exit(f"inspect eval status {log.status}: {log.error}")
scores = log.results.scores[0].metrics if log.results and log.results.scores else {}
print(json.dumps({"samples": log.results.completed_samples if log.results else 0,
                  "accuracy": scores["accuracy"].value if "accuracy" in scores else None}))
"""

JUDGE_PROMPT = (
    "You are grading an answer to a question against a criterion. Allow it (ok: true) when "
    "the answer is correct; otherwise block it and say what is wrong.\n$ARGUMENTS"
)


def ensure_inspect(folder: Path) -> tuple[Path | None, str]:
    """The venv's python with inspect_ai importable, or (None, why not)."""
    python = folder / "bin" / "python"
    check = [str(python), "-c", "import inspect_ai, openai; print(inspect_ai.__version__)"]
    if python.exists():
        done = subprocess.run(check, capture_output=True, text=True)
        if done.returncode == 0:
            return python, done.stdout.strip()
    print(f"installing inspect-ai into {folder} ...", flush=True)
    try:
        venv.create(folder, with_pip=True, clear=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        return None, f"cannot create the venv: {exc}"
    pip = [
        str(python),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "inspect-ai",
        "openai",
    ]
    try:
        done = subprocess.run(pip, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        return None, "pip install inspect-ai timed out after 900 s"
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if not line.startswith("WARNING")]
        return None, "pip install inspect-ai failed: " + " | ".join(lines[-3:])
    done = subprocess.run(check, capture_output=True, text=True)
    if done.returncode != 0:
        return None, f"inspect_ai does not import after installing: {done.stderr.strip()[-300:]}"
    return python, done.stdout.strip()


def write_cases(folder: Path, n: int) -> tuple[Path, Path]:
    """The canned responses, as Inspect's input (cases.jsonl) and as a judge eval suite."""
    inspect_cases = folder / "inspect-cases.jsonl"
    judge_cases = folder / "cases.jsonl"
    with inspect_cases.open("w", encoding="utf-8") as fi, judge_cases.open("w", encoding="utf-8") as fj:
        for i in range(n):
            question = f"What is {i} + {i * 3}? Show the sum."
            criterion = f"The sum is {i * 4}."
            answer = f"{i} + {i * 3} = {i * 4}. The sum is {i * 4}."
            row = {"id": f"c{i:05d}", "question": question, "criterion": criterion, "answer": answer}
            fi.write(json.dumps(row) + "\n")
            context = {"question": question, "criterion": criterion, "final_output": answer}
            fj.write(json.dumps({"id": row["id"], "context": context, "label": "allow"}) + "\n")
    config = {"hooks": {"Stop": [{"type": "prompt", "prompt": JUDGE_PROMPT}]}}
    (folder / "agent.yaml").write_text(json.dumps(config), encoding="utf-8")
    suite = folder / "suite.yaml"
    suite.write_text("name: inspect-side-by-side\nconfig: agent.yaml\nevent: Stop\ncases: cases.jsonl\n")
    return inspect_cases, suite


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="canned responses (default 1000)")
    parser.add_argument("--latency", type=float, default=0.2, help="provider latency in s (default 0.2)")
    parser.add_argument("--concurrency", type=int, default=100, help="parallel gradings (default 100)")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="Inspect AI's virtual environment")
    opts = parser.parse_args(argv)
    compile_judge()
    if opts.n < 1 or opts.latency < 0 or opts.concurrency < 1:
        parser.error("--n and --concurrency must be positive, --latency not negative")
    inspect_python, version = ensure_inspect(opts.venv)
    rows = []
    with ModelServer(latency=opts.latency) as server, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        inspect_cases, suite = write_cases(folder, opts.n)
        env = {
            **os.environ,
            **server.env(),
            "BENCH_BASE_URL": server.base_url,
            "BENCH_API_KEY": "bench-key",
            "INSPECT_LOG_LEVEL": "error",
        }
        judge_argv = [PYTHON, "-m", "judge", "eval", str(suite), "--out", str(folder / "judge-out")]
        judge_argv += ["--no-cache", "--quiet", "--concurrency", str(opts.concurrency)]
        startup = [PYTHON, "-c", "import judge.cli, judge.cli.eval, judge.llm, openai"]
        _, judge_start, _, _ = timed_child(startup, env=env)
        wall, cpu, _, _ = timed_child(judge_argv, env=env)
        report = json.loads((folder / "judge-out" / "report.json").read_text(encoding="utf-8"))
        if report["n"] != opts.n or report["errors"]:
            raise RuntimeError(f"judge eval: {report['errors']} errors of {report['n']}")
        rows.append(("judge eval", wall, cpu, judge_start, f"allowRate {report['allowRate']:.2f}"))
        if inspect_python is not None:
            start_argv = [str(inspect_python), "-c", "import inspect_ai, inspect_ai.scorer, openai"]
            _, inspect_start, _, _ = timed_child(start_argv, env=env)
            argv_ = [str(inspect_python), "-c", INSPECT_SCRIPT, str(inspect_cases), str(folder / "logs")]
            argv_ += [str(opts.concurrency), MODEL]
            wall, cpu, _, out = timed_child(argv_, env=env, timeout=1200)
            result = json.loads(out.strip().splitlines()[-1])
            if result["samples"] != opts.n:
                raise RuntimeError(f"inspect eval completed {result['samples']} of {opts.n} samples")
            rows.append((f"Inspect AI {version}", wall, cpu, inspect_start, f"accuracy {result['accuracy']}"))
    ideal = opts.n * opts.latency / opts.concurrency
    print(
        f"{opts.n} canned responses graded, provider latency {opts.latency * 1000:.0f} ms, "
        f"concurrency {opts.concurrency} (ideal {ideal:.2f} s); {machine()}"
    )
    judge_wall, judge_cpu, judge_start = rows[0][1], rows[0][2], rows[0][3]
    shown = []
    for name, wall, cpu, start, check in rows:
        per = cpu / opts.n * 1000
        per_net = max(cpu - start, 0.0) / opts.n * 1000
        shown.append(
            (
                name,
                wall,
                f"{wall / judge_wall:.2f}x",
                per,
                f"{cpu / judge_cpu:.2f}x",
                per_net,
                f"{(cpu - start) / max(judge_cpu - judge_start, 1e-9):.2f}x",
                start,
                check,
            )
        )
    print(
        table(
            [
                "",
                "wall s",
                "wall vs judge",
                "CPU ms/judgement",
                "CPU vs judge",
                "excl. start-up",
                "vs judge",
                "start-up CPU s",
                "check",
            ],
            shown,
        )
    )
    if inspect_python is None:
        print(f"Inspect AI row skipped: {version}")
        return 0
    ratio = rows[1][2] / judge_cpu
    verdict = "met" if ratio >= TARGET else "MISSED"
    print(f"target: judge >= {TARGET:.0f}x less CPU per judgement than Inspect AI: {ratio:.2f}x ({verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
