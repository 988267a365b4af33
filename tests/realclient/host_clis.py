"""The pinned agent CLIs besides Claude Code for the real-client tests: found, or installed from npm once.

Each package goes to ``$JUDGE_TEST_CACHE/<name>-<version>`` (default
``~/.cache/judge-tests``) with ``npm install --prefix``, as :mod:`tests.realclient.claude_cli`
does for Claude Code; ``JUDGE_TEST_<NAME>`` (``JUDGE_TEST_CODEX``, ``JUDGE_TEST_GEMINI``,
``JUDGE_TEST_COPILOT``) names an executable to use instead. ``scripts/setup.sh`` runs this
module so CI installs them before the tests; when node/npm or the registry cannot be had,
:func:`find_cli` says why and the tests skip with that reason. A failed install is not
retried for an hour.

Run as ``python tests/realclient/host_clis.py`` to install them all (exit 0 even when one
cannot be installed: the reason is printed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

INSTALL_TIMEOUT = 600
RETRY_AFTER = 3600


@dataclass(frozen=True)
class Cli:
    """One pinned CLI: its npm package and version, and the executable it installs."""

    name: str
    package: str
    version: str
    executable: str

    @property
    def override(self) -> str:
        return f"JUDGE_TEST_{self.name.upper()}"

    def folder(self) -> Path:
        root = os.environ.get("JUDGE_TEST_CACHE") or str(Path.home() / ".cache" / "judge-tests")
        return Path(root) / f"{self.folder_name}-{self.version}"

    @property
    def folder_name(self) -> str:
        return "gemini-cli" if self.name == "gemini" else self.name

    def binary(self) -> Path:
        return self.folder() / "node_modules" / ".bin" / self.executable


#: The releases the tests are written against (hook protocols, wire formats).
CODEX = Cli("codex", "@openai/codex", "0.171.0", "codex")
GEMINI = Cli("gemini", "@google/gemini-cli", "0.61.0", "gemini")
COPILOT = Cli("copilot", "@github/copilot", "1.0.102", "copilot")
CLIS = (CODEX, GEMINI, COPILOT)


def _works(binary: Path) -> str | None:
    """None when ``binary --version`` answers, else why not."""
    try:
        done = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{binary} --version failed: {exc}"
    if done.returncode != 0:
        return f"{binary} --version exited {done.returncode}: {done.stderr.strip()[:300]}"
    return None


def install(cli: Cli) -> str | None:
    """Install ``cli`` into its cache folder unless it is there; None or why it failed."""
    binary = cli.binary()
    if binary.exists() and _works(binary) is None:
        return None
    npm = shutil.which("npm")
    if npm is None:
        return f"npm is not installed ({cli.package} comes from the npm registry)"
    failed = cli.folder().with_name(cli.folder().name + ".failed")
    if failed.exists() and time.time() - failed.stat().st_mtime < RETRY_AFTER:
        return failed.read_text().strip() + f" (not retried for an hour; remove {failed} to retry now)"
    cli.folder().mkdir(parents=True, exist_ok=True)
    spec = f"{cli.package}@{cli.version}"
    command = [npm, "install", "--prefix", str(cli.folder()), "--no-audit", "--no-fund", "--loglevel=error"]
    command.append(spec)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)
        problem = None
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip()[-500:]
            problem = f"npm install {spec} failed (exit {done.returncode}): {tail}"
    except subprocess.TimeoutExpired:
        problem = f"npm install {spec} took over {INSTALL_TIMEOUT} s"
    if problem is None:
        problem = _works(binary) if binary.exists() else f"npm install {spec} left no {binary}"
    if problem is None:
        failed.unlink(missing_ok=True)
    else:
        failed.write_text(problem + "\n")
    return problem


def find_cli(cli: Cli) -> tuple[Path | None, str]:
    """The executable to run and, when there is none, the reason (for ``pytest.skip``)."""
    chosen = os.environ.get(cli.override)
    if chosen:
        problem = _works(Path(chosen))
        return (None, f"{cli.override}={chosen}: {problem}") if problem else (Path(chosen), "")
    try:
        problem = install(cli)
    except OSError as exc:  # an unwritable cache folder, a full disk
        problem = f"cannot install into {cli.folder()}: {exc}"
    if problem is not None:
        return None, f"{cli.package} {cli.version} is not available: {problem}"
    return cli.binary(), ""


if __name__ == "__main__":
    for each in CLIS:
        found, why = find_cli(each)
        if found is None:
            print(f"real {each.name} tests will be skipped: {why}", file=sys.stderr)
        else:
            print(f"{each.package} {each.version}: {found}")
