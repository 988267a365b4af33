"""A real `judge serve` process for the security tests, with optional file limits."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.service.test_service import REPO, Service


class LimitedService(Service):
    """`judge serve` started with ``RLIMIT_NOFILE`` set to ``nofile`` = (soft, hard) and
    ``RLIMIT_AS`` to ``memory`` bytes."""

    def __init__(
        self,
        workdir: Path,
        args: list[str],
        nofile: tuple[int, int] | None = None,
        env_extra: dict[str, str] | None = None,
        cwd: Path | None = None,
        memory: int | None = None,
    ) -> None:
        super().__init__(workdir, args)
        self.nofile = nofile
        self.memory = memory
        self.env_extra = env_extra or {}
        self.cwd = cwd

    def start(self) -> LimitedService:
        nofile, memory = self.nofile, self.memory

        def limit() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, nofile)
            if memory is not None:
                resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "OPENAI_", "ANTHROPIC_"))}
        env["PYTHONPATH"] = str(REPO)
        env.update(self.env_extra)
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "judge", "serve", "--port", "0", *self.args],
                cwd=self.cwd or REPO,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
                preexec_fn=limit,
            )
        self._wait_listening()
        return self

    def _wait_listening(self) -> None:
        import re

        assert self.proc is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.text())
            if found:
                self.port = int(found.group(1))
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"judge serve exited early:\n{self.text()}")
            time.sleep(0.05)
        raise AssertionError(f"judge serve did not start:\n{self.text()}")

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=20)

    def open_fds(self) -> int:
        assert self.proc is not None
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (bounded by the socket timeout)."""
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)
