"""Helpers shared by the bench scripts (not a package: each script puts bench/ on sys.path).

The model server runs in its own process, as a real provider would, so its CPU is not
counted in the measuring process (it is a child, but RUSAGE_CHILDREN only counts
children that have been waited for, and it is waited for only at the very end).
"""

from __future__ import annotations

import os
import platform
import resource
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable

SERVER = """
import sys
from judge.testing import LLMServer, say, verdict

def answer(request):
    # Inspect AI's model_graded_qa asks for "GRADE: C"; the judge asks for a JSON verdict.
    if "GRADE:" in request.text:
        return say("The answer is correct.\\nGRADE: C")
    return None

with LLMServer(latency=float(sys.argv[1]), record=False, handler=answer, default=verdict(True)) as server:
    print(server.port, flush=True)
    sys.stdin.read()
"""


class ModelServer:
    """The local OpenAI/Anthropic wire-format server in a child process."""

    def __init__(self, latency: float = 0.0, script: str = SERVER) -> None:
        self.latency = latency
        self.script = script
        self.port = 0
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> ModelServer:
        self._proc = subprocess.Popen(
            [PYTHON, "-c", self.script, str(self.latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line.strip():
            self._proc.kill()
            raise RuntimeError("the local model server did not start")
        self.port = int(line)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._proc is None:
            return
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        try:
            self._proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def env(self, model: str = "bench-model") -> dict[str, str]:
        """Variables pointing the judge's default tier (and the OpenAI SDK) at this server."""
        return {
            "OPENAI_BASE_URL": self.base_url,
            "OPENAI_API_KEY": "bench-key",
            "JUDGE_MODEL_REASONINGFAST": f"openai:{model}",
        }


def compile_judge() -> None:
    """Write the judge package's bytecode, as a wheel install does: an editable install
    run with ``PYTHONDONTWRITEBYTECODE`` set never writes it, and every process timed would
    then compile the modules it imports."""
    import compileall

    compileall.compile_dir(str(ROOT / "judge"), quiet=1)


def children_cpu() -> float:
    """CPU seconds (user + system) of the children waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_child(
    argv: Sequence[str], env: dict[str, str] | None = None, timeout: float = 600
) -> tuple[float, float, int, str]:
    """Run a child, reaping it with wait4: (wall s, CPU s of it and its children, peak RSS KiB, stdout).

    Raises RuntimeError (with the end of stderr) when it fails or times out.
    """
    import tempfile
    import time

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(list(argv), stdout=out, stderr=err, text=True, env=env, cwd=ROOT)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                raise RuntimeError(f"{argv[0]} timed out after {timeout:g} s")
            time.sleep(0.005)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(map(str, argv[:3]))} ... exited {proc.returncode}: {stderr.strip()[-800:]}"
        )
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, stdout


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain text table (right-aligned numbers)."""
    cells = [[str(h) for h in headers]] + [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        if value >= 100:
            return f"{value:.0f}"
        if value >= 10:
            return f"{value:.1f}"
        return f"{value:.3f}" if value < 1 else f"{value:.2f}"
    return str(value)


def machine() -> str:
    """nproc, architecture, CPU model and Python version (no host names)."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs, {platform.machine()}, {model}, Python {platform.python_version()}"
