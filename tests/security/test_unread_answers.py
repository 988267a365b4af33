"""Clients that never read their answers cannot hold `judge serve`: a connection whose
client takes nothing gets little work done, is the first one evicted when the connection
cap is reached, and is aborted at its write deadline. Real server process, real sockets;
no token needed for any of it."""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path

import pytest

from tests.security.serve import LimitedService

pytestmark = pytest.mark.timeout(120)

#: 200 pipelined requests for a large answer (the OpenAPI document, tens of kB each).
PIPELINED = b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n" * 200


def _non_reader(service: LimitedService) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # (before connecting: a small window)
    sock.settimeout(20)
    sock.connect(("127.0.0.1", service.port))
    sock.sendall(PIPELINED)
    return sock


def _wait_for(condition: object, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _served(service: LimitedService) -> int:
    return len(re.findall(r'"path": "/openapi.json"', service.text()))


def test_at_the_cap_clients_that_read_nothing_make_room_for_healthz(tmp_path: Path) -> None:
    args = ["--data-dir", str(tmp_path / "d"), "--max-connections", "16"]  # (write deadline: 30 s)
    service = LimitedService(tmp_path, args).start()
    clients = []
    try:
        clients = [_non_reader(service) for _ in range(16)]
        # Each connection gets a bounded amount of work done, then waits for its client.
        _wait_for(lambda: _served(service) >= 16, "every connection got an answer")
        for _ in range(10):
            began = time.monotonic()
            status, body = service.request("GET", "/healthz")
            assert (status, body) == (200, {"status": "ok"})
            assert time.monotonic() - began < 10
            time.sleep(0.2)
        assert service.open_fds() < 64
    finally:
        for sock in clients:
            sock.close()
        assert service.stop() == 0


def test_a_client_that_reads_nothing_gets_little_work_and_is_dropped_at_the_write_deadline(
    tmp_path: Path,
) -> None:
    args = ["--data-dir", str(tmp_path / "d"), "--write-timeout", "2"]
    service = LimitedService(tmp_path, args).start()
    try:
        sock = _non_reader(service)
        _wait_for(lambda: "whose client took none of its" in service.text(), "the connection was aborted")
        assert _served(service) < 40  # of the 200 asked for (each answer is tens of kB)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
        assert 0 < received.count(b"HTTP/1.1 200") < 40
        assert service.request("GET", "/healthz")[0] == 200
    finally:
        assert service.stop() == 0
