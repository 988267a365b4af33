"""Secrets through the parent: a command hook finds none of the judge's secrets or data.

The judge runs as a separate process whose environment holds the secret from exec (as
a real judge's does), started by a shell that stays its parent with the same
environment. The probe hook reads /proc/<pid>/environ of every ancestor and of every
process it can see, and the judge's state database and audit log; it reports what it
read. A variable the hook lists under ``env`` is found by the same probe (it works).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.logs.jsonl import append_jsonl
from judge.state import Store
from tests.security.sandbox_probe import (
    MODES,
    other_user_python,
    run_judge,
    skip_unless_mode,
    user_namespaces_work,
)

SECRET = "sk-judge-secret-4b1d"
PASSED = "named-and-passed-77"

PROBE = """#!/usr/bin/env python3
import json, os, sys
secret, passed, files = SECRET, PASSED, FILES
found, read = [], []
pid = os.getppid()
ancestors = []
while pid > 0 and pid not in ancestors:
    ancestors.append(pid)
    try:
        with open(f"/proc/{pid}/status") as f:
            pid = int(next(l for l in f if l.startswith("PPid:")).split()[1])
    except (OSError, StopIteration):
        break
others = [int(p) for p in os.listdir("/proc") if p.isdigit()]
for path in [f"/proc/{p}/environ" for p in ["self", *ancestors, *others]] + json.loads(files):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        continue
    read.append(path)
    for word in (secret, passed):
        if word.encode() in data:
            found.append(word)
print(json.dumps({"found": sorted(set(found)), "ancestors": len(ancestors), "read": len(read)}))
"""


@pytest.fixture
def judge_data() -> Iterator[list[str]]:
    """A state database and an audit log as the judge writes them (0600), holding the secret."""
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o755)  # the folder is open; the files' own modes must protect them
        store = Store(Path(folder) / "state" / "state.db")
        store.put_agent("leaky", {"note": SECRET})
        store.close()
        audit = Path(folder) / "audit.jsonl"
        append_jsonl(audit, {"reason": SECRET})
        yield [str(Path(folder) / "state" / "state.db"), str(audit)]


def probe_hook(files: list[str]) -> dict[str, object]:
    text = PROBE.replace("SECRET", repr(SECRET)).replace("PASSED", repr(PASSED))
    text = text.replace("FILES", repr(json.dumps(files)))
    return {"type": "command", "script": text, "env": ["JUDGE_TEST_PASSED"], "timeout": 20}


def probe(files: list[str], mode: str, python: list[str] | None = None) -> dict[str, object]:
    env = {"OPENAI_API_KEY": SECRET, "JUDGE_API_TOKEN": SECRET, "JUDGE_TEST_PASSED": PASSED}
    # A shell holding the secret stays the judge's parent, except where the sandbox does
    # not promise to hide ancestors: a judge without root and without namespaces.
    via_shell = mode.startswith("ns") or (python is None and os.geteuid() == 0)
    done = run_judge(probe_hook(files), mode, env, python=python, via_shell=via_shell)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["exit_code"] == 0, result
    report: dict[str, object] = json.loads(result["stdout"])
    return report


@pytest.mark.parametrize("mode", MODES)
def test_a_hook_reads_no_secret_from_its_ancestors_or_the_judges_files(
    mode: str, judge_data: list[str]
) -> None:
    skip_unless_mode(mode)
    # Without root the hook has its user's file access (not promised otherwise).
    report = probe(judge_data if os.geteuid() == 0 else [], mode)
    assert report["found"] == [PASSED]  # the probe works: it finds what was passed on purpose
    assert isinstance(report["ancestors"], int) and report["ancestors"] >= 1
    if os.geteuid() == 0:
        # As root the hook runs as nobody: 0600 files and root's processes stay closed.
        assert SECRET not in json.dumps(report)


@pytest.mark.slow
def test_without_root_the_judge_itself_is_unreadable_and_namespaces_hide_the_rest(
    judge_data: list[str],
) -> None:
    """The non-root path: the judge (and its shell) run as an ordinary user."""
    python = other_user_python()
    if python is None:
        pytest.skip("needs root, setpriv and a Python usable by another user to test the non-root path")
    for path in judge_data:
        os.chown(path, 4242, 4242)  # the judge's own files, still 0600
    # With namespaces the hook sees no process outside its own: nothing leaks. (Its
    # user's files stay readable to it: the sandbox does not promise that without root.)
    if user_namespaces_work(python):
        report = probe([], "ns", python=python)
        assert report["found"] == [PASSED]
    # Without them the judge is still non-dumpable: its environ is closed to the hook.
    env = {"OPENAI_API_KEY": SECRET, "JUDGE_TEST_PASSED": PASSED}
    done = run_judge(probe_hook([]), "no-ns", env, python=python, via_shell=False)
    result = json.loads(done.stdout)
    assert json.loads(result["stdout"])["found"] == [PASSED]
