"""Ending the resident judges a test started (``judge claude-code --resident``), whether or
not they still listen on their socket."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from tests.security.sandbox_probe import pids_with


def stop_residents(folder: Path | str) -> None:
    """End the resident judges (and their workers) serving ``folder``: every process whose
    command line is ``... claude-code resident FOLDER KEY``; SIGKILL for any left after 10 s."""
    marker = f"claude-code resident {folder} "
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        pids = pids_with(marker)
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline:
            time.sleep(0.05)
            pids = pids_with(marker)
        if not pids:
            return
