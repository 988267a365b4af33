"""The live view: the decision log, its summary, and `GET /ui` rendered in a real headless Chromium."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from judge.logs import decisions as decision_log
from judge.logs.decisions import DECISIONS_LOG, append_decision, read_recent, summarize
from tests.service.test_service import Service

CONFIG = """hooks:
  Stop:
    - type: prompt
      model: "fake:block:<img src=x onerror=alert(1)> tests are missing"
      prompt: "Is it done? $ARGUMENTS"
      maxRejections: 2
  PreToolUse:
    - type: command
      matcher: Bash
      command: 'exit 1'
"""


def rec(ts: str, decision: str = "allow", reason: str | None = None, **extra: Any) -> dict[str, Any]:
    hooks = extra.pop("hooks", [{"hook": "agent[0]", "type": "prompt", "decision": decision, "error": None}])
    return {"ts": ts, "event": "Stop", "agent": None, "session": "s", "decision": decision,
            "forcedStop": False, "reason": reason, "ms": 1.0, "hooks": hooks, **extra}  # fmt: skip


def test_summary_rates_reasons_forced_stops_and_timeline() -> None:
    now = datetime(2026, 11, 30, 12, 0, 30, tzinfo=UTC)
    records = [
        rec("2026-11-30T11:58:10.000Z", "block", "tests missing\nmore"),
        rec("2026-11-30T11:58:40.000Z", "block", "tests missing"),
        rec("2026-11-30T11:59:00.000Z", "block", "docs missing"),
        rec("2026-11-30T12:00:01.000Z", "allow", "unresolved", forcedStop=True),
        rec(
            "2026-11-30T12:00:02.000Z",
            "allow",
            hooks=[{"hook": "agent[0]", "type": "prompt", "decision": "allow", "error": "timeout"}],
        ),
        rec("2026-11-30T09:00:00.000Z", "allow"),  # outside the last hour
    ]
    s = summarize(records, now)
    assert (s["decisions"], s["blocks"], s["forcedStops"]) == (6, 3, 1)
    [hook] = s["hooks"]
    assert (hook["total"], hook["blockRate"], hook["errorRate"]) == (6, 0.5, round(1 / 6, 4))
    assert s["topReasons"] == [
        {"reason": "tests missing", "count": 2},
        {"reason": "docs missing", "count": 1},
    ]
    assert [r["ts"] for r in s["recent"]][:2] == ["2026-11-30T09:00:00.000Z", "2026-11-30T12:00:02.000Z"]
    assert s["recentForcedStops"][0]["reason"] == "unresolved"
    assert s["outcomes"] == {}  # (records written before Stops had outcomes)
    later = summarize([*records, rec("2026-11-30T12:00:03.000Z", outcome="stalled")], now)
    assert later["outcomes"] == {"stalled": 1}
    minutes = {p["minute"]: p for p in s["timeline"]}
    assert len(minutes) == 60
    assert minutes["2026-11-30T11:58:00Z"] == {
        "minute": "2026-11-30T11:58:00Z",
        "decisions": 2,
        "blocks": 2,
        "errors": 0,
    }
    assert minutes["2026-11-30T12:00:00Z"]["errors"] == 1


def test_the_log_is_read_from_its_tail_and_rotates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(100):
        append_decision(tmp_path, rec(f"2026-11-30T12:00:{i % 60:02d}.000Z", reason="x" * 50))
    (tmp_path / DECISIONS_LOG).open("a").write("{not json\n")
    assert (tmp_path / DECISIONS_LOG).stat().st_mode & 0o777 == 0o600
    assert len(read_recent(tmp_path)) == 100  # the bad line is skipped
    tail = read_recent(tmp_path, tail_bytes=1000)
    assert 0 < len(tail) < 10 and all(r["reason"] == "x" * 50 for r in tail)  # no half line
    monkeypatch.setattr(decision_log, "ROTATE_BYTES", 2000)
    append_decision(tmp_path, rec("2026-11-30T12:01:00.000Z", reason="after"))
    assert (tmp_path / (DECISIONS_LOG + ".1")).exists()
    assert [r["reason"] for r in read_recent(tmp_path)] == ["after"]


def _write_many(folder: str, worker: int, count: int) -> None:
    decision_log.ROTATE_BYTES = 16 * 1024  # (in the child process)
    for i in range(count):
        append_decision(Path(folder), {"w": worker, "i": i, "reason": "r" * 200})


def test_concurrent_writers_rotate_once_per_full_file_and_keep_record_numbers(tmp_path: Path) -> None:
    # a writer that waited for the lock on a file another one just rotated must not rotate
    # again (that replaced the full .1 with a one-line file) nor fail to find the file
    import multiprocessing

    context = multiprocessing.get_context("fork")
    writers = [context.Process(target=_write_many, args=(str(tmp_path), w, 400)) for w in range(8)]
    for proc in writers:
        proc.start()
    for proc in writers:
        proc.join(60)
    assert [proc.exitcode for proc in writers] == [0] * 8
    rotated = tmp_path / (DECISIONS_LOG + ".1")
    assert rotated.stat().st_size > 16 * 1024 - 300  # a full file, not one just created
    kept = sum(1 for name in (rotated, tmp_path / DECISIONS_LOG) for _ in name.open("rb"))
    assert decision_log.records_before(tmp_path) + kept == 8 * 400  # every record numbered once


def test_record_numbers_survive_a_rotation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.cli import main

    monkeypatch.setattr(decision_log, "ROTATE_BYTES", 2000)
    for i in range(60):
        append_decision(tmp_path, {"n": i, "pad": "x" * 100})
    assert decision_log.records_before(tmp_path) > 0
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["logs", "decisions", "--data-dir", str(tmp_path), "--after", "50"]) == 0
    assert [json.loads(line)["n"] for line in buffer.getvalue().splitlines()] == list(range(50, 60))


def get(service: Service, path: str, token: str | None = None) -> tuple[int, str, str]:
    conn = http.client.HTTPConnection("127.0.0.1", service.port, timeout=30)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        resp = conn.getresponse()
        return resp.status, resp.getheader("content-type") or "", resp.read().decode()
    finally:
        conn.close()


def drive(service: Service) -> None:
    stop = {"session_id": "s1", "final_output": "done?"}
    post = "POST"
    assert service.request(post, "/api/v2/hooks/Stop", stop, token=TOKEN)[1]["decision"] == "block"
    again = {**stop, "final_output": "done now?"}  # (another answer: forced, not stalled)
    assert service.request(post, "/api/v2/hooks/Stop", again, token=TOKEN)[1]["forcedStop"] is True
    tool = {"tool_name": "Bash", "tool_input": {"command": "ls"}}
    assert service.request(post, "/api/v2/hooks/PreToolUse", tool, token=TOKEN)[1]["decision"] == "block"


TOKEN = "ui-test-token"


@pytest.fixture
def service(tmp_path: Path) -> Any:
    (tmp_path / "agent.yaml").write_text(CONFIG)
    args = ["--config", str(tmp_path / "agent.yaml"), "--data-dir", str(tmp_path / "data")]
    running = Service(tmp_path, args, env={"JUDGE_API_TOKEN": TOKEN}).start()
    try:
        yield running
    finally:
        assert running.stop() == 0


def test_the_page_is_public_and_its_data_needs_the_token(service: Service) -> None:
    drive(service)
    status, kind, html = get(service, "/ui")
    assert status == 200 and kind.startswith("text/html") and "live view of the gate" in html
    assert "tests are missing" not in html  # the page itself holds no data
    assert get(service, "/api/v2/ui/summary")[0] == 401
    status, _, body = get(service, "/api/v2/ui/summary", TOKEN)
    summary = json.loads(body)
    assert status == 200 and (summary["decisions"], summary["blocks"], summary["forcedStops"]) == (3, 2, 1)
    assert summary["outcomes"] == {"rejected": 1, "forced": 1}  # (a PreToolUse has none)
    assert {(h["event"], h["hook"], h["errorRate"]) for h in summary["hooks"]} == {
        ("Stop", "agent[0]", 0.0),
        ("PreToolUse", "agent[0]", 1.0),
    }


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--virtual-time-budget=5000",
]  # fmt: skip


def chromium(*args: str) -> str:
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True, text=True, timeout=90,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.slow
@pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is not installed (scripts/test-tools.sh installs Debian's chromium, as root)",
)
def test_a_real_browser_renders_the_live_view(service: Service, tmp_path: Path) -> None:
    drive(service)
    url = f"http://127.0.0.1:{service.port}/ui#token={TOKEN}"
    dom = chromium("--dump-dom", url)
    assert 'id="t-decisions">3<' in dom and 'id="t-forced">1<' in dom
    assert "tests are missing" in dom and "let through at maxRejections" in dom  # how the stops ended
    assert '<td class="forced">forced</td>' in dom and '<td class="block">rejected</td>' in dom
    assert "PreToolUse" in dom and "100.0%" in dom  # the failing PreToolUse hook's error rate
    assert dom.count('data-kind="blocks"') >= 1  # the timeline drew this minute's blocks
    # The judge's reason carried markup: it is shown as text, never made an element.
    assert "&lt;img src=x onerror=alert(1)&gt;" in dom and "<img" not in dom
    # Without the token the page asks for it and shows nothing.
    dom = chromium("--dump-dom", f"http://127.0.0.1:{service.port}/ui")
    assert "A token is needed." in dom and "tests are missing" not in dom
    shot = os.environ.get("JUDGE_UI_SCREENSHOT")  # set to refresh docs/ui.png
    if shot:
        chromium("--window-size=1200,1100", "--hide-scrollbars", f"--screenshot={shot}", url)


def test_record_numbers_survive_a_crash_mid_rotation_and_a_torn_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from judge.cli.logs import _from_files

    monkeypatch.setattr(decision_log, "ROTATE_BYTES", 2000)
    for i in range(40):
        append_decision(tmp_path, {"n": i, "pad": "x" * 100})
    with (tmp_path / (DECISIONS_LOG + ".1")).open("ab") as rotated:
        rotated.write(b"{torn\n")  # a line no reader counts

    def numbers() -> dict[int, int]:
        return {record["n"]: number for number, record in _from_files(tmp_path, "decisions")}

    before = numbers()
    real = os.replace

    def crash(src: Any, dst: Any) -> None:
        if str(dst).endswith(DECISIONS_LOG + ".1"):
            raise KeyboardInterrupt  # the process dies between the count and the move
        real(src, dst)

    monkeypatch.setattr(decision_log.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        for i in range(40, 60):
            append_decision(tmp_path, {"n": i, "pad": "x" * 100})
    monkeypatch.setattr(decision_log.os, "replace", real)
    assert numbers() == {**before, **{n: number for n, number in numbers().items() if n >= 40}}
    for i in range(60, 80):
        append_decision(tmp_path, {"n": i, "pad": "x" * 100})
    after = numbers()
    assert all(after[n] == before[n] for n in after if n in before)  # no number moved
    assert sorted(after.values()) == list(range(min(after.values()), max(after.values()) + 1))


def test_record_numbers_hold_in_a_copy_of_the_data_dir_and_with_an_older_base_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from judge.cli.logs import _from_files

    monkeypatch.setattr(decision_log, "ROTATE_BYTES", 2000)
    source = tmp_path / "data"
    source.mkdir()
    for i in range(60):
        append_decision(source, {"n": i, "pad": "x" * 100})
    copy = tmp_path / "restored"
    shutil.copytree(source, copy)  # a backup restored on another volume: new inodes

    def numbers(folder: Path) -> dict[int, int]:
        return {record["n"]: number for number, record in _from_files(folder, "decisions")}

    assert numbers(copy) == numbers(source)
    # an earlier version wrote the count alone
    (copy / (DECISIONS_LOG + ".base")).write_text(str(decision_log.records_before(source)))
    assert numbers(copy) == numbers(source)
