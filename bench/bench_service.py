"""Service: requests/s and p99 latency of POST /api/v2/hooks/Stop, 1 and 2 workers.

`judge serve` runs as a child process (with --workers 1 and 2) with a Stop command hook,
then with a Stop prompt hook whose model is the local model server (another process,
zero latency). The load generator is a separate process: an asyncio HTTP/1.1 client
with keep-alive connections (each its own agent session), bounded by a duration and a
request count. The baseline,
measured in the same run against the same server, is GET /healthz (the HTTP stack with
no hook at all). On a 2-CPU machine the load generator, the model server and the
service share the CPUs, so the figures are a floor, not a ceiling.

    .venv/bin/python bench/bench_service.py [--seconds 5] [--connections 16] [--workers 1 2]
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


class Service:
    """`judge serve` on a free port in a child process."""

    def __init__(self, config: Path, data_dir: Path, workers: int, env: dict[str, str]) -> None:
        argv = [PYTHON, "-m", "judge", "serve", "--config", str(config), "--port", "0"]
        argv += ["--data-dir", str(data_dir), "--workers", str(workers)]
        # The service logs every request on stderr: a file, so a full pipe never blocks it.
        self.log = (data_dir.parent / f"serve-{workers}.log").open("w+")
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
            raise RuntimeError("judge serve did not start")
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("judge serve did not answer /healthz") from None
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="load duration per row (default 5)")
    parser.add_argument("--connections", type=int, default=16, help="keep-alive connections (default 16)")
    parser.add_argument("--requests", type=int, default=100_000, help="request cap per row")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    opts = parser.parse_args(argv)
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
