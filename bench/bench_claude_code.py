"""What `judge claude-code` costs Claude Code per hook call, and what a Stop costs in a long session.

    .venv/bin/python bench/bench_claude_code.py              # ~1 min; --n N, --mb MB

1. **Invocation cost.** Claude Code starts a new hook process for every hook event it is
   registered for (with PreToolUse/PostToolUse entries: every tool call). CPU time of the
   whole process (user + system, from ``wait4``), median of ``--n`` runs, for: a bash hook
   that reads its input (``cat``), a minimal Python hook that reads the JSON input and a
   YAML config and matches a regex (the baseline), and ``judge claude-code`` on a call no
   hook matches, on a call a command hook matches, and on a Stop judged by a prompt hook
   (the packaged fake model, then the OpenAI SDK against the local model server).
2. **Incremental Stop.** A Claude Code session transcript of ``--mb`` MB; the time until the
   judge can start (rendering the transcript to readable text) for a render from scratch
   (every Stop before the render cache), the first Stop with the cache, and a later Stop
   after Claude Code appended a few lines.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import PYTHON, ROOT, ModelServer, machine, table

MINIMAL_HOOK = """
import json, re, sys, yaml
data = json.load(sys.stdin)
with open(sys.argv[1]) as f:
    cfg = yaml.safe_load(f)
for hook in (cfg.get("hooks") or {}).get(data.get("hook_event_name"), []):
    if re.fullmatch(hook.get("matcher") or "", data.get("tool_name") or ""):
        print("{}")
"""

CONFIG = """hooks:
  PreToolUse:
    - type: command
      matcher: "Write|Edit"
      command: "exit 0"
  Stop:
    - type: prompt
      model: {model}
      prompt: "Is the task done? $ARGUMENTS"
"""


def cpu_of(argv: list[str], stdin: bytes, env: dict[str, str]) -> float:
    """CPU seconds (user + system) of one run of ``argv`` and its children."""
    with tempfile.TemporaryFile() as src:
        src.write(stdin)
        src.seek(0)
        proc = subprocess.Popen(
            argv, stdin=src, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT
        )
        assert proc.stdout is not None and proc.stderr is not None
        out, err = proc.stdout.read(), proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv[:3])} exited {proc.returncode}: {err.decode()[-500:]} {out[:200]!r}"
        )
    return usage.ru_utime + usage.ru_stime


def median_cpu(argv: list[str], stdin: bytes, env: dict[str, str], n: int) -> float:
    cpu_of(argv, stdin, env)  # warm-up: page cache, .pyc files, the judge's config index
    return statistics.median(cpu_of(argv, stdin, env) for _ in range(n))


def median_cpu_cold_index(argv: list[str], stdin: bytes, env: dict[str, str], n: int, folder: Path) -> float:
    """Like :func:`median_cpu`, each run with a new state folder: no config index yet."""
    runs = []
    for i in range(n + 1):
        cold = {**env, "JUDGE_STATE": str(folder / f"cold-{i}" / "state.sqlite")}
        runs.append(cpu_of(argv, stdin, cold))
    return statistics.median(runs[1:])


def invocation_rows(n: int, folder: Path) -> list[tuple[str, float, float]]:
    judge = [PYTHON, "-m", "judge", "claude-code", "--config"]
    pre = {"hook_event_name": "PreToolUse", "session_id": "bench", "cwd": str(folder)}
    no_match = json.dumps({**pre, "tool_name": "Bash", "tool_input": {"command": "ls -la"}}).encode()
    match = json.dumps({**pre, "tool_name": "Edit", "tool_input": {"file_path": "a.py"}}).encode()
    stop = json.dumps(
        {
            "hook_event_name": "Stop",
            "session_id": "bench",
            "stop_hook_active": False,
            "last_assistant_message": "Done.",
        }
    ).encode()
    hook = folder / "minimal_hook.py"
    hook.write_text(MINIMAL_HOOK, encoding="utf-8")
    fake_config = folder / "fake.yaml"
    fake_config.write_text(CONFIG.format(model="fake:allow"), encoding="utf-8")
    sdk_config = folder / "sdk.yaml"
    sdk_config.write_text(CONFIG.format(model="openai:bench-model"), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "JUDGE_CONFIG"}
    env["JUDGE_STATE"] = str(folder / "state" / "state.sqlite")
    measured: list[tuple[str, float]] = [
        ("bash hook (cat)", median_cpu(["bash", "-c", "cat > /dev/null"], no_match, env, n)),
        (
            "minimal Python hook (baseline)",
            median_cpu([PYTHON, str(hook), str(fake_config)], no_match, env, n),
        ),
        ("judge: PreToolUse, no hook matches", median_cpu([*judge, str(fake_config)], no_match, env, n)),
        (
            "  the same without the config index",
            median_cpu_cold_index([*judge, str(fake_config)], no_match, env, n, folder),
        ),
        ("judge: PreToolUse, a command hook", median_cpu([*judge, str(fake_config)], match, env, n)),
        ("judge: Stop, prompt hook (fake model)", median_cpu([*judge, str(fake_config)], stop, env, n)),
    ]
    with ModelServer() as server:
        sdk_env = {**env, **server.env()}
        measured.append(
            ("judge: Stop, prompt hook (OpenAI SDK)", median_cpu([*judge, str(sdk_config)], stop, sdk_env, n))
        )
    baseline = measured[1][1]
    return [(name, cpu * 1000, cpu / baseline) for name, cpu in measured]


def session_lines(target_bytes: int) -> list[str]:
    """Claude Code-shaped JSONL lines: prompts, tool calls, long tool results, answers."""
    lines: list[str] = []
    size, i = 0, 0
    output = "\n".join(f"src/module_{k}.py:{k}: ok  {'x' * 60}" for k in range(25))
    while size < target_bytes:
        rows = [
            {
                "type": "user",
                "uuid": f"u{i}",
                "sessionId": "bench",
                "message": {"role": "user", "content": f"step {i}"},
            },
            {
                "type": "assistant",
                "uuid": f"a{i}",
                "message": {
                    "id": f"m{i}",
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"Running the checks for step {i}."},
                        {
                            "type": "tool_use",
                            "id": f"t{i}",
                            "name": "Bash",
                            "input": {"command": f"make check-{i}"},
                        },
                    ],
                },
            },
            {
                "type": "user",
                "uuid": f"r{i}",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": output}],
                },
            },
        ]
        for row in rows:
            line = json.dumps(row)
            lines.append(line)
            size += len(line) + 1
        i += 1
    return lines


def incremental_rows(mb: float, folder: Path) -> tuple[list[tuple[str, float, float]], float]:
    from judge.transcripts.render_cache import rendered_transcript

    src = folder / "session.jsonl"
    lines = session_lines(int(mb * 1024 * 1024))
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    size_mb = src.stat().st_size / 1024 / 1024
    cache = folder / "render-cache"

    def timed(cache_dir: Path | None) -> float:
        start = time.perf_counter()
        with rendered_transcript(src, cache_dir) as (path, _):
            assert path is not None
        return time.perf_counter() - start

    scratch = timed(None)
    first = timed(cache)
    with src.open("a", encoding="utf-8") as out:
        out.write("\n".join(session_lines(20_000)) + "\n")  # Claude Code appends a few steps
    later = timed(cache)
    return [
        ("render from scratch (baseline)", scratch * 1000, 1.0),
        ("first Stop, cache cold", first * 1000, first / scratch),
        ("later Stop, ~20 KB appended", later * 1000, later / scratch),
    ], size_mb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="runs per row (median)")
    parser.add_argument("--mb", type=float, default=100.0, help="session transcript size for the Stop bench")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows = invocation_rows(args.n, folder)
        print(f"1. judge claude-code per hook call: CPU per process, median of {args.n}; {machine()}")
        print(table(["hook call", "CPU ms", "vs minimal Python hook"], rows))
        worst = max(rows[2][2], rows[4][2])
        verdict = "met" if worst <= 1.5 else "missed"
        target = "no-match and command-only calls <= 1.5x the minimal Python hook"
        print(f"target: {target}: no match {rows[2][2]:.2f}x, command hook {rows[4][2]:.2f}x ({verdict})")
        print()
        inc, size_mb = incremental_rows(args.mb, folder)
        print(f"2. Stop in a long session: time to render a {size_mb:.0f} MB transcript before judging")
        print(table(["Stop", "ms", "vs from scratch"], inc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
