"""The command-hook sandbox, judge side: who a hook runs as, where, and with what.

A command hook is started through :mod:`judge.hooks.supervisor` (a separate small
process) that kills every descendant at the deadline and, where the kernel allows, gives
the hook its own PID namespace. This module decides the rest:

* the environment: a fixed allowlist of the judge's variables plus the names a hook lists
  under ``env`` (nothing else: API keys and tokens are never passed unless named);
* the working directory: the hook's private temp dir, or (``cwd``) the config's folder,
  the project (``$CLAUDE_PROJECT_DIR``) or a given folder;
* the user: when the judge runs as root, hooks run as ``$JUDGE_HOOK_USER`` (default
  ``nobody``), so the judge's 0600 state database, audit logs and process files are
  out of their reach;
* the judge process itself is made non-dumpable, so a same-user hook cannot read its
  ``/proc/<pid>/environ`` or memory.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from judge.errors import HookError
from judge.hooks import supervisor as sandbox_supervisor

#: Judge variables every hook sees. Everything else (API keys, tokens, ...) is dropped.
ENV_ALLOWLIST: tuple[str, ...] = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TERM",
    "CLAUDE_PROJECT_DIR",  # a path, not a secret: hooks written for Claude Code use it
)
#: Variables the sandbox sets itself; a hook's ``env`` list may not name them.
RESERVED_ENV: frozenset[str] = frozenset(
    {"HOME", "TMPDIR", "PYTHONIOENCODING", "JUDGE_HOOK_EVENT", "JUDGE_TRANSCRIPT"}
)
#: Who hooks run as when the judge runs as root: a user name or a numeric uid.
HOOK_USER_ENV = "JUDGE_HOOK_USER"
DEFAULT_HOOK_USER = "nobody"
NOBODY = 65534
#: Set to 0 to keep hooks in the judge's PID namespace (they then see, but cannot read the
#: environment of, other processes); the supervisor still kills every descendant.
NAMESPACES_ENV = "JUDGE_HOOK_NAMESPACES"
#: Where ``cwd: project`` points.
PROJECT_DIR_ENV = "CLAUDE_PROJECT_DIR"
CWD_KEYWORDS: tuple[str, ...] = ("temp", "config", "project")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PR_SET_DUMPABLE = 4


def env_names_problem(names: tuple[str, ...]) -> str | None:
    """Why a hook's ``env`` list is invalid, or None."""
    for name in names:
        if not _ENV_NAME.match(name):
            return f"{name!r} is not an environment variable name (letters, digits, _)"
        if name in RESERVED_ENV:
            return f"{name} is set by the sandbox itself and cannot be passed through"
    if len(set(names)) != len(names):
        return "names a variable more than once"
    return None


def cwd_problem(value: str) -> str | None:
    """Why a hook's ``cwd`` value is invalid, or None."""
    if not value.strip() or "\0" in value:
        return f"must be one of {', '.join(CWD_KEYWORDS)} or a folder path, got {value!r}"
    return None


def hook_env(
    workdir: str, names: tuple[str, ...] = (), extra: dict[str, str] | None = None
) -> dict[str, str]:
    """The environment of a command hook: the allowlist, the listed names, the sandbox's own."""
    env = {k: os.environ[k] for k in (*ENV_ALLOWLIST, *names) if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env["HOME"] = workdir
    env["TMPDIR"] = workdir
    env["PYTHONIOENCODING"] = "utf-8"
    if extra:
        env.update(extra)
    return env


def resolve_cwd(option: str, workdir: str, base_dir: Path | None) -> str:
    """The folder a hook starts in, for its ``cwd`` option (HookError if there is none)."""
    if option == "temp":
        return workdir
    if option == "project":
        project = os.environ.get(PROJECT_DIR_ENV, "")
        if not project:
            raise HookError(f"cwd: project needs ${PROJECT_DIR_ENV}, which is not set")
        folder = Path(project)
    elif option == "config":
        if base_dir is None:
            raise HookError("cwd: config needs a config file (this config has no folder)")
        folder = base_dir
    else:
        folder = Path(option).expanduser()
        if not folder.is_absolute():
            if base_dir is None:
                raise HookError(f"cwd: {option!r} is relative and this config has no folder")
            folder = base_dir / folder
    if not folder.is_dir():
        raise HookError(f"cwd: {folder} is not a folder")
    return str(folder.resolve())


@dataclass(frozen=True)
class HookUser:
    """The user a hook runs as (when the judge runs as root)."""

    uid: int
    gid: int


def hook_user() -> HookUser | None:
    """Who hooks run as: None when the judge is not root (hooks keep its user)."""
    if os.geteuid() != 0:
        return None
    wanted = os.environ.get(HOOK_USER_ENV, "").strip() or DEFAULT_HOOK_USER
    try:
        entry = pwd.getpwuid(int(wanted)) if wanted.isdigit() else pwd.getpwnam(wanted)
    except KeyError:
        if wanted.isdigit():
            return HookUser(int(wanted), NOBODY)
        if wanted == DEFAULT_HOOK_USER:
            return HookUser(NOBODY, NOBODY)
        raise HookError(f"${HOOK_USER_ENV}: no user named {wanted!r}") from None
    return HookUser(entry.pw_uid, entry.pw_gid)


def namespaces_wanted() -> bool:
    """Whether hooks get their own PID namespace where the kernel allows (``$JUDGE_HOOK_NAMESPACES``)."""
    return os.environ.get(NAMESPACES_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


_undumpable = False


def make_judge_undumpable() -> None:
    """Hide this process's /proc files (environ, mem, ...) from same-user processes."""
    global _undumpable
    if not _undumpable and sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_DUMPABLE, ctypes.c_ulong(0), 0, 0, 0)
        _undumpable = True


#: Seconds after the judge's deadline at which the supervisor stops the hook on its own.
SUPERVISOR_GRACE = 2.0


def supervisor_args(
    hook_argv: list[str], cwd: str, user: HookUser | None, namespaces: bool, deadline: float
) -> list[str]:
    """The per-hook supervisor's arguments for running ``hook_argv``."""
    ids = [str(user.uid), str(user.gid)] if user else ["-", "-"]
    flag = "1" if namespaces else "0"
    return [*ids, flag, f"{deadline + SUPERVISOR_GRACE:.3f}", cwd, *hook_argv]


def supervisor_argv(args: list[str]) -> list[str]:
    """The command that starts the supervisor with ``args`` as a program of its own.

    It imports the supervisor as a module rather than running its file as a script: a
    script is compiled at every start, a module's bytecode is cached (about 2.7 ms of CPU
    per command hook). Its folder goes at the end of ``sys.path``, after the standard
    library, and ``-I -S`` keeps the hook's environment and site-packages out."""
    folder = os.path.dirname(os.path.abspath(sandbox_supervisor.__file__))
    boot = f"import sys; sys.path.append({folder!r}); import supervisor; supervisor.main(sys.argv)"
    return [sys.executable, "-I", "-S", "-c", boot, *args]


def give_to(user: HookUser | None, *paths: Path) -> None:
    """Make ``paths`` (the hook's temp dir and its files) the hook user's."""
    if user is not None:
        for path in paths:
            os.chown(path, user.uid, user.gid)
