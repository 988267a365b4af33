"""bench/README.md's summary table quotes what the bench scripts printed.

A bench script states its targets in ``target: ...`` lines (``... <= 1.5x ...: 1.03x (met)``).
The README records a run's output in the script's section (the first block there holding
such lines is the latest) and quotes each figure in the bold cell of the table at the top,
its verdict in the same clause (``no match 1.03x, met``). These tests read the README only
(no bench runs): each recorded figure (``x`` or ``ms``) must be quoted with its verdict,
within the rounding of the printed figure, and each verdict must follow from the target
the line states.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "bench" / "README.md"
#: A figure with its verdict in a printed target line: ``1.03x (met)``, ``63 ms (missed)``.
FIGURE = re.compile(r"(\d+(?:\.\d+)?)(x| ms) \((met|missed)\)")
#: The target itself: ``<= 1.5x``, ``<= 150 ms``.
TARGET = re.compile(r"<= (\d+(?:\.\d+)?)(x| ms)")
#: How far a quoted figure may be from the printed one (the printed figures' rounding).
ROUNDING = {"x": 0.01, " ms": 1.0}


def table_rows(text: str) -> dict[str, tuple[str, str]]:
    """Script name -> (section number, bold result cell) from the table at the top."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0].isdigit() and cells[1].startswith("`"):
            bold = re.findall(r"\*\*(.+?)\*\*", cells[4])
            rows[cells[1].strip("`")] = (cells[0], "; ".join(bold))
    return rows


def section(text: str, number: str) -> str:
    match = re.search(rf"^## {number}\. .*?(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"no section {number} in bench/README.md"
    return match.group(0)


def recorded_targets(body: str) -> list[str]:
    """The ``target:`` lines of the first output block in a section that has any."""
    for block in re.findall(r"^```\n(.*?)^```", body, re.MULTILINE | re.DOTALL):
        lines = [line for line in block.splitlines() if line.startswith("target:")]
        if lines:
            return lines
    return []


def claims(text: str) -> dict[str, tuple[list[str], str]]:
    """Script -> (its recorded target lines, its bold cell), for scripts that record targets."""
    found = {}
    for script, (number, bold) in table_rows(text).items():
        lines = recorded_targets(section(text, number))
        if lines:
            found[script] = (lines, bold)
    return found


def quoted(bold: str, value: float, unit: str, verdict: str) -> bool:
    """Whether a clause of the bold cell (``;`` apart) gives the figure and its verdict."""
    for clause in bold.split(";"):
        figures = [float(v) for v, u in re.findall(r"(\d+(?:\.\d+)?)(x| ms)\b", clause) if u == unit]
        close = any(abs(v - value) <= ROUNDING[unit] for v in figures)
        if close and re.search(rf"\b{verdict}\b", clause):
            return True
    return False


def drift(lines: list[str], bold: str) -> list[str]:
    """What the bold cell gets wrong about the recorded target lines."""
    problems = []
    for line in lines:
        target = TARGET.search(line)
        for value, unit, verdict in FIGURE.findall(line):
            if target and target.group(2) == unit:
                expected = "met" if float(value) <= float(target.group(1)) else "missed"
                if verdict != expected:
                    problems.append(f"{value}{unit} is {expected}, printed {verdict}: {line}")
            if not quoted(bold, float(value), unit, verdict):
                problems.append(f"the table does not quote {value}{unit}, {verdict} ({line})")
    return problems


def test_the_scripts_with_printed_targets_are_found_in_the_readme() -> None:
    found = claims(README.read_text(encoding="utf-8"))
    assert {"bench_claude_code.py", "bench_engine_overhead.py"} <= set(found)


@pytest.mark.parametrize("script", sorted(claims(README.read_text(encoding="utf-8"))))
def test_the_summary_table_quotes_the_latest_recorded_figures(script: str) -> None:
    lines, bold = claims(README.read_text(encoding="utf-8"))[script]
    assert drift(lines, bold) == []


def test_a_figure_that_drifted_from_its_section_is_caught() -> None:
    lines = ["target: no match <= 1.5x the minimal Python hook: 1.01x (met)"]
    assert drift(lines, "no match 1.01x, met") == []
    assert drift(lines, "no match 1.16x, met") != []
    assert drift(lines, "no match 1.01x, missed") != []
    assert drift(["target: Stop <= 150 ms CPU: 63 ms (missed)"], "63 ms, missed") != []
