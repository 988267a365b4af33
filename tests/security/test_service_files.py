"""`judge serve` and files: nothing of a private transcript outlives its request, and
`execution_summary` never reads outside `--transcripts-dir`, even when a folder is
swapped for a symlink while the request runs."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.config import config_from_data
from judge.errors import ApiError
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.service.app import ServerSettings, create_app
from judge.service.files import confine_path, open_confined
from judge.transcripts import formats, prepared
from tests.security.test_hostile_inputs import _call

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """The service's temporary files (private folders, render cache) go here, so the test
    can look at every one of them."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _app(tmp_path, judge, timeout=30, transcripts_dir=None):
    hook = {"type": "prompt", "prompt": "ok? $ARGUMENTS", "timeout": timeout}
    config = config_from_data({"hooks": {"Stop": [hook]}})
    settings = ServerSettings(config=config, data_dir=tmp_path / "data", transcripts_dir=transcripts_dir)
    return create_app(settings, judge=judge)


def _files_containing(folder: Path, marker: str) -> list[Path]:
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and marker in path.read_text(encoding="utf-8", errors="replace"):
            found.append(path)
    return found


class LateRender:
    """A judge whose rendering of the transcript starts in time and finishes after the
    hook timed out (the renderer pauses after its first line until ``release``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.release = threading.Event()
        self.done = threading.Event()
        original = formats.render_lines

        def paused(source: Path, fmt: formats.Format | None = None) -> Iterator[str]:
            for index, line in enumerate(original(source, fmt)):
                if index == 1:
                    self.release.wait(30)
                yield line

        monkeypatch.setattr(prepared, "render_lines", paused)

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        path = request.transcript_path

        def render() -> None:
            try:
                assert path is not None
                prepared.prepare_transcript(path)
            except OSError:
                pass  # the private folder is gone: the late render has nowhere to write
            finally:
                self.done.set()

        await asyncio.to_thread(render)
        return PromptVerdict(ok=True)


async def test_a_late_render_of_an_inline_transcript_leaves_no_copy(tmp_path, private_tmp, monkeypatch):
    secret = f"secret-{uuid.uuid4()}"
    judge = LateRender(monkeypatch)
    app = _app(tmp_path, judge, timeout=1)
    transcript = "\n".join(json.dumps({"role": "user", "content": f"{secret} {i}"}) for i in range(200))
    body = {"final_output": "done", "transcript": transcript}
    status, decision = await _call(app, "POST", "/api/v2/hooks/Stop", json.dumps(body).encode())
    assert status == 200 and "timed out" in decision["hooks"][0]["error"]
    judge.release.set()  # the render thread finishes now, after the request answered
    assert await asyncio.to_thread(judge.done.wait, 30)
    assert _files_containing(private_tmp, secret) == []
    assert not list(private_tmp.glob("judge-private-*"))


class Stuck:
    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        self.started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def test_a_cancelled_request_removes_its_private_transcript(tmp_path, private_tmp):
    judge = Stuck()
    app = _app(tmp_path, judge)
    body = json.dumps({"final_output": "done", "transcript": "user: a private plan"}).encode()
    task = asyncio.create_task(_call(app, "POST", "/api/v2/hooks/Stop", body))
    await asyncio.wait_for(judge.started.wait(), 20)
    assert list(private_tmp.glob("judge-private-*/*"))  # the transcript is on disk now
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not list(private_tmp.glob("judge-private-*"))


class SwapThenRead:
    """A judge that swaps the checked folder for a symlink to outside, then reads the
    transcript path it was given (what a model's ReadFile call would do)."""

    def __init__(self, folder: Path, outside: Path) -> None:
        self.folder = folder
        self.outside = outside
        self.read: list[str] = []

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        self.folder.rename(self.folder.with_name("moved"))
        self.folder.symlink_to(self.outside, target_is_directory=True)
        assert request.transcript_path is not None
        self.read.append(Path(request.transcript_path).read_text(encoding="utf-8"))
        return PromptVerdict(ok=True)


def _transcripts(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "transcripts"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "t.txt").write_text("user: the real transcript\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "t.txt").write_text("SECRET outside the transcripts dir\n", encoding="utf-8")
    return root, outside


async def test_swapping_a_folder_for_a_symlink_mid_request_reads_nothing_outside(tmp_path, private_tmp):
    root, outside = _transcripts(tmp_path)
    judge = SwapThenRead(root / "sub", outside)
    app = _app(tmp_path, judge, transcripts_dir=root)
    body = json.dumps({"final_output": "done", "execution_summary": "sub/t.txt"}).encode()
    status, decision = await _call(app, "POST", "/api/v2/hooks/Stop", body)
    assert status == 200, decision
    assert (root / "sub").is_symlink()  # the swap happened while the request ran
    assert judge.read == ["user: the real transcript\n"]
    assert not list(private_tmp.glob("judge-private-*"))


def test_a_swap_between_the_check_and_the_open_is_refused(tmp_path):
    root, outside = _transcripts(tmp_path)
    resolved = Path(confine_path("sub/t.txt", root.resolve()))
    (root / "sub").rename(root / "moved")
    (root / "sub").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ApiError, match="symlink") as caught:
        open_confined(resolved, root.resolve())
    assert caught.value.status == 400


def test_a_file_swapped_for_a_fifo_is_refused_without_blocking(tmp_path):
    root, _ = _transcripts(tmp_path)
    resolved = Path(confine_path("sub/t.txt", root.resolve()))
    (root / "sub" / "t.txt").unlink()
    os.mkfifo(root / "sub" / "t.txt")
    with pytest.raises(ApiError, match="not a regular file"):
        open_confined(resolved, root.resolve())


def test_private_folders_left_by_a_killed_service_are_swept_at_start(tmp_path, private_tmp):
    stale = private_tmp / "judge-private-stale"
    fresh = private_tmp / "judge-private-fresh"
    for folder in (stale, fresh):
        folder.mkdir(mode=0o700)
        (folder / "transcript.txt").write_text("user: a private plan\n")
    day_ago = stale.stat().st_mtime - 2 * 24 * 3600
    os.utime(stale, (day_ago, day_ago))
    _app(tmp_path, Stuck())
    assert not stale.exists() and (fresh / "transcript.txt").exists()
