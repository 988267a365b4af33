"""Shared fixtures."""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def hook_writable() -> Iterator[Path]:
    """A folder command hooks can write to whoever they run as (``nobody`` when the tests
    run as root: pytest's own temp folders are private to root)."""
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o777)
        yield Path(folder)


@pytest.fixture(autouse=True)
def _sigint_disposition_restored() -> Iterator[None]:
    """A test that runs `judge eval` in-process and interrupts it leaves SIGINT ignored
    (what the command does on its way out); child processes inherit an ignored signal, so
    it would make later Ctrl-C tests' children deaf. Put it back after each test."""
    before = signal.getsignal(signal.SIGINT)
    yield
    if signal.getsignal(signal.SIGINT) is not before and before is not None:
        signal.signal(signal.SIGINT, before)
