"""Shared fixtures."""

from __future__ import annotations

import itertools
import os
import re
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def hook_writable() -> Iterator[Path]:
    """A folder command hooks can write to whoever they run as (``nobody`` when the tests
    run as root: pytest's own temp folders are private to root)."""
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o777)
        yield Path(folder)


@pytest.fixture(autouse=True)
def _sigint_disposition_restored() -> Iterator[None]:
    """A test that runs `judge eval` in-process and interrupts it leaves SIGINT ignored
    (what the command does on its way out); child processes inherit an ignored signal, so
    it would make later Ctrl-C tests' children deaf. Put it back after each test."""
    before = signal.getsignal(signal.SIGINT)
    yield
    if signal.getsignal(signal.SIGINT) is not before and before is not None:
        signal.signal(signal.SIGINT, before)


@pytest.fixture(scope="module")
def _module_llm_server() -> Iterator[Any]:
    from judge.testing import LLMServer

    with LLMServer() as server:
        yield server


@pytest.fixture
def llm_server(_module_llm_server: Any) -> Any:
    """The local OpenAI- and Anthropic-format test server (one per test module), reset for
    each test: no recorded requests, no queued replies, no handler, ``{"ok": true}`` by default."""
    from judge.testing import verdict

    _module_llm_server.reset()
    _module_llm_server.handler = None
    _module_llm_server.default = verdict(True)
    return _module_llm_server


@pytest.fixture(scope="session")
def postgres() -> Iterator[Any]:
    """A throw-away PostgreSQL cluster for the session (skipped, with why, when none can start)."""
    from judge.testing.postgres_cluster import ClusterUnavailable, PostgresCluster

    try:
        cluster = PostgresCluster().start()
    except ClusterUnavailable as exc:
        pytest.skip(f"no PostgreSQL server for these tests: {exc}")
    yield cluster
    cluster.stop()


@pytest.fixture
def pg_url(postgres: Any, request: pytest.FixtureRequest) -> str:
    """The URL of a new empty database in :func:`postgres`, one per test."""
    name = re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:40]
    return str(postgres.create_database(f"t{next(_DATABASES)}_{name}"))


_DATABASES = itertools.count()


def _loopback(address: Any) -> bool:
    """Whether a socket address stays on this machine (a Unix socket, a loopback IP)."""
    import ipaddress

    if isinstance(address, str | bytes):  # AF_UNIX path
        return True
    if not isinstance(address, tuple) or not address:
        return False
    host = address[0]
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test opens a connection off this machine: the SDKs are driven for real against
    judge.testing.LLMServer on loopback, and anything else fails the test at once."""
    import socket

    def guarded(original: Any) -> Any:
        def connect(self: socket.socket, address: Any) -> Any:
            if not _loopback(address):
                raise AssertionError(f"a test tried to connect to {address!r}: tests stay on loopback")
            return original(self, address)

        return connect

    monkeypatch.setattr(socket.socket, "connect", guarded(socket.socket.connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guarded(socket.socket.connect_ex))
