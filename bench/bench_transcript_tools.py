"""Transcript tools at scale: GrepSearch and ReadFile on 10 MB, 100 MB (and 1 GB) transcripts.

A transcript of the given size is generated (agent/tool turns, one rare marker line near
the end). Each measurement runs in a fresh child process, so its peak memory
(ru_maxrss from wait4) is its own: GrepSearch for the rare marker as plain text and as
a regular expression (a full scan: the match is near the end), ReadFile of a 400-line
window near the end, and the baseline `grep -c` (and `grep -ic`, GrepSearch being
case-insensitive) on the same file. An idle child that only imports the tools gives the
memory floor. Targets: peak memory flat (< 100 MB) as the size grows; GrepSearch within
3x of GNU grep's time.

    .venv/bin/python bench/bench_transcript_tools.py [--sizes 10 100] [--big]   (--big adds 1 GB)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import PYTHON, machine, table, timed_child

MARKER = "ZEBRA-QUARTZ-MARKER"
MEMORY_TARGET_MB = 100.0
GREP_TARGET = 3.0

TOOL = """
import sys, time
from pathlib import Path
from judge.llm.tools import TranscriptTools
tools = TranscriptTools(Path(sys.argv[1]), grep_seconds=3600)
kind = sys.argv[2]
start = time.perf_counter()
if kind == "grep":
    out = tools.GrepSearch(sys.argv[3], False, 20)
elif kind == "regex":
    out = tools.GrepSearch(sys.argv[3], True, 20)
elif kind == "read":
    total = tools.line_count()
    out = tools.ReadFile(sys.argv[1], total - 500, total - 101)
else:
    out = "idle"
print(f"{time.perf_counter() - start:.6f}")
print(out[:200].replace("\\n", " | "))
"""

BLOCK = [
    "[user] Please fix the failing test in src/parser.py and run the suite again.",
    "[assistant] I will look at the parser first. Reading src/parser.py lines 1-200.",
    '[tool:ReadFile] {"filePath": "src/parser.py", "startLine": 1, "endLine": 200}',
    "[tool result] def parse(tokens):\\n    stack = []\\n    for token in tokens: ... (180 lines)",
    "[assistant] The off-by-one is in the loop bound; patching and re-running pytest.",
    "[tool:Bash] pytest -q tests/test_parser.py",
    "[tool result] ........................................ 40 passed in 0.31s",
    "[assistant] All parser tests pass now. Summary: fixed the loop bound in parse().",
]


def generate(path: Path, megabytes: int) -> None:
    """A transcript of about ``megabytes`` MB; the marker sits 300 lines before the end."""
    chunk = "\n".join(f"{line} #{i}" for i in range(64) for line in BLOCK) + "\n"
    data = chunk.encode("utf-8")
    target = megabytes * 1_000_000
    with path.open("wb") as fh:
        written = 0
        while written + len(data) < target:
            fh.write(data)
            written += len(data)
        tail = [f"{BLOCK[i % len(BLOCK)]} tail {i}" for i in range(600)]
        tail[300] = f"[tool result] FAILED with {MARKER}: connection reset"
        fh.write(("\n".join(tail) + "\n").encode("utf-8"))


def tool_run(path: Path, kind: str, query: str = MARKER) -> tuple[float, float]:
    """(seconds inside the tool call, peak RSS MB of the child)."""
    _, _, rss_kb, out = timed_child([PYTHON, "-c", TOOL, str(path), kind, query], timeout=3600)
    lines = out.splitlines()
    if kind in ("grep", "regex") and MARKER not in out:
        raise RuntimeError(f"GrepSearch did not find the marker: {lines[1:2]}")
    if kind == "read" and "Transcript lines" not in out:
        raise RuntimeError(f"ReadFile failed: {lines[1:2]}")
    return float(lines[0]), rss_kb / 1024


def grep_run(grep: str, path: Path, *flags: str) -> tuple[float, float]:
    wall, _, rss_kb, out = timed_child([grep, *flags, "-c", MARKER, str(path)], timeout=3600)
    if out.strip() != "1":
        raise RuntimeError(f"grep -c found {out.strip()} lines, expected 1")
    return wall, rss_kb / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[10, 100], help="sizes in MB (default 10 100)"
    )
    parser.add_argument("--big", action="store_true", help="also 1 GB (needs ~1 GB of temporary disk)")
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to write the transcripts (default: tmp)"
    )
    opts = parser.parse_args(argv)
    sizes = sorted(set(opts.sizes + ([1000] if opts.big else [])))
    if min(sizes) < 1:
        parser.error("--sizes must be positive")
    grep = shutil.which("grep")
    rows = []
    peaks: list[float] = []
    worst_grep = 0.0
    with tempfile.TemporaryDirectory(dir=opts.dir) as tmp:
        _, idle_mb = tool_run(Path(os.devnull), "idle")
        for size in sizes:
            path = Path(tmp) / f"transcript-{size}mb.txt"
            generate(path, size)
            actual = path.stat().st_size / 1e6
            grep_s, grep_mb = grep_run(grep, path) if grep else (float("nan"), 0.0)
            grepi_s, _ = grep_run(grep, path, "-i") if grep else (float("nan"), 0.0)
            for label, kind in (
                ("GrepSearch text", "grep"),
                ("GrepSearch regex", "regex"),
                ("ReadFile (near end)", "read"),
            ):
                seconds, peak = tool_run(path, kind)
                peaks.append(peak)
                vs_grep = seconds / grep_s if kind != "read" else float("nan")
                vs_grepi = seconds / grepi_s if kind != "read" else float("nan")
                if kind != "read":
                    worst_grep = max(worst_grep, vs_grepi)
                rows.append(
                    (
                        f"{actual:.0f} MB",
                        label,
                        seconds,
                        f"{vs_grep:.1f}x" if kind != "read" else "-",
                        f"{vs_grepi:.1f}x" if kind != "read" else "-",
                        peak,
                        peak - idle_mb,
                    )
                )
            rows.append((f"{actual:.0f} MB", "grep -c (baseline)", grep_s, "1.0x", "-", grep_mb, "-"))
            rows.append((f"{actual:.0f} MB", "grep -ic", grepi_s, "-", "1.0x", "-", "-"))
            path.unlink()
    print(f"transcript tools, one fresh process per measurement; {machine()}")
    print(f"idle child (imports only): peak RSS {idle_mb:.1f} MB")
    print(
        table(
            ["size", "tool", "seconds", "vs grep -c", "vs grep -ic", "peak RSS MB", "above idle MB"],
            rows,
        )
    )
    flat = max(peaks) < MEMORY_TARGET_MB
    print(
        f"target: peak memory < {MEMORY_TARGET_MB:.0f} MB at every size: max {max(peaks):.1f} MB "
        f"({'met' if flat else 'MISSED'})"
    )
    verdict = "met" if worst_grep <= GREP_TARGET else "MISSED"
    print(
        f"target: GrepSearch within {GREP_TARGET:.0f}x of GNU grep -ic: worst {worst_grep:.1f}x ({verdict})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
