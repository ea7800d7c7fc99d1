"""What ``bench/soak.py`` samples from outside the crawl, every few seconds: each worker's
RSS, threads and descriptors (from /proc), Redis ``used_memory`` and its keys per family,
the server-side fetch count, and the log lines written."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import redis

# crawl:{soak}:content:x:1a2b -> content:x ; crawl:{soak}:q:host -> q
_FAMILY = re.compile(r"^crawl:\{[^}]*\}:([^:]+)(?::([a-z]+)\d*(?=:))?")


def family(key: str) -> str:
    """The family of a Redis key: its part after the crawl's tag, with the content index's
    sub-family (``content:x``, ``content:n``...)."""
    match = _FAMILY.match(key)
    if match is None:
        return key.split(":")[0]
    return f"{match[1]}:{match[2]}" if match[2] else match[1]


def process_figures(pid: int) -> tuple[float, int, int] | None:
    """(RSS MB, threads, open descriptors) of a live process; None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    if "VmRSS" not in fields:  # a zombie: killed, not yet waited for
        return None
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["Threads"]), fds


@dataclass
class Sample:
    at: float  # seconds since the soak began
    workers: dict[str, tuple[float, int, int]] = field(default_factory=dict)
    redis_memory: float | None = None  # MB
    families: Counter = field(default_factory=Counter)
    fetches: int = 0
    log_lines: dict[str, int] = field(default_factory=dict)
    state_mb: float | None = None  # the embedded crawl's databases, without their WAL files
    wal_mb: float | None = None  # their write-ahead logs (SQLite reuses them: bounded by checkpoints)


class Watcher:
    """Samples every ``every`` seconds in a thread until ``stop``."""

    def __init__(self, began: float, workers: dict, redis_url: str | None, web, logs: dict[str, Path],
                 state: Path, every: float = 5.0) -> None:
        self.began, self.workers, self.web, self.logs, self.every = began, workers, web, logs, every
        self.state = state
        self.redis = redis.Redis.from_url(redis_url, socket_timeout=2) if redis_url else None
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Watcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.samples.append(self.sample())
            except (OSError, ValueError, KeyError) as error:  # a process or file gone mid-sample
                print(f"sample skipped: {error!r}", file=sys.stderr)

    def sample(self) -> Sample:
        sample = Sample(time.time() - self.began, fetches=len(self.web.fetches))
        for name, process in list(self.workers.items()):
            figures = process_figures(process.pid) if process.poll() is None else None
            if figures is not None:
                sample.workers[name] = figures
        if self.redis is not None:
            try:
                sample.redis_memory = self.redis.info("memory")["used_memory"] / 2**20
                for key in self.redis.scan_iter(count=5000):
                    sample.families[family(key.decode())] += 1
            except redis.RedisError:  # frozen or restarting: a gap in the plot
                sample.redis_memory = None
        else:
            sample.state_mb = _size(self.state, wal=False) / 2**20
            sample.wal_mb = _size(self.state, wal=True) / 2**20
        sample.log_lines = {name: _lines(path) for name, path in self.logs.items()}
        return sample


def family_bytes(redis_url: str) -> Counter:
    """Bytes per key family (``MEMORY USAGE`` of every key): what each holds at the end."""
    client = redis.Redis.from_url(redis_url, socket_timeout=10)
    sizes: Counter = Counter()
    try:
        for key in client.scan_iter(count=5000):
            sizes[family(key.decode())] += client.memory_usage(key, samples=0) or 0
    finally:
        client.close()
    return sizes


def _size(folder: Path, wal: bool) -> int:
    """Bytes of the SQLite files under ``folder``: the databases, or with ``wal`` their
    -wal and -shm files (files that vanish while counted count 0)."""
    total = 0
    for path in folder.rglob("*.sqlite*"):
        if path.name.endswith(("-wal", "-shm")) == wal:
            with contextlib.suppress(OSError):
                total += path.stat().st_size
    return total


def _lines(path: Path) -> int:
    try:
        with path.open("rb") as log:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: log.read(1 << 20), b""))
    except OSError:
        return 0
