"""Ending the resident judges a test started (``judge claude-code --resident``), whether or
not they still listen on their socket."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def stop_residents(folder: Path | str) -> None:
    """End the resident judges (and their workers) serving ``folder``: every process whose
    command line is ``... claude-code resident FOLDER ...``; SIGKILL for any left after 10 s."""
    target = str(folder)

    def serving() -> list[int]:
        pids = []
        for entry in Path("/proc").iterdir():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            words = [a.decode(errors="replace") for a in argv]
            if "resident" in words and target in words and entry.name.isdigit():
                pids.append(int(entry.name))
        return pids

    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        pids = serving()
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline:
            time.sleep(0.05)
            pids = serving()
        if not pids:
            return
