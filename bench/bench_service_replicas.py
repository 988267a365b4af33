"""Service replicas on one PostgreSQL beside the single SQLite service, in the same run.

50 concurrent agent sessions (``--sessions``) send Stop after Stop; the Stop prompt hook's
model (the local model server in its own process, ``--latency`` seconds per answer)
always rejects, so every answer moves the session's rejection count: 1, 2, ...,
``maxRejections`` (forced through), then 1 again. Every answer is checked against that
sequence — a lost or doubled count anywhere fails the row ("exact" column).

Rows:

* SQLite, 1 process — the embedded default (``judge serve``);
* SQLite, ``--workers 4`` — 4 processes on one host sharing the SQLite file;
* PostgreSQL, 1 process — ``judge serve --state postgresql://...``;
* PostgreSQL, 4 replicas — 4 separate ``judge serve`` processes (own data dirs, as on 4
  hosts) on one database; each session's successive Stops go round-robin to the replicas
  (a load balancer without stickiness), so only the database keeps a session's rounds
  in order.

The PostgreSQL server is a throw-away cluster with PostgreSQL's durable defaults (fsync
on: every commit waits for its WAL flush), or with ``--no-fsync``. On a 2-CPU machine
the load generator, the model server, PostgreSQL and the services share the CPUs: the
figures are a floor, and CPU per request (services plus PostgreSQL) says where the time
goes.

    .venv/bin/python bench/bench_service_replicas.py [--seconds 10] [--sessions 50] [--replicas 4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import PYTHON, ROOT, ModelServer, machine, table
from bench_service import Service, tree_cpu

from judge.testing.postgres_cluster import ClusterUnavailable, PostgresCluster

REJECTING_SERVER = """
import sys
from judge.testing import LLMServer, verdict

no = verdict(False, "Add the test results.")
with LLMServer(latency=float(sys.argv[1]), record=False, default=no) as server:
    print(server.port, flush=True)
    sys.stdin.read()
"""

LOADGEN = r"""
import asyncio, json, sys, time
spec = json.loads(sys.argv[1])
ports, sessions, seconds = spec["ports"], spec["sessions"], spec["seconds"]
limit, most = spec["limit"], spec["max"]
latencies, mismatches, errors, sent = [], [], 0, 0

async def session(s, deadline):
    global errors, sent
    conns = [await asyncio.open_connection("127.0.0.1", p) for p in ports]
    i = 0
    while time.perf_counter() < deadline and sent < limit:
        sent += 1
        reader, writer = conns[(s + i) % len(conns)]
        payload = json.dumps({"final_output": "done", "session_id": f"{spec['tag']}-{s}"}).encode()
        start = time.perf_counter()
        head = "POST /api/v2/hooks/Stop HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        writer.write(f"{head}Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
        status = int((await reader.readline()).split()[1])
        length = 0
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        body = json.loads(await reader.readexactly(length))
        latencies.append(time.perf_counter() - start)
        if status != 200:
            errors += 1
        expected = i % most + 1
        if body.get("rejectionCount") != expected or body.get("forcedStop") != (expected == most):
            mismatches.append((s, i, body.get("rejectionCount"), expected, body.get("hooks")))
        i += 1
    for _, writer in conns:
        writer.close()

async def main():
    start = time.perf_counter()
    await asyncio.gather(*(session(s, start + seconds) for s in range(sessions)))
    elapsed = time.perf_counter() - start
    latencies.sort()
    n = len(latencies)
    pct = lambda q: latencies[min(n - 1, int(q * n))] * 1000 if n else float("nan")
    print(json.dumps({"n": n, "elapsed": elapsed, "errors": errors, "mismatches": mismatches[:5],
                      "mismatched": len(mismatches), "p50": pct(0.5), "p99": pct(0.99)}))

asyncio.run(main())
"""


class Serve(Service):
    """One `judge serve` process on a free port, ready once ``/readyz`` answers 200."""

    def __init__(self, folder: Path, extra: list[str], env: dict[str, str]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        argv = [PYTHON, "-m", "judge", "serve", "--config", str(folder.parent / "agent.json"), "--port", "0"]
        argv += ["--data-dir", str(folder / "data"), *extra]
        self.log = (folder / "serve.log").open("w+")
        self.proc = subprocess.Popen(argv, stderr=self.log, text=True, env=env, cwd=ROOT)
        self.port = 0
        deadline = time.monotonic() + 60
        while not self.port and time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.05)
            self.log.seek(0)
            for line in self.log.read().splitlines():
                if "listening on http://" in line:
                    self.port = int(line.rsplit(":", 1)[1])
        while self.port and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=2):
                    return
            except OSError:
                time.sleep(0.1)
        self.log.seek(0)
        problem = self.log.read()[-800:]
        self.stop()
        raise RuntimeError(f"judge serve did not start: {problem}")


def postmaster_pid(cluster: PostgresCluster) -> int:
    return int((cluster.data / "postmaster.pid").read_text().split()[0])


def run_row(
    tag: str, services: list[Serve], extra_pids: list[int], opts: argparse.Namespace
) -> dict[str, Any]:
    if opts.warmup > 0:  # connections opened, pools grown, code paths warm; not counted
        load(f"{tag}-warmup", services, opts, opts.warmup)
    pids = [s.proc.pid for s in services] + extra_pids
    before = sum(tree_cpu(p) for p in pids)
    result = load(tag, services, opts, opts.seconds)
    result["cpu_ms"] = (sum(tree_cpu(p) for p in pids) - before) / max(result["n"], 1) * 1000
    return result


def load(tag: str, services: list[Serve], opts: argparse.Namespace, seconds: float) -> dict[str, Any]:
    spec = {
        "ports": [s.port for s in services],
        "sessions": opts.sessions,
        "seconds": seconds,
        "limit": opts.requests,
        "max": opts.max_rejections,
        "tag": tag,
    }
    done = subprocess.run(
        [PYTHON, "-c", LOADGEN, json.dumps(spec)], capture_output=True, text=True, timeout=seconds + 300
    )
    if done.returncode != 0:
        raise RuntimeError(f"load generator failed: {done.stderr.strip()[-800:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    if result["errors"] or result["mismatched"]:
        raise RuntimeError(
            f"{tag}: {result['errors']} failed requests, {result['mismatched']} wrong counts "
            f"(session, stop, got, expected): {result['mismatches']}"
        )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="load duration per row (default 10)")
    parser.add_argument("--sessions", type=int, default=50, help="concurrent agent sessions (default 50)")
    parser.add_argument("--replicas", type=int, default=4, help="service processes (default 4)")
    parser.add_argument(
        "--latency", type=float, default=0.05, help="model answer latency in s (default 0.05)"
    )
    parser.add_argument("--max-rejections", type=int, default=5, help="the hook's maxRejections (default 5)")
    parser.add_argument("--warmup", type=float, default=2.0, help="uncounted load first, s (default 2)")
    parser.add_argument(
        "--no-fsync", action="store_true", help="PostgreSQL with fsync off (commits not flushed to disk)"
    )
    parser.add_argument("--requests", type=int, default=1_000_000, help="request cap per row")
    opts = parser.parse_args(argv)
    if (
        min(opts.seconds, opts.sessions, opts.replicas, opts.max_rejections, opts.requests) <= 0
        or opts.warmup < 0
    ):
        parser.error("--seconds, --sessions, --replicas, --max-rejections and --requests must be positive")
    try:
        cluster = PostgresCluster(durable=not opts.no_fsync).start()
    except ClusterUnavailable as exc:
        print(f"bench_service_replicas: no PostgreSQL server: {exc}", file=sys.stderr)
        return 1
    rows: list[tuple[str, dict[str, Any]]] = []
    try:
        with ModelServer(opts.latency, REJECTING_SERVER) as server, tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, **server.env()}
            env.pop("JUDGE_API_TOKEN", None)
            hook = {"type": "prompt", "prompt": "Is the answer complete? $ARGUMENTS"}
            hook["maxRejections"] = opts.max_rejections
            hook["repeats"] = opts.max_rejections  # every Stop says "done": counted, never stalled
            (Path(tmp) / "agent.json").write_text(json.dumps({"hooks": {"Stop": [hook]}}), encoding="utf-8")
            pg = [postmaster_pid(cluster)]
            n = opts.replicas
            layouts: list[tuple[str, list[list[str]], list[int]]] = [
                ("SQLite, 1 process", [[]], []),
                (f"SQLite, 1 host, --workers {n}", [["--workers", str(n)]], []),
                ("PostgreSQL, 1 process", [["--state", cluster.create_database("one")]], pg),
            ]
            url = cluster.create_database("replicas")
            layouts.append((f"PostgreSQL, {n} replicas", [["--state", url]] * n, pg))
            # The default above keeps the logs in the database too; this row keeps them in files.
            files = ["--state", cluster.create_database("replicas_files"), "--logs", "files"]
            layouts.append((f"PostgreSQL, {n} replicas, --logs files", [files] * n, pg))
            for index, (label, extras, extra_pids) in enumerate(layouts):
                services: list[Serve] = []
                try:
                    for j, extra in enumerate(extras):
                        services.append(Serve(Path(tmp) / f"row{index}-{j}", extra, env))
                    rows.append((label, run_row(f"row{index}", services, extra_pids, opts)))
                finally:
                    for service in services:
                        service.stop()
    finally:
        cluster.stop()
    base = rows[0][1]["n"] / rows[0][1]["elapsed"]
    print(
        f"judge serve, {opts.sessions} concurrent sessions sending Stops, model latency "
        f"{opts.latency * 1000:g} ms, maxRejections {opts.max_rejections}, {opts.seconds:g} s per row "
        f"after {opts.warmup:g} s of warm-up; PostgreSQL fsync {'off' if opts.no_fsync else 'on'}; "
        f"{machine()}"
    )
    print(
        table(
            ["state", "requests/s", "vs SQLite", "p50 ms", "p99 ms", "CPU ms/req", "requests", "exact"],
            [
                (
                    label,
                    r["n"] / r["elapsed"],
                    f"{r['n'] / r['elapsed'] / base:.2f}x",
                    r["p50"],
                    r["p99"],
                    r["cpu_ms"],
                    str(r["n"]),
                    "yes",
                )
                for label, r in rows
            ],
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
