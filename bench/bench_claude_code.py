"""What `judge claude-code` costs Claude Code per hook call, and what a Stop costs in a long session.

    .venv/bin/python bench/bench_claude_code.py              # ~1.5 min; --n N, --mb MB

1. **Invocation cost.** Claude Code starts a new hook process for every hook event it is
   registered for (with PreToolUse/PostToolUse entries: every tool call). CPU time of the
   whole process (user + system, from ``wait4``), median of ``--n`` runs, for: a bash hook
   that reads its input (``cat``), a minimal Python hook that reads the JSON input and a
   YAML config and matches a regex (the baseline), and ``judge claude-code`` on a call no
   hook matches, on a call a command hook matches, and on a Stop judged by a prompt hook
   (the packaged fake model, then the OpenAI SDK against the local model server).
2. **The resident judge.** ``judge claude-code --resident``: the hook process hands the
   event to the resident. An event's CPU is the hook process's (``wait4``, median) plus what
   the resident's process tree spent on it (``/proc/<pid>/stat``, over all ``--n`` events /
   ``--n``: the kernel counts in 10 ms ticks). Rows: the first event (the resident starts;
   one run), PreToolUse that no hook matches, one a trivial command hook (``exit 0``)
   matches, a Stop with a prompt hook through the OpenAI SDK against the local model server
   (its first use on its own: the resident imports the SDK once), then the command hook with
   ``JUDGE_FORKSERVER=0`` (each hook starts its supervisor as a program). The residents live
   in a runtime folder of the run and are stopped at the end.
3. **Incremental Stop.** A Claude Code session transcript of ``--mb`` MB; the time until the
   judge can start (rendering the transcript to readable text) for a render from scratch
   (every Stop before the render cache), the first Stop with the cache, and a later Stop
   after Claude Code appended a few lines.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import PYTHON, ROOT, ModelServer, compile_judge, machine, table

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


def fixtures(folder: Path) -> tuple[dict[str, Path], dict[str, bytes], dict[str, str]]:
    """The configurations, hook inputs and environment every row uses."""
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
    configs = {"fake": fake_config, "sdk": sdk_config, "hook": hook}
    return configs, {"no_match": no_match, "match": match, "stop": stop}, env


def invocation_rows(n: int, folder: Path) -> tuple[list[tuple[str, float, float]], float]:
    """The rows of part 1, and the CPU seconds of the command hook's own ``bash -c "exit 0"``."""
    configs, inputs, env = fixtures(folder)
    judge = [PYTHON, "-m", "judge", "claude-code", "--config"]
    hook, fake_config, sdk_config = configs["hook"], configs["fake"], configs["sdk"]
    no_match, match, stop = inputs["no_match"], inputs["match"], inputs["stop"]
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
    command = median_cpu(["bash", "-c", "exit 0"], match, env, n)
    baseline = measured[1][1]
    return [(name, cpu * 1000, cpu / baseline) for name, cpu in measured], command


def cpu_wall_of(argv: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, float]:
    """(CPU s, wall s) of one run of ``argv``."""
    start = time.perf_counter()
    cpu = cpu_of(argv, stdin, env)
    return cpu, time.perf_counter() - start


def _ticks(pid: int) -> tuple[int, int]:
    """(utime + stime + cutime + cstime in clock ticks, parent pid) of a process; (0, 0) when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0, 0
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
    return sum(int(f) for f in fields[11:15]), int(fields[1])


def resident_pid(runtime: Path) -> int | None:
    """The resident judge serving ``runtime`` (found by its command line), or None."""
    found: dict[int, int] = {}  # its workers and fork server are forks of it: same command line
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
        except OSError:
            continue
        if b"resident" in cmd and str(runtime).encode() in cmd:
            found[int(entry.name)] = _ticks(int(entry.name))[1]
    roots = [pid for pid, parent in found.items() if parent not in found]
    return roots[0] if len(roots) == 1 else None


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and its live descendants, with the children they reaped."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            ticks[int(entry.name)], parents[int(entry.name)] = _ticks(int(entry.name))
    tree, grew = {root}, True
    while grew:
        grown = tree | {pid for pid, parent in parents.items() if parent in tree}
        grew, tree = grown != tree, grown
    return sum(ticks.get(pid, 0) for pid in tree) / os.sysconf("SC_CLK_TCK")


def settle() -> None:
    time.sleep(0.05)  # the worker reports back to the resident after the answer


def start_resident(
    argv: list[str], stdin: bytes, env: dict[str, str], runtime: Path
) -> tuple[int, float, float]:
    """Start the resident with one event: (its pid, the hook process's CPU s, wall s)."""
    hook_cpu, wall = cpu_wall_of(argv, stdin, env)
    for _ in range(100):
        pid = resident_pid(runtime)
        if pid is not None:
            time.sleep(1.0)  # the resident goes on warming up after its first answer
            return pid, hook_cpu, wall
        time.sleep(0.05)
    raise RuntimeError("the resident judge did not start")


def stop_resident(pid: int, runtime: Path) -> None:
    if resident_pid(runtime) != pid:
        raise RuntimeError("the resident judge was replaced during the run")
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if resident_pid(runtime) is None:
            return
        time.sleep(0.05)


def per_event(
    pid: int, argv: list[str], stdin: bytes, env: dict[str, str], n: int
) -> tuple[float, float, float]:
    """(CPU s, of which the resident's, wall s) of one event, over ``n`` after a warm-up."""
    cpu_wall_of(argv, stdin, env)
    time.sleep(1.0)  # what a worker imported for it the resident imports too, once
    before = tree_cpu(pid)
    runs = []
    for _ in range(n):
        runs.append(cpu_wall_of(argv, stdin, env))
        settle()
    resident = (tree_cpu(pid) - before) / n
    return statistics.median(c for c, _ in runs) + resident, resident, statistics.median(w for _, w in runs)


def resident_rows(
    n: int, folder: Path, configs: dict[str, Path], inputs: dict[str, bytes], env: dict[str, str]
) -> list[tuple[str, float, float, float]]:
    """``(row, CPU ms, of which the resident's ms, wall ms)`` with ``--resident``."""
    runtime = folder / "run"
    runtime.mkdir(mode=0o700)
    home = folder / "home"
    home.mkdir()
    env = {**env, "JUDGE_RUNTIME_DIR": str(runtime), "XDG_RUNTIME_DIR": str(runtime), "HOME": str(home)}
    judge = [PYTHON, "-m", "judge", "claude-code", "--resident", "--timeout", "30", "--config"]
    fake, sdk = [*judge, str(configs["fake"])], [*judge, str(configs["sdk"])]
    pid, hook_cpu, wall = start_resident(fake, inputs["match"], env, runtime)
    started = tree_cpu(pid)
    rows = [("first event: the resident starts (1 run)", hook_cpu + started, started, wall)]
    rows.append(("PreToolUse, no hook matches", *per_event(pid, fake, inputs["no_match"], env, n)))
    rows.append(("PreToolUse, a command hook (exit 0)", *per_event(pid, fake, inputs["match"], env, n)))
    with ModelServer() as server:
        sdk_env = {**env, **server.env()}
        before = tree_cpu(pid)
        hook_cpu, wall = cpu_wall_of(sdk, inputs["stop"], sdk_env)
        time.sleep(1.0)
        first = tree_cpu(pid) - before
        rows.append(("first Stop through the SDK (1 run)", hook_cpu + first, first, wall))
        rows.append(("Stop, prompt hook (OpenAI SDK)", *per_event(pid, sdk, inputs["stop"], sdk_env, n)))
    stop_resident(pid, runtime)
    # The same command hook without the fork server: each hook starts its supervisor as a program.
    off = {**env, "JUDGE_FORKSERVER": "0"}
    pid, _, _ = start_resident(fake, inputs["match"], off, runtime)
    rows.append(
        ("PreToolUse, a command hook, JUDGE_FORKSERVER=0", *per_event(pid, fake, inputs["match"], off, n))
    )
    stop_resident(pid, runtime)
    return [(name, cpu * 1000, res * 1000, w * 1000) for name, cpu, res, w in rows]


def resident_claims(res: list[tuple[str, float, float, float]], baseline_ms: float, command_ms: float) -> str:
    """The targets of part 2, each against the minimal Python hook of this run."""
    no_match, command, stop = res[1][1], res[2][1], res[4][1]
    both = baseline_ms + command_ms

    def verdict(ok: bool) -> str:
        return "met" if ok else "missed"

    lines = [
        f"minimal Python hook {baseline_ms:.1f} ms, its command (bash -c 'exit 0') {command_ms:.1f} ms",
        f"target: no match <= 1.5x the minimal Python hook: {no_match / baseline_ms:.2f}x"
        f" ({verdict(no_match <= 1.5 * baseline_ms)})",
        f"target: a command hook <= 1.5x (minimal Python hook + the command):"
        f" {command / both:.2f}x ({verdict(command <= 1.5 * both)})",
        f"target: Stop through the OpenAI SDK <= 150 ms CPU beside the model: {stop:.0f} ms"
        f" ({verdict(stop <= 150)})",
    ]
    return "\n".join(lines)


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
    compile_judge()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows, command = invocation_rows(args.n, folder)
        print(f"1. judge claude-code per hook call: CPU per process, median of {args.n}; {machine()}")
        print(table(["hook call", "CPU ms", "vs minimal Python hook"], rows))
        target = "no-match and command-only calls <= 1.5x the minimal Python hook"
        no_match, command_hook = rows[2][2], rows[4][2]
        print(
            f"target: {target}: no match {no_match:.2f}x ({'met' if no_match <= 1.5 else 'missed'}),"
            f" command hook {command_hook:.2f}x ({'met' if command_hook <= 1.5 else 'missed'})"
        )
        print()
        configs, inputs, env = fixtures(folder)
        res = resident_rows(args.n, folder, configs, inputs, env)
        print(
            f"2. judge claude-code --resident: CPU of the hook process (median of {args.n})"
            " + the resident's share"
        )
        print(table(["hook call", "CPU ms", "resident ms", "wall ms"], res))
        print(resident_claims(res, rows[1][1], command * 1000))
        print()
        inc, size_mb = incremental_rows(args.mb, folder)
        print(f"3. Stop in a long session: time to render a {size_mb:.0f} MB transcript before judging")
        print(table(["Stop", "ms", "vs from scratch"], inc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
