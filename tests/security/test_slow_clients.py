"""Slow and idle clients cannot hold `judge serve` (issue class: slowloris, fd exhaustion,
log flooding). Every test runs a real server process and real sockets."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.security.serve import LimitedService, read_all

pytestmark = pytest.mark.timeout(90)

PARTIAL_HEADERS = b"POST /api/v2/hooks/Stop HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
STOP = b'{"final_output": "done"}'


def _post_stop(service: LimitedService) -> tuple[int, float]:
    began = time.monotonic()
    status, _ = service.request("POST", "/api/v2/hooks/Stop", {"final_output": "done"})
    return status, time.monotonic() - began


@pytest.mark.slow
def test_300_slowloris_sockets_neither_exhaust_fds_nor_block_a_real_request(tmp_path):
    # 256 descriptors in all: without a cap, 300 half-sent requests used to take every
    # one of them and real requests waited for minutes (accept() failing with EMFILE).
    service = LimitedService(
        tmp_path, ["--data-dir", str(tmp_path / "d"), "--header-timeout", "60"], (256, 256)
    )
    service.start()
    sockets: list[socket.socket] = []
    try:
        assert "at most 16 connections per worker" in service.text()
        for _ in range(300):
            sock = service.connect()
            sock.sendall(PARTIAL_HEADERS)
            sockets.append(sock)
        assert service.open_fds() < 200
        status, took = _post_stop(service)
        assert status == 200 and took < 10
        assert service.request("GET", "/healthz")[0] == 200
        assert service.open_fds() < 200
    finally:
        for sock in sockets:
            sock.close()
        assert service.stop() == 0
    log = service.text()
    assert "out of system resource" not in log and "Too many open files" not in log
    assert len(log.encode()) < 20_000, log[-2000:]


def test_soft_file_limit_is_raised_to_the_hard_limit(tmp_path):
    service = LimitedService(tmp_path, ["--data-dir", str(tmp_path / "d")], (256, 640))
    service.start()
    try:
        assert service.proc is not None
        limits = Path(f"/proc/{service.proc.pid}/limits").read_text()
        line = next(x for x in limits.splitlines() if x.startswith("Max open files"))
        assert line.split()[3:5] == ["640", "640"]
        assert "at most 64 connections per worker" in service.text()  # (640 - 128) // 8
    finally:
        service.stop()


def test_a_cap_above_the_file_limit_is_refused(tmp_path):
    service = LimitedService(
        tmp_path, ["--data-dir", str(tmp_path / "d"), "--max-connections", "5000"], (256, 256)
    )
    with pytest.raises(AssertionError, match="--max-connections must be between 1 and 64"):
        service.start()


def test_headers_and_bodies_have_deadlines(tmp_path):
    args = ["--data-dir", str(tmp_path / "d"), "--header-timeout", "1", "--body-timeout", "1"]
    service = LimitedService(tmp_path, args).start()
    try:
        silent = service.connect()  # sends nothing at all
        partial = service.connect()
        partial.sendall(PARTIAL_HEADERS)
        began = time.monotonic()
        assert b" 408 " in read_all(partial).split(b"\r\n", 1)[0]
        assert read_all(silent).startswith(b"HTTP/1.1 408")
        assert time.monotonic() - began < 8

        slow_body = service.connect()
        slow_body.sendall(PARTIAL_HEADERS + b"Content-Length: 100\r\n\r\n" + b'{"final_')
        answer = read_all(slow_body)  # the server answers and closes: read_all returns
        assert answer.startswith(b"HTTP/1.1 408") and b"connection: close" in answer.lower()
        assert b"request body not received within 1s" in answer

        # A kept-alive connection gets the same deadline for its next request's headers.
        kept = service.connect()
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        first = b""
        while b'{"status": "ok"}' not in first:
            first += kept.recv(65536)
        assert first.startswith(b"HTTP/1.1 200")
        kept.sendall(b"GET /healthz HTTP/1.1\r\n")
        assert read_all(kept).startswith(b"HTTP/1.1 408")

        assert _post_stop(service)[0] == 200  # a normal client is unaffected
    finally:
        assert service.stop() == 0


def test_when_every_connection_is_busy_new_ones_get_503_at_once(tmp_path):
    args = ["--data-dir", str(tmp_path / "d"), "--max-connections", "2", "--body-timeout", "60"]
    service = LimitedService(tmp_path, args).start()
    busy = []
    try:
        for _ in range(2):  # headers complete, body pending: busy, not evictable
            sock = service.connect()
            sock.sendall(PARTIAL_HEADERS + b"Content-Length: 100\r\nExpect: 100-continue\r\n\r\n")
            assert sock.recv(65536).startswith(b"HTTP/1.1 100")  # the server is reading the body
            busy.append(sock)
        extra = service.connect()
        answer = read_all(extra)
        assert answer.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in answer.lower()
        for sock in busy:
            sock.close()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # the server notices the closed sockets
            try:
                if service.request("GET", "/healthz")[0] == 200:
                    break
            except (ConnectionError, OSError):
                pass
        assert service.request("GET", "/healthz")[0] == 200
    finally:
        assert service.stop() == 0


def test_a_flood_of_bad_requests_does_not_flood_the_log(tmp_path):
    service = LimitedService(tmp_path, ["--data-dir", str(tmp_path / "d")]).start()
    try:
        for _ in range(600):
            sock = service.connect()
            sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            assert read_all(sock).startswith(b"HTTP/1.1 400")
            sock.close()
    finally:
        assert service.stop() == 0
    lines = service.text().splitlines()
    assert sum("Invalid HTTP request" in x for x in lines) <= 30  # of 600


def test_request_lines_are_rate_limited_and_stay_json(tmp_path, monkeypatch):
    import json
    import logging

    from judge.service import logging_config as server_logs

    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    monkeypatch.setattr(server_logs, "ACCESS_RATE", (0.0001, 5.0))
    server_logs.configure_logging()
    server_logs.access_log.handlers = [Keep()]
    try:
        for i in range(50):
            server_logs.access_log.info(json.dumps({"path": "/nowhere", "i": i}))
        now = time.monotonic()
        monkeypatch.setattr(time, "monotonic", lambda: now + 1e6)
        server_logs.access_log.info(json.dumps({"path": "/later"}))
    finally:
        server_logs.configure_logging()
    assert len(records) == 6
    assert json.loads(records[-1]) == {"path": "/later", "droppedBefore": 45}


def test_other_log_lines_are_rate_limited_per_message(monkeypatch):
    import logging

    from judge.service.logging_config import RateLimit

    limit = RateLimit(0.0001, 3.0)
    record = lambda msg: logging.LogRecord("uvicorn.error", logging.WARNING, "", 0, msg, None, None)  # noqa: E731
    passed = [limit.filter(record("Invalid HTTP request received.")) for _ in range(10)]
    assert passed == [True] * 3 + [False] * 7
    assert limit.filter(record("another message"))  # its own bucket
    now = time.monotonic()
    monkeypatch.setattr(time, "monotonic", lambda: now + 1e6)
    late = record("Invalid HTTP request received.")
    assert limit.filter(late)
    assert late.getMessage() == "Invalid HTTP request received. [7 similar log lines dropped before this one]"


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--header-timeout", "0", "--header-timeout must be a positive number of seconds"),
        ("--body-timeout", "nan", "--body-timeout must be a positive number of seconds"),
        ("--max-connections", "0", "--max-connections must be between 1 and"),
    ],
)
def test_bad_limit_flags_are_refused(tmp_path, flag, value, message):
    import subprocess
    import sys

    from tests.service.test_service import REPO

    done = subprocess.run(
        [sys.executable, "-m", "judge", "serve", "--port", "0", "--data-dir", str(tmp_path), flag, value],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and message in done.stderr and "Traceback" not in done.stderr
