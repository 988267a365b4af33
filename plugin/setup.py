"""judge's plugin SessionStart hook: the Python environment judge runs from, then the pin.

Claude Code runs it when a session starts (``python3 ${CLAUDE_PLUGIN_ROOT}/plugin/setup.py``,
the hook input on stdin). It

1. finds the Python that runs judge: ``$JUDGE_PLUGIN_PYTHON`` when set (an interpreter that
   already has this judge installed: nothing is built), else a virtual environment in
   ``${CLAUDE_PLUGIN_DATA}/venv-<digest>`` installed from the plugin's own source with
   ``pip install <plugin root>`` (pip's own settings apply: ``PIP_INDEX_URL``,
   ``PIP_FIND_LINKS``, a proxy) and built anew when that source changes (``<digest>`` is a
   SHA-256 of its files); the environment before it is kept, older ones are removed;
2. records that interpreter in ``${CLAUDE_PLUGIN_DATA}/python`` for ``plugin/hook.sh``;
3. hands the hook input to ``judge claude-code`` (through ``plugin/hook.sh``), which pins the
   configuration the session is judged by.

Nothing goes to stdout (a SessionStart hook's output reaches the model); problems go to
stderr and to ``${CLAUDE_PLUGIN_DATA}/setup.log``. One session builds at a time (a lock).
Standard library only: it runs on whatever ``python3`` Claude Code finds.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: What goes into the installed package (pyproject.toml says so): its digest names the venv.
SOURCES = ("pyproject.toml", "judge", "prompts")
MINIMUM = (3, 11)


def digest() -> str:
    """SHA-256 of the plugin's installable source (paths and contents)."""
    h = hashlib.sha256()
    for name in SOURCES:
        top = ROOT / name
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in files:
            if "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def base_python() -> str:
    """A Python >= 3.11 to build the environment with."""
    if sys.version_info >= MINIMUM:
        return sys.executable
    for name in ("python3.13", "python3.12", "python3.11"):
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError(f"judge needs Python 3.11 or later; python3 here is {sys.version.split()[0]}")


def build(data: Path, log: Path) -> Path:
    """The environment of the current source, built when missing; its interpreter."""
    venv = data / f"venv-{digest()}"
    python = venv / "bin" / "python"
    if (venv / ".complete").exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    with log.open("a") as out:
        steps = [
            [base_python(), "-m", "venv", str(venv)],
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(ROOT)],
        ]
        for step in steps:
            out.write(f"$ {' '.join(step)}\n")
            out.flush()
            if subprocess.run(step, stdout=out, stderr=out, stdin=subprocess.DEVNULL).returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                raise RuntimeError(f"{' '.join(step[:4])} ... failed; see {log}")
    (venv / ".complete").touch()
    return python


def prune(data: Path, keep: list[Path]) -> None:
    """Remove the environments older than the one before the current one."""
    for venv in data.glob("venv-*"):
        if venv not in keep:
            shutil.rmtree(venv, ignore_errors=True)


def main() -> int:
    data = Path(os.environ.get("CLAUDE_PLUGIN_DATA") or ROOT / ".plugin-data")
    data.mkdir(parents=True, exist_ok=True)
    hook_input = sys.stdin.buffer.read()
    pointer = data / "python"
    with open(data / "setup.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            chosen = os.environ.get("JUDGE_PLUGIN_PYTHON") or ""
            python = Path(chosen) if chosen else build(data, data / "setup.log")
        except (OSError, RuntimeError) as exc:
            print(f"judge plugin: cannot set up judge: {exc}", file=sys.stderr)
            return 0  # the hooks then deny tool calls and say so on the rest
        before = Path(pointer.read_text().strip()).parent.parent if pointer.exists() else None
        tmp = data / f"python.{os.getpid()}"
        tmp.write_text(f"{python}\n")
        tmp.replace(pointer)
        if not chosen:
            prune(data, [python.parent.parent, *([before] if before else [])])
    done = subprocess.run(["bash", str(ROOT / "plugin" / "hook.sh"), "SessionStart", "15"], input=hook_input)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
