"""JUnit XML for CI (``junit.xml``): one ``<testcase>`` per case.

* a case whose judgement errored (in any repeat) gets an ``<error>``;
* a labelled case fails when a repeat's verdict differs from its label;
* an unlabelled case fails when a repeat blocks (the gate would have sent the agent back);
* a Stop forced through by ``maxRejections``, or judged impossible without the user,
  counts as the block it is, as in ``report.json`` (and says so);
* otherwise it passes. The judge's reasons go in the message and ``<system-out>``.

The shape is the one CI tools read: ``<testsuites>`` with one ``<testsuite>``, both
carrying ``tests``, ``failures``, ``errors``, ``skipped`` and ``time`` attributes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from judge.evaluation.runner import CaseResult
from judge.redact import visible_controls


def _clean(text: str) -> str:
    """Drop characters XML 1.0 cannot carry; show bidirectional controls as escapes."""
    return "".join(
        ch
        for ch in visible_controls(text)
        if ch in "\t\n\r" or 0x20 <= ord(ch) <= 0xD7FF or 0xE000 <= ord(ch) <= 0x10FFFF
    )


def _seconds(ms: float) -> str:
    return f"{ms / 1000.0:.3f}"


def _said(r: CaseResult) -> str:
    """What the judge decided, as a person reads it."""
    return said(r)


def said(r: CaseResult) -> str:
    """What the judge decided, as a person reads it (a loop it ended says how)."""
    if r.forced_stop or r.outcome == "forced":
        return "block (the stop was forced through by maxRejections)"
    if r.outcome == "impossible":
        return "block (impossible: the work cannot be finished without the user)"
    if r.outcome == "stalled":
        return "block (stalled: the same answer rejected for the same reason again)"
    return str(r.decision)


def build_junit(results: list[CaseResult], name: str) -> ET.Element:
    """The ``<testsuites>`` element for ``results`` (grouped by case id, in order)."""
    by_case: dict[str, list[CaseResult]] = {}
    for r in results:
        by_case.setdefault(r.id, []).append(r)
    suite_name = _clean(name or "judge-eval")
    root = ET.Element("testsuites", name=suite_name)
    suite = ET.SubElement(root, "testsuite", name=suite_name)
    failures = errors = 0
    total_ms = 0.0
    for case_id, runs in by_case.items():
        ms = sum(r.duration_ms for r in runs)
        total_ms += ms
        case = ET.SubElement(suite, "testcase", name=_clean(case_id), classname=_clean(suite_name))
        case.set("time", _seconds(ms))
        label = runs[0].label
        errored = [r for r in runs if r.error is not None]
        expected = label or "allow"  # unlabelled cases fail when the judge blocks
        wrong = [r for r in runs if r.verdict != expected]  # a forced stop is a block
        if errored:
            errors += 1
            first = errored[0]
            node = ET.SubElement(case, "error", type="JudgeError", message=_clean(first.error or "")[:500])
            node.text = _clean("\n".join(f"repeat {r.repeat}: {r.error}" for r in errored))
        elif wrong:
            failures += 1
            first = wrong[0]
            message = f"expected {label}, judge said {_said(first)}" if label else "judge blocked"
            if first.reason:
                message += f": {first.reason}"
            node = ET.SubElement(case, "failure", type="Disagreement" if label else "Blocked")
            node.set("message", _clean(message)[:500])
            node.text = _clean("\n".join(f"repeat {r.repeat}: {_said(r)}: {r.reason or ''}" for r in wrong))
        reasons = [f"repeat {r.repeat}: {_said(r)}: {r.reason}" for r in runs if r.reason]
        if reasons:
            ET.SubElement(case, "system-out").text = _clean("\n".join(reasons))
    for element in (root, suite):
        element.set("tests", str(len(by_case)))
        element.set("failures", str(failures))
        element.set("errors", str(errors))
        element.set("skipped", "0")
        element.set("time", _seconds(total_ms))
    return root


def write_junit(results: list[CaseResult], path: str | Path, name: str) -> None:
    """Write ``junit.xml``."""
    tree = ET.ElementTree(build_junit(results, name))
    ET.indent(tree)
    tree.write(Path(path), encoding="utf-8", xml_declaration=True)
