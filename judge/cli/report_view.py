"""What ``judge eval`` shows beyond its summary: the first cases the judge and the labels
disagree on (``--disagreements N``), the run as one JSON object (``--json``) and the
HTML report opened in a browser (``--open``)."""

from __future__ import annotations

import json
import sys
import webbrowser
from pathlib import Path
from typing import Any

#: Disagreeing cases listed after the summary unless ``--disagreements`` says otherwise.
DEFAULT_SHOWN = 10
#: Characters of a reason shown on a disagreement's line.
REASON_CHARS = 160


def add_view_flags(p: Any) -> None:
    """``judge eval``'s flags for what it shows: disagreements, JSON, the report opened."""
    p.add_argument(
        "--disagreements",
        type=int,
        default=None,
        metavar="N",
        help="list the first N cases the judge and the labels disagree on after the summary "
        "(default: 10; 0: none)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the run as one JSON object (exitCode, report, run, failed, files) instead "
        "of the summary; the exit codes stay",
    )
    p.add_argument("--open", action="store_true", help="open report.html in a browser when it is written")


def _short(text: str | None) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 1] + "…"


def disagreement_lines(report: dict[str, Any], limit: int, out: Path) -> list[str]:
    """The first ``limit`` cases whose verdict is not their label: id, label, verdict, reason."""
    found = report.get("disagreements") or []
    if limit <= 0 or not found:
        return []
    repeats = int(report.get("repeats") or 1)
    lines = [f"  {len(found)} disagreement(s) with the labels:"]
    for item in found[:limit]:
        which = f"{item['id']}" + (f" (repeat {item['repeat']})" if repeats > 1 else "")
        said = f"label {item['label']}, judged {item['decision']}"
        reason = _short(item.get("reason"))
        lines.append(f"    {which}: {said}" + (f": {reason}" if reason else ""))
    if len(found) > limit:
        lines.append(f"    ... and {len(found) - limit} more in {out / 'report.html'}")
    return lines


def outcome_document(outcome: Any, out: Path, code: int) -> dict[str, Any]:
    """``judge eval --json``: the exit code, why the run could not complete (``problems``)
    or the report (report.json's content), the run's timing, the violated bounds and the
    files written."""
    document: dict[str, Any] = {"exitCode": code, "out": str(out), "problems": list(outcome.problems)}
    if outcome.report is not None:
        document["report"] = outcome.report
        document["run"] = outcome.run
        document["failed"] = list(outcome.failed)
        document["files"] = {
            name: str(out / name) for name in ("results.jsonl", "report.json", "report.html", "junit.xml")
        }
    if outcome.nothing_judged is not None:
        document["problems"].append(outcome.nothing_judged)
    return document


def print_json(document: dict[str, Any]) -> None:
    print(json.dumps(document, indent=2, ensure_ascii=False), flush=True)


def open_report(path: Path) -> None:
    """Open ``path`` in the user's browser; say so on stderr when there is none."""
    if not path.is_file():
        return
    try:
        opened = webbrowser.open(path.resolve().as_uri())
    except webbrowser.Error:
        opened = False
    if not opened:
        print(f"judge eval: no browser to open {path} with; open it yourself", file=sys.stderr)
