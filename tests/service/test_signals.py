"""A stop signal sent as soon as `judge serve` says it is listening (before uvicorn has
installed its own handlers) is obeyed: the service shuts down cleanly, it never hangs."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import signal, socket, sys
    import uvicorn
    from judge.service import run as server

    async def app(scope, receive, send):
        raise AssertionError("no request is sent")

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server._keep_signals_quiet()
    signal.raise_signal(signal.SIG{name})  # after "listening", before uvicorn's handlers
    config = uvicorn.Config(app, lifespan="off", log_level="warning")
    {runner}
    print("stopped", flush=True)
    """
)


def _run(name: str, runner: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT.format(name=name, runner=runner)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_an_early_sigterm_stops_the_server() -> None:
    done = _run("TERM", "server._Server(config).run(sockets=[sock])")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stopped"


def test_an_early_sigint_stops_the_server_too() -> None:
    done = _run("INT", "server._Server(config).run(sockets=[sock])")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stopped"
