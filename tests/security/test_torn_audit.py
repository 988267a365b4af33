"""A writer killed with SIGKILL in the middle of a large audit record.

The torn record is lost, but the next writer starts on a new line (its record used to
be glued onto the torn one, losing both) and readers skip the torn line with a warning.
The writer is a real process, killed for real while its multi-MB write is under way.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from judge.logs import jsonl
from judge.logs.audit import AUDIT_LOG, AuditLog
from judge.logs.jsonl import append_jsonl, read_jsonl

RECORD_BYTES = 64 << 20

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from judge.logs.jsonl import append_jsonl
    record = {"tool_result": "x" * int(sys.argv[2])}
    print("ready", flush=True)
    append_jsonl(Path(sys.argv[1]), record)
    print("done", flush=True)
    """
)


def _kill_mid_append(path: Path, before: int) -> bool:
    """Run a writer of one big record and SIGKILL it once the file has grown past
    ``before`` bytes; True when the write was cut (the file does not end in a newline)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(RECORD_BYTES)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    try:
        while True:  # the record is being copied in: the size grows until the write ends
            size = path.stat().st_size if path.exists() else 0
            if size > before or proc.poll() is not None:
                break
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
        proc.stdout.close()
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) != b"\n"


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_killed_writer_costs_only_its_own_record(tmp_path, caplog):
    path = tmp_path / AUDIT_LOG
    append_jsonl(path, {"n": 1})
    before = path.stat().st_size
    for _ in range(20):  # almost always the first try: a 64 MB write takes a while
        if _kill_mid_append(path, before):
            break
        path.write_bytes(path.read_bytes()[:before])  # the write finished first: again
    else:
        pytest.fail("could not kill the writer in the middle of its write")
    assert before < path.stat().st_size < before + RECORD_BYTES  # half a line is there

    append_jsonl(path, {"n": 2})
    append_jsonl(path, {"n": 3})
    with caplog.at_level(logging.WARNING, logger="judge.audit"):
        records = list(read_jsonl(path))
    assert records == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert "skipped a line that is not a JSON record" in caplog.text
    assert path.read_bytes().endswith(b'\n{"n": 2}\n{"n": 3}\n')


def test_readers_skip_a_torn_last_line_and_the_writer_starts_a_new_line(tmp_path, caplog):
    log = AuditLog(tmp_path)
    path = tmp_path / AUDIT_LOG
    path.write_bytes(b'{"n": 1}\n{"n": 2, "tool_res')  # what a crash leaves
    with caplog.at_level(logging.WARNING, logger="judge.audit"):
        assert list(log.tool_calls()) == [{"n": 1}]
    assert ":2: skipped a line" in caplog.text
    append_jsonl(path, {"n": 3})
    assert list(log.tool_calls()) == [{"n": 1}, {"n": 3}]
    assert path.read_text().splitlines()[-1] == json.dumps({"n": 3})
    assert list(log.session_summaries()) == []  # no file yet: no records


def test_a_line_over_the_record_limit_is_skipped_with_a_warning(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(jsonl, "MAX_RECORD_BYTES", 1000)
    path = tmp_path / AUDIT_LOG
    huge = b'{"n": 2, "x": "' + b"a" * 5_000_000 + b'"}\n'  # read in bounded pieces, not whole
    path.write_bytes(b'{"n": 1}\n' + huge + b'{"n": 3}\n' + b"b" * 3000)
    with caplog.at_level(logging.WARNING, logger="judge.audit"):
        assert list(read_jsonl(path)) == [{"n": 1}, {"n": 3}]
    assert f":2: skipped a line of {len(huge)} bytes" in caplog.text
    assert ":4: skipped a line of 3000 bytes" in caplog.text  # the last one has no newline
