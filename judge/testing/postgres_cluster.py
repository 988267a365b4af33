"""A throw-away PostgreSQL cluster in a temporary folder, for tests and benches.

Uses the server binaries of Debian's ``postgresql`` package (``/usr/lib/postgresql/*/bin``,
else ``initdb`` on ``PATH``). PostgreSQL refuses to run as root, so as root the cluster
runs as ``nobody`` (``JUDGE_PG_USER`` to choose another user). It listens only on a unix
socket inside its folder (no TCP port). By default ``fsync`` is off: commits survive the
server's crash or immediate stop, not the machine's; ``durable=True`` keeps PostgreSQL's
own defaults (what a benchmark should measure). Gone with its folder.

    with PostgresCluster() as cluster:
        url = cluster.create_database("t1")   # postgresql://judge@/t1?host=/tmp/...

:class:`ClusterUnavailable` says precisely why a cluster could not start (no binaries,
no unprivileged user, initdb or the server failed: with the tail of their output).
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

USER_ENV = "JUDGE_PG_USER"
SUPERUSER = "judge"
PORT = 5432


class ClusterUnavailable(RuntimeError):
    """No cluster could be started here; the message says why."""


def server_bin() -> Path:
    """The folder of ``initdb``/``pg_ctl`` (the newest installed major version)."""

    def major(path: str) -> int:
        found = re.search(r"/postgresql/(\d+)/", path)
        return int(found.group(1)) if found else 0

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=major)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent
    raise ClusterUnavailable(
        "PostgreSQL server binaries not found (no /usr/lib/postgresql/*/bin/initdb, no initdb on "
        "PATH): install Debian's postgresql package (scripts/setup.sh does so when run as root)"
    )


def _tail(text: str, lines: int = 6) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


class PostgresCluster:
    """One cluster: :meth:`start` it, :meth:`url` / :meth:`create_database`, :meth:`stop`."""

    def __init__(self, *, durable: bool = False) -> None:
        self.durable = durable
        self.bin = server_bin()
        self.folder = Path(tempfile.mkdtemp(prefix="judge-pg-"))
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self._user: dict[str, Any] = {}
        if os.geteuid() == 0:
            name = os.environ.get(USER_ENV, "nobody")
            try:
                entry = pwd.getpwnam(name)
            except KeyError:
                shutil.rmtree(self.folder, ignore_errors=True)
                raise ClusterUnavailable(
                    f"running as root and there is no user {name!r} to run PostgreSQL as "
                    f"(set {USER_ENV} to an unprivileged user)"
                ) from None
            os.chown(self.folder, entry.pw_uid, entry.pw_gid)
            self._user = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}

    def _run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "HOME": str(self.folder)}
        return subprocess.run(
            [str(self.bin / args[0]), *args[1:]],
            cwd=self.folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            **self._user,
        )

    def start(self) -> PostgresCluster:
        try:
            init = self._run(
                "initdb", "-D", str(self.data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8",
                "--locale=C", "--no-sync",
            )  # fmt: skip
            if init.returncode != 0:
                problem = _tail(init.stderr + init.stdout)
                raise ClusterUnavailable(f"initdb failed ({init.returncode}): {problem}")
            started = self._start()
            if started.returncode != 0:
                log = self.log.read_text(errors="replace") if self.log.exists() else ""
                raise ClusterUnavailable(
                    f"the PostgreSQL server did not start ({started.returncode}): "
                    f"{_tail(started.stderr + started.stdout + log)}"
                )
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.stop()
            raise ClusterUnavailable(f"could not run the PostgreSQL server binaries: {exc}") from None
        except ClusterUnavailable:
            self.stop()
            raise
        return self

    def _options(self) -> str:
        options = f"-c listen_addresses= -c unix_socket_directories={self.folder} -c port={PORT} "
        options += "-c max_connections=200"
        return options if self.durable else options + " -c fsync=off -c full_page_writes=off"

    def _start(self) -> subprocess.CompletedProcess[str]:
        return self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                         "-o", self._options(), "start", timeout=90)  # fmt: skip

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@/{database}?host={self.folder}&port={PORT}"

    def create_database(self, name: str) -> str:
        """A new empty database; its URL."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def stop(self, *, keep: bool = False) -> None:
        """Stop the server at once (``-m immediate``); remove the folder unless ``keep``."""
        if self.running():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=60)
        if not keep:
            shutil.rmtree(self.folder, ignore_errors=True)

    def restart(self) -> None:
        """Start the server again after ``stop(keep=True)`` (the same data)."""
        started = self._start()
        if started.returncode != 0:
            raise ClusterUnavailable(f"the PostgreSQL server did not restart: {_tail(started.stderr)}")

    def __enter__(self) -> PostgresCluster:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()
