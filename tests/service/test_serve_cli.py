"""`judge serve` flag and config errors: a message and exit 1, never a traceback."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from judge.cli import main


def _serve(tmp_path: Path, *extra: str) -> list[str]:
    return ["serve", "--data-dir", str(tmp_path / "data"), *extra]


def test_invalid_config_is_reported_with_places(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("hooks:\n  Stop:\n    - type: prompt\n      timeout: 0\n")
    assert main(_serve(tmp_path, "--config", str(config))) == 1
    err = capsys.readouterr().err
    assert "hooks.Stop[0].prompt" in err and "hooks.Stop[0].timeout" in err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--transcripts-dir", "no-such-dir"], "--transcripts-dir"),
        (["--max-body", "0"], "--max-body"),
        (["--port", "70000"], "--port"),
        (["--workers", "0"], "--workers"),
        (["--config", "missing.yaml"], "file not found"),
    ],
)
def test_bad_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    assert main(_serve(tmp_path, *flags)) == 1
    assert message in capsys.readouterr().err


def test_port_in_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(_serve(tmp_path, "--port", str(port))) == 1
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_unreadable_state_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "state.sqlite3").write_bytes(b"this is not a database" * 100)
    assert main(_serve(tmp_path)) == 1
    err = capsys.readouterr().err
    assert f"cannot use the state database {data / 'state.sqlite3'}: file is not a database" in err


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10"])
def test_an_open_host_needs_a_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], host: str
) -> None:
    monkeypatch.delenv("JUDGE_API_TOKEN", raising=False)
    assert main(_serve(tmp_path, "--host", host, "--port", "0")) == 1
    err = capsys.readouterr().err
    assert f"refusing to listen on {host} without JUDGE_API_TOKEN" in err


def test_loopback_names_count_as_local() -> None:
    from judge.cli.serve import is_loopback

    assert all(is_loopback(h) for h in ("127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "example.com"))
