"""Run ``scrapy`` with a local store whose disk is full while a flag file exists: an
injected ENOSPC, for the machines where a test cannot mount a small tmpfs.

    python tests/full_disk.py FLAG_FILE [--sqlite] crawl web -a seeds=... -s ...

While ``FLAG_FILE`` exists, a write to a file the store opened writes half its bytes
and fails with ``ENOSPC`` (as a disk that fills halfway through a write does), the
store's free space reads 0 and a probe cannot write; with ``--sqlite`` too, every SQLite
commit (the frontier's state, the page index, the traps' state) is rolled back and fails
with SQLITE_FULL, as on a disk another program filled. Once it is removed, everything is
as it was.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import sys
from pathlib import Path
from typing import BinaryIO

from scrapy.cmdline import execute

from crawler.pipelines import space
from crawler.store.files import LocalStore


class FillingFile:
    """A file of the store whose writes fail while the disk is full; all else is the file's."""

    def __init__(self, file: BinaryIO, flag: Path) -> None:
        self._file = file
        self._flag = flag

    def write(self, data: bytes | memoryview) -> int:
        if self._flag.exists():
            self._file.write(bytes(data[: len(data) // 2]))
            self._file.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self._file.write(data)

    def __getattr__(self, name: str) -> object:
        return getattr(self._file, name)


def _full() -> sqlite3.OperationalError:
    error = sqlite3.OperationalError("database or disk is full")
    error.sqlite_errorcode = sqlite3.SQLITE_FULL
    return error


def filling_connection(flag: Path) -> type[sqlite3.Connection]:
    """SQLite connections whose writes find no room while ``flag`` exists."""

    class FillingConnection(sqlite3.Connection):
        def commit(self) -> None:
            if flag.exists() and self.in_transaction:
                self.rollback()  # as SQLite does when its commit finds no room
                raise _full()
            super().commit()

        def execute(self, sql: str, *args: object) -> sqlite3.Cursor:  # type: ignore[override]
            writes = sql.lstrip().split(None, 1)[0].upper() in ("INSERT", "UPDATE", "DELETE")
            if flag.exists() and writes and self.isolation_level is None:  # committed as it runs
                raise _full()
            return super().execute(sql, *args)  # type: ignore[arg-type]

    return FillingConnection


def main() -> None:
    flag = Path(sys.argv.pop(1))
    if sys.argv[1] == "--sqlite":
        del sys.argv[1]
        connect, factory = sqlite3.connect, filling_connection(flag)
        sqlite3.connect = lambda *args, **kwargs: connect(*args, factory=factory, **kwargs)  # type: ignore[assignment]
    open_append, can_write, free_bytes = LocalStore.open_append, space.can_write, space.free_bytes

    def filling_open_append(self: LocalStore, name: str) -> BinaryIO:
        return FillingFile(open_append(self, name), flag)  # type: ignore[return-value]

    LocalStore.open_append = filling_open_append  # type: ignore[method-assign]
    space.can_write = lambda directory, *args: not flag.exists() and can_write(directory, *args)
    space.free_bytes = lambda directory: 0 if flag.exists() else free_bytes(directory)
    sys.argv[0] = "scrapy"
    execute()


if __name__ == "__main__":
    main()
