"""The pinned Claude Code CLI for the real-client tests: found, or installed from npm once.

The package goes to ``$JUDGE_TEST_CACHE/claude-code-<version>`` (default
``~/.cache/judge-tests``) with ``npm install --prefix``. ``JUDGE_TEST_CLAUDE`` names a
``claude`` executable to use instead. ``scripts/test-tools.sh`` runs this module so CI installs
it before the tests; when node/npm or the registry cannot be had, :func:`find_claude`
says why and the tests skip with that reason.

Run as ``python tests/realclient/claude_cli.py`` to install (exit 0 even when it cannot:
the reason is printed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

#: The Claude Code release the tests are written against (hook protocol, wire format).
CLAUDE_CODE_VERSION = "2.1.332"
PACKAGE = "@anthropic-ai/claude-code"
INSTALL_TIMEOUT = 300
#: A failed install is not retried for this long (setup.sh and the tests share the verdict).
RETRY_AFTER = 3600


def cache_dir() -> Path:
    root = os.environ.get("JUDGE_TEST_CACHE") or str(Path.home() / ".cache" / "judge-tests")
    return Path(root) / f"claude-code-{CLAUDE_CODE_VERSION}"


def installed_binary() -> Path:
    return cache_dir() / "node_modules" / ".bin" / "claude"


def _works(binary: Path) -> str | None:
    """None when ``binary --version`` answers with the pinned version, else why not."""
    try:
        done = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{binary} --version failed: {exc}"
    if done.returncode != 0:
        return f"{binary} --version exited {done.returncode}: {done.stderr.strip()[:300]}"
    return None


def install() -> str | None:
    """Install the pinned CLI into the cache folder unless it is there; None or why it failed."""
    binary = installed_binary()
    if binary.exists() and _works(binary) is None:
        return None
    if shutil.which("npm") is None:
        return "npm is not installed (Claude Code comes from the npm registry)"
    failed = cache_dir().with_name(cache_dir().name + ".failed")
    if failed.exists() and time.time() - failed.stat().st_mtime < RETRY_AFTER:
        return failed.read_text().strip() + f" (not retried for an hour; remove {failed} to retry now)"
    problem = _npm_install(binary)
    if problem is None:
        failed.unlink(missing_ok=True)
    else:
        failed.parent.mkdir(parents=True, exist_ok=True)
        failed.write_text(problem + "\n")
    return problem


def _npm_install(binary: Path) -> str | None:
    npm = shutil.which("npm") or "npm"
    target = cache_dir()
    target.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--prefix", str(target), "--no-audit", "--no-fund", "--loglevel=error"]
    command.append(f"{PACKAGE}@{CLAUDE_CODE_VERSION}")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return f"npm install {PACKAGE}@{CLAUDE_CODE_VERSION} took over {INSTALL_TIMEOUT} s"
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-500:]
        return f"npm install {PACKAGE}@{CLAUDE_CODE_VERSION} failed (exit {done.returncode}): {tail}"
    if not binary.exists():
        return f"npm install {PACKAGE}@{CLAUDE_CODE_VERSION} left no {binary}"
    return _works(binary)


def find_claude() -> tuple[Path | None, str]:
    """The CLI to run and, when there is none, the reason (for ``pytest.skip``)."""
    chosen = os.environ.get("JUDGE_TEST_CLAUDE")
    if chosen:
        binary = Path(chosen)
        problem = _works(binary)
        return (None, f"JUDGE_TEST_CLAUDE={chosen}: {problem}") if problem else (binary, "")
    try:
        problem = install()
    except OSError as exc:  # an unwritable cache folder, a full disk
        problem = f"cannot install into {cache_dir()}: {exc}"
    if problem is not None:
        return None, f"Claude Code {CLAUDE_CODE_VERSION} is not available: {problem}"
    return installed_binary(), ""


if __name__ == "__main__":
    if not os.environ.get("JUDGE_TEST_CLAUDE") and not installed_binary().exists():
        print(
            f"test tools: installing the Claude Code CLI {CLAUDE_CODE_VERSION} (npm install {PACKAGE} "
            f"into {cache_dir()}) for the real-client tests (tests/realclient/)",
            file=sys.stderr,
        )
    found, why = find_claude()
    if found is None:
        print(f"test tools: the real Claude Code tests will be skipped: {why}", file=sys.stderr)
    else:
        print(f"test tools: Claude Code {CLAUDE_CODE_VERSION}: {found}", file=sys.stderr)
