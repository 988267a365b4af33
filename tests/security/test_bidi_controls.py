"""Unicode bidirectional controls (U+202E RIGHT-TO-LEFT OVERRIDE and its kin) in case ids,
answers and reasons are shown as escapes in junit.xml, report.html and `judge logs`, never
written raw, where they would make a reader see text in another order than it is stored.
`judge eval` and `judge logs` run for real."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from judge.redact import BIDI_CONTROLS, visible_controls
from tests.service.test_service import REPO

RLO, LRI, PDI = "\u202e", "\u2066", "\u2069"
#: A reason a judge may quote from an agent: read raw, "kcolb" would display as "block".
REASON = f"tests fail {RLO}kcolb{PDI} {LRI}x{PDI}"


def _judge(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "judge", *args], capture_output=True, text=True, timeout=120, cwd=REPO
    )


def test_eval_reports_show_bidi_controls_as_escapes(tmp_path: Path) -> None:
    config = {
        "hooks": {"Stop": [{"type": "prompt", "prompt": "ok? $ARGUMENTS", "model": f"fake:block:{REASON}"}]}
    }
    (tmp_path / "agent.json").write_text(json.dumps(config))
    cases = [
        {"id": f"case-{RLO}1-esac", "context": {"final_output": f"done {RLO}enod"}, "label": "allow"},
        {"id": "plain", "context": {"final_output": "done"}, "label": "block"},
    ]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "suite.yaml").write_text("name: bidi\nconfig: agent.json\nevent: Stop\ncases: cases.jsonl\n")
    out = tmp_path / "out"
    done = _judge("eval", str(tmp_path / "suite.yaml"), "--out", str(out), "--quiet", "--no-cache")
    assert done.returncode in (0, 1), done.stderr
    for name in ("junit.xml", "report.html"):
        text = (out / name).read_text(encoding="utf-8")
        assert not BIDI_CONTROLS.search(text), name
        assert "case-\\u202e1-esac" in text, name
        assert "kcolb\\u2069" in text, name
    # the stored results keep what was said, exactly
    stored = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert any(r.get("id") == f"case-{RLO}1-esac" for r in stored)


def test_judge_logs_prints_bidi_controls_as_json_escapes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    record = {"ts": "2026-01-01T00:00:00Z", "session_id": f"s{RLO}1", "reason": REASON}
    (data / "audit_log.jsonl").write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    done = _judge("logs", "audit", "--data-dir", str(data))
    assert done.returncode == 0, done.stderr
    assert not BIDI_CONTROLS.search(done.stdout)
    [line] = done.stdout.splitlines()
    assert json.loads(line) == record  # the same record once parsed


def test_visible_controls_touches_nothing_else() -> None:
    text = "naïve – ok ✓ עברית العربية"
    assert visible_controls(text) == text
    assert re.fullmatch(r"a\\u202eb\\u200fc", visible_controls(f"a{RLO}b\u200fc"))
