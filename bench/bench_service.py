"""Service: requests/s and p99 latency of POST /api/v2/hooks/Stop, 1 and 2 workers.

`judge serve` runs as a child process (with --workers 1 and 2) with a Stop command hook,
then with a Stop prompt hook whose model is the local model server (another process,
zero latency). The load generator is a separate process: an asyncio HTTP/1.1 client
with keep-alive connections (each its own agent session), bounded by a duration and a
request count. The baseline,
measured in the same run against the same server, is GET /healthz (the HTTP stack with
no hook at all). On a 2-CPU machine the load generator, the model server and the
service share the CPUs, so the figures are a floor, not a ceiling.

``--command-hook`` measures instead the CPU per Stop with one command hook (a bash script)
against a minimal Starlette app on uvicorn that runs the same script through a plain
subprocess: ``--n`` sequential requests to each, `judge serve` with its fork server and
with ``JUDGE_FORKSERVER=0``; the CPU of each server's process tree, reaped children (and
the fork server, a child of the service) included. Target: <= 2x the minimal app.

    .venv/bin/python bench/bench_service.py [--seconds 5] [--connections 16] [--workers 1 2]
    .venv/bin/python bench/bench_service.py --command-hook [--n 100] [--warmup 10]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import PYTHON, ROOT, ModelServer, machine, table

LOADGEN = r"""
import asyncio, json, sys, time
port, method, path, body = sys.argv[1:5]
conns, seconds, limit = int(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
latencies, errors, statuses = [], 0, {}
sent = 0

def request(conn):
    # Each connection is its own agent session (one session's Stops are served in order).
    data = json.loads(body) if body else None
    if isinstance(data, dict) and "session_id" in data:
        data["session_id"] = f"{data['session_id']}-{conn}"
    payload = json.dumps(data).encode() if body else b""
    head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n").encode()
    return head + payload  # one write per request

async def worker(conn, deadline):
    global errors, sent
    message = request(conn)
    reader, writer = await asyncio.open_connection("127.0.0.1", int(port))
    while time.perf_counter() < deadline and sent < limit:
        sent += 1
        start = time.perf_counter()
        writer.write(message)
        status_line = await reader.readline()
        length = 0
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        data = await reader.readexactly(length)
        latencies.append(time.perf_counter() - start)
        status = int(status_line.split()[1])
        statuses[status] = statuses.get(status, 0) + 1
        if status != 200 or (method == "POST" and b'"decision"' not in data):
            errors += 1
    writer.close()

async def main():
    start = time.perf_counter()
    await asyncio.gather(*(worker(i, start + seconds) for i in range(conns)))
    elapsed = time.perf_counter() - start
    latencies.sort()
    n = len(latencies)
    pct = lambda q: latencies[min(n - 1, int(q * n))] * 1000 if n else float("nan")
    print(json.dumps({"n": n, "elapsed": elapsed, "errors": errors, "statuses": statuses,
                      "p50": pct(0.5), "p99": pct(0.99)}))

asyncio.run(main())
"""

CONTEXT: dict[str, Any] = {
    "hook_event_name": "Stop",
    "agent_name": "bench-agent",
    "final_output": "The report is written to out/report.md and all 42 tests pass.",
    "session_id": "bench-session",
}
HOOKS = {
    "command hook": {"type": "command", "command": "cat > /dev/null"},
    "prompt hook": {"type": "prompt", "prompt": "Is the agent's answer complete? $ARGUMENTS"},
}
#: ``--command-hook``: the one script both the judge's hook and the minimal app run.
HOOK_SCRIPT = '#!/bin/bash\ncat > /dev/null; echo \'{"decision": "approve"}\'\n'
#: The baseline of ``--command-hook``: a minimal Starlette app (uvicorn, one worker) that runs
#: the hook script through a plain subprocess, the context on stdin, and answers its output.
MINIMAL = r"""
import asyncio, json, socket, sys
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

async def stop(request):
    proc = await asyncio.create_subprocess_exec(
        sys.argv[1], stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate(await request.body())
    return JSONResponse(json.loads(out))

async def healthz(request):
    return JSONResponse({"ok": True})

app = Starlette(routes=[Route("/api/v2/hooks/Stop", stop, methods=["POST"]), Route("/healthz", healthz)])
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY, as the judge's
sock.bind(("127.0.0.1", 0))
print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}", file=sys.stderr, flush=True)
uvicorn.Server(uvicorn.Config(app, loop="asyncio", log_level="warning")).run(sockets=[sock])
"""


class Service:
    """`judge serve` on a free port in a child process."""

    def __init__(self, config: Path, data_dir: Path, workers: int, env: dict[str, str]) -> None:
        argv = [PYTHON, "-m", "judge", "serve", "--config", str(config), "--port", "0"]
        argv += ["--data-dir", str(data_dir), "--workers", str(workers)]
        self._start("judge serve", argv, data_dir.parent / f"serve-{workers}.log", env)

    def _start(self, name: str, argv: list[str], log: Path, env: dict[str, str]) -> None:
        """Start ``argv``; ready once it logs ``listening on http://...:PORT`` and /healthz answers."""
        # The service logs every request on stderr: a file, so a full pipe never blocks it.
        self.log = log.open("w+")
        self.proc = subprocess.Popen(argv, stderr=self.log, text=True, env=env, cwd=ROOT)
        self.port = 0
        deadline = time.monotonic() + 30
        while not self.port and time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.05)
            self.log.seek(0)
            for line in self.log.read().splitlines():
                if "listening on http://" in line:
                    self.port = int(line.rsplit(":", 1)[1])
        if not self.port:
            self.stop()
            raise RuntimeError(f"{name} did not start")
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"{name} did not answer /healthz") from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class MinimalApp(Service):
    """The ``--command-hook`` baseline (:data:`MINIMAL`) on a free port in a child process."""

    def __init__(self, hook: Path, folder: Path, env: dict[str, str]) -> None:
        self._start("the minimal app", [PYTHON, "-c", MINIMAL, str(hook)], folder / "minimal.log", env)


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its live descendants, reaped children included (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        children = [
            int(c)
            for task in Path(f"/proc/{pid}/task").iterdir()
            for c in (task / "children").read_text().split()
        ]
    except OSError:
        return 0.0
    own = sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime
    return own + sum(tree_cpu(c) for c in children)


def load(
    port: int, method: str, path: str, body: str, conns: int, seconds: float, limit: int
) -> dict[str, Any]:
    argv = [PYTHON, "-c", LOADGEN, str(port), method, path, body, str(conns), str(seconds), str(limit)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 120)
    if done.returncode != 0:
        raise RuntimeError(f"load generator failed: {done.stderr.strip()[-500:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    if result["errors"]:
        raise RuntimeError(f"{path}: {result['errors']} failed requests, statuses {result['statuses']}")
    return result


def measure(service: Service, *args: Any) -> dict[str, Any]:
    """:func:`load`, plus the service's CPU per request (all its processes)."""
    before = tree_cpu(service.proc.pid)
    result = load(service.port, *args)
    result["cpu_ms"] = (tree_cpu(service.proc.pid) - before) / max(result["n"], 1) * 1000
    return result


def command_hook_rows(n: int, warmup: int) -> list[tuple[str, dict[str, Any]]]:
    """``--command-hook``: ``n`` sequential Stops (one keep-alive connection) to the minimal
    app, then to `judge serve` with one command hook, with and without its fork server."""
    body, path = json.dumps(CONTEXT), "/api/v2/hooks/Stop"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        folder.chmod(0o755)  # the judge's hooks run as another user (`nobody` under root)
        hook = folder / "hook.sh"
        hook.write_text(HOOK_SCRIPT, encoding="utf-8")
        hook.chmod(0o755)
        config = folder / "agent.json"
        config.write_text(json.dumps({"hooks": {"Stop": [{"type": "command", "command": str(hook)}]}}))
        env = {**os.environ}
        env.pop("JUDGE_API_TOKEN", None)
        starts: dict[str, Callable[[], Service]] = {
            "minimal Starlette app, plain subprocess (baseline)": partial(MinimalApp, hook, folder, env)
        }
        for label, switch in (("fork server", "1"), ("JUDGE_FORKSERVER=0", "0")):
            (folder / switch).mkdir()
            judge_env = {**env, "JUDGE_FORKSERVER": switch}
            starts[f"judge serve, {label}"] = partial(Service, config, folder / switch / "data", 1, judge_env)
        for label, start in starts.items():
            server = start()
            try:
                if warmup:
                    load(server.port, "POST", path, body, 1, 600.0, warmup)
                ran(server.port, path, body)
                rows.append((label, measure(server, "POST", path, body, 1, 600.0, n)))
            finally:
                server.stop()
    return rows


def ran(port: int, path: str, body: str) -> None:
    """Raise unless a Stop's answer shows its command hook ran (no hook error, not failed open)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=body.encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        answer = json.loads(response.read())
    if answer.get("outcome") == "failed_open" or any(h.get("error") for h in answer.get("hooks", [])):
        raise RuntimeError(f"the command hook did not run: {answer}")


def print_command_hook(n: int, warmup: int) -> None:
    rows = command_hook_rows(n, warmup)
    base = rows[0][1]["cpu_ms"]  # 0: under one clock tick in all (a tiny --n)
    print(
        f"POST /api/v2/hooks/Stop with one command hook (bash: cat > /dev/null; echo a decision), "
        f"{n} sequential requests on one keep-alive connection ({warmup} warm-up not counted); "
        f"CPU of the server's process tree, reaped children included; {machine()}"
    )
    print(
        table(
            ["server", "wall ms/req", "p50 ms", "p99 ms", "CPU ms/req", "CPU vs baseline", "requests"],
            [
                (
                    label,
                    r["elapsed"] / r["n"] * 1000,
                    r["p50"],
                    r["p99"],
                    r["cpu_ms"],
                    r["cpu_ms"] / base if base else "n/a",
                    str(r["n"]),
                )
                for label, r in rows
            ],
        )
    )
    for label, r in rows[1:]:
        ratio = round(r["cpu_ms"] / base, 2) if base else 0.0  # the verdict of the printed figure
        figure = f"{ratio:.2f}x ({'met' if ratio <= 2 else 'missed'})" if base else "not measured (raise --n)"
        print(
            f"target: a Stop with one command hook <= 2x the minimal app's CPU per request: "
            f"{label.removeprefix('judge serve, ')} {figure}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="load duration per row (default 5)")
    parser.add_argument("--connections", type=int, default=16, help="keep-alive connections (default 16)")
    parser.add_argument("--requests", type=int, default=100_000, help="request cap per row")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--command-hook",
        action="store_true",
        help="instead: CPU per Stop with one command hook vs a minimal app",
    )
    parser.add_argument("--n", type=int, default=100, help="--command-hook: requests per row (default 100)")
    parser.add_argument(
        "--warmup", type=int, default=10, help="--command-hook: warm-up requests (default 10)"
    )
    opts = parser.parse_args(argv)
    if opts.command_hook:
        if opts.n < 1 or opts.warmup < 0:
            parser.error("--n must be positive and --warmup not negative")
        print_command_hook(opts.n, opts.warmup)
        return 0
    if opts.seconds <= 0 or opts.connections < 1 or opts.requests < 1 or min(opts.workers) < 1:
        parser.error("--seconds, --connections, --requests and --workers must be positive")
    rows = []
    body = json.dumps(CONTEXT)
    with ModelServer(latency=0.0) as server, tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, **server.env()}
        env.pop("JUDGE_API_TOKEN", None)
        for workers in opts.workers:
            base_rps = 0.0
            for label, hook in HOOKS.items():
                folder = Path(tmp) / f"{workers}-{label.split()[0]}"
                folder.mkdir()
                config = folder / "agent.json"
                config.write_text(json.dumps({"hooks": {"Stop": [hook]}}), encoding="utf-8")
                service = Service(config, folder / "data", workers, env)
                try:
                    args = (opts.connections, opts.seconds, opts.requests)
                    if not base_rps:
                        health = measure(service, "GET", "/healthz", "", *args)
                        base_rps = health["n"] / health["elapsed"]
                        rows.append((str(workers), "GET /healthz (baseline)", base_rps, "1.00x", health))
                    result = measure(service, "POST", "/api/v2/hooks/Stop", body, *args)
                finally:
                    service.stop()
                rps = result["n"] / result["elapsed"]
                rows.append((str(workers), f"POST Stop, {label}", rps, f"{rps / base_rps:.2f}x", result))
    print(
        f"judge serve on loopback, {opts.connections} keep-alive connections, {opts.seconds:g} s per row, "
        f"zero-latency model server; {machine()}"
    )
    print(
        table(
            [
                "workers",
                "request",
                "requests/s",
                "vs /healthz",
                "p50 ms",
                "p99 ms",
                "service CPU ms/req",
                "requests",
            ],
            [
                (w, name, rps, ratio, r["p50"], r["p99"], r["cpu_ms"], str(r["n"]))
                for w, name, rps, ratio, r in rows
            ],
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
