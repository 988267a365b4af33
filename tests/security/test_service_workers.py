"""`kill -9` of the `judge serve --workers N` master: the workers notice and exit, and
the port is free again (issue class: orphaned workers keep serving)."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest

from tests.security.serve import LimitedService

pytestmark = pytest.mark.timeout(90)


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.extend(int(x) for x in text)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _port_free(port: int) -> bool:
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        probe.close()


@pytest.mark.slow
def test_workers_exit_and_free_the_port_when_the_master_is_killed(tmp_path):
    service = LimitedService(tmp_path, ["--data-dir", str(tmp_path / "d"), "--workers", "2"]).start()
    assert service.proc is not None
    master = service.proc.pid
    deadline = time.monotonic() + 30
    while service.request("GET", "/healthz")[0] != 200 and time.monotonic() < deadline:
        pass
    workers = [pid for pid in _children(master) if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert len(workers) == 2, workers
    os.kill(master, signal.SIGKILL)
    service.proc.wait(timeout=10)
    try:
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in workers), service.text()[-2000:]
    finally:
        for pid in workers:  # never leave orphans behind, even when the test fails
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert _port_free(service.port)
    assert "the master process died" in service.text()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", service.port), timeout=5).close()
