"""Shared fixtures."""

from __future__ import annotations

import os
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
