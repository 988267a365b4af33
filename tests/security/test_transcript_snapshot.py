"""The service's private snapshot of an `execution_summary` file is bounded: a file over
`--max-transcript-bytes` is refused before anything is copied, a sparse file costs what it
holds (not what it claims), and a copy stops at the hooks' deadline."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from judge.errors import ApiError
from judge.service.files import SnapshotTooSlow, snapshot_confined
from tests.security.serve import LimitedService

pytestmark = pytest.mark.timeout(120)


def _sparse(path: Path, size: int, data: bytes = b"") -> Path:
    with path.open("wb") as handle:
        handle.write(data)
        handle.truncate(size)
    return path


def _used_bytes(folder: Path) -> int:
    """Disk space taken by the files under ``folder`` (allocated blocks, not sizes)."""
    return sum(p.lstat().st_blocks * 512 for p in folder.rglob("*") if p.is_file())


def test_stops_naming_a_huge_sparse_file_are_refused_at_once_and_fill_nothing(tmp_path: Path) -> None:
    transcripts, temp = tmp_path / "transcripts", tmp_path / "tmp"
    transcripts.mkdir()
    temp.mkdir()
    _sparse(transcripts / "huge.jsonl", 4 << 30)  # 4 GiB that take no disk space
    config = tmp_path / "judge.yaml"
    config.write_text(
        "hooks:\n  Stop:\n    - type: prompt\n      model: fake:allow\n      timeout: 10\n"
        "      prompt: 'ok? $ARGUMENTS'\n"
    )
    args = ["--data-dir", str(tmp_path / "d"), "--transcripts-dir", str(transcripts), "--config", str(config)]
    service = LimitedService(tmp_path, args, env_extra={"TMPDIR": str(temp)}).start()
    answers: list[tuple[int, object]] = []
    peak = [0]

    def stop() -> None:
        body = {"final_output": "done", "execution_summary": "huge.jsonl"}
        answers.append(service.request("POST", "/api/v2/hooks/Stop", body))

    try:
        began = time.monotonic()
        stops = [threading.Thread(target=stop) for _ in range(3)]
        for thread in stops:
            thread.start()
        while any(t.is_alive() for t in stops):
            peak[0] = max(peak[0], _used_bytes(temp))
            time.sleep(0.05)
        elapsed = time.monotonic() - began
        assert [status for status, _ in answers] == [413, 413, 413], answers
        assert "--max-transcript-bytes" in str(answers[0][1])
        assert elapsed < 10, elapsed  # (the copies used to take ~75 s against a 10 s timeout)
        assert peak[0] < 1 << 20, peak[0]
    finally:
        service.stop()


def test_a_sparse_file_under_the_limit_costs_only_its_data(tmp_path: Path) -> None:
    root, folder = tmp_path / "root", tmp_path / "private"
    root.mkdir()
    folder.mkdir()
    source = _sparse(root / "t.jsonl", 200 << 20, b'{"type": "user"}\n' * 10)
    with source.open("r+b") as handle:  # data at the end too, after a 200 MB hole
        handle.seek((200 << 20) - 5)
        handle.write(b"tail\n")
    copy = snapshot_confined(source, root, folder, max_bytes=256 << 20)
    assert copy.stat().st_size == source.stat().st_size
    assert copy.stat().st_blocks * 512 < 1 << 20
    with copy.open("rb") as mine, source.open("rb") as theirs:
        assert mine.read(170) == theirs.read(170)
        mine.seek(-5, os.SEEK_END)
        assert mine.read() == b"tail\n"


def test_a_file_over_the_limit_is_refused_before_anything_is_copied(tmp_path: Path) -> None:
    root, folder = tmp_path / "root", tmp_path / "private"
    root.mkdir()
    folder.mkdir()
    (root / "t.txt").write_bytes(b"x" * 2000)
    with pytest.raises(ApiError) as refused:
        snapshot_confined(root / "t.txt", root, folder, max_bytes=1000)
    assert refused.value.status == 413 and "2000 bytes" in str(refused.value)
    assert list(folder.iterdir()) == []


def test_a_copy_stops_at_the_hooks_deadline(tmp_path: Path) -> None:
    root, folder = tmp_path / "root", tmp_path / "private"
    root.mkdir()
    folder.mkdir()
    (root / "t.txt").write_bytes(b"x" * (8 << 20))
    with pytest.raises(SnapshotTooSlow, match="not copied within the hooks' timeout"):
        snapshot_confined(root / "t.txt", root, folder, deadline=time.monotonic() - 1)
