"""A store without room: told apart from a failure, probed until it can write again."""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

from scrapy.exceptions import DropItem

#: Errors that mean "no room", not "bad page": a full disk, a user's quota.
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_PROBE_BYTES = 1024 * 1024  # a probe writes this much: room for a few pages, not one byte


def is_no_space(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) says the store has no room."""
    while error is not None:
        if isinstance(error, OSError) and error.errno in NO_SPACE_ERRNOS:
            return True
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    return False


def is_sqlite_full(error: sqlite3.Error) -> bool:
    """Whether SQLite failed for lack of room ("database or disk is full"): the
    transaction it was writing is rolled back, nothing else is wrong."""
    return getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL  # set by sqlite3 itself


class StoreFull(DropItem):
    """A page not stored because its store has no room: not a failure of its URL, which is
    queued again, its attempts not spent. Dropped at DEBUG: the store says it once."""

    def __init__(self, message: str) -> None:
        super().__init__(message, log_level="DEBUG")


def free_bytes(directory: Path) -> int | None:
    """Free bytes for an unprivileged writer on the filesystem of ``directory``, if known."""
    try:
        return shutil.disk_usage(directory).free
    except OSError:
        return None


def can_write(directory: Path, size: int = _PROBE_BYTES) -> bool:
    """Whether ``size`` bytes can be written and fsync'd in ``directory`` now (a quota or a
    reserve for root is only seen by writing); the probe file is removed."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".space-probe-") as probe:
            probe.write(b"\0" * size)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError:
        return False
    return True
