"""Running one crawl in a subprocess and reading its stats: shared by the crawl benchmarks."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

STATS_START = "Dumping Scrapy stats"
_STAT_RE = re.compile(r"'([^']+)':\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*[,}]")


@dataclass
class Run:
    """One finished crawl subprocess."""

    side: str
    cpu: float  # user + system seconds of the child
    wall: float  # seconds from spawn to exit
    stats: dict[str, float] = field(default_factory=dict)

    @property
    def pages(self) -> int:
        return int(self.stats.get("downloader/response_status_count/200", 0))

    @property
    def received(self) -> int:
        return int(self.stats.get("response_received_count", 0))

    @property
    def elapsed(self) -> float:
        return self.stats.get("elapsed_time_seconds", 0.0)

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.elapsed if self.elapsed > 0 else 0.0

    def cpu_per_page(self, startup: float = 0.0) -> float:
        return (self.cpu - startup) / self.pages if self.pages else float("nan")


class CrawlError(RuntimeError):
    """A crawl subprocess failed, timed out or logged no stats."""


def parse_stats(log: str) -> dict[str, float]:
    """Integer and float stats of the last 'Dumping Scrapy stats' block of a log."""
    start = log.rfind(STATS_START)
    if start < 0:
        return {}
    block = log[start:]
    end = block.find("}")
    block = block[: end + 1] if end >= 0 else block
    return {name: float(value) for name, value in _STAT_RE.findall(block)}


def run_process(
    cmd: Sequence[str], env: Mapping[str, str], cwd: Path, log_path: Path, timeout: float
) -> tuple[float, float, int]:
    """Run ``cmd`` with stdout + stderr to ``log_path``; (CPU s, wall s, exit code).

    CPU is the child's user + system time from ``os.wait4`` (its own rusage, not a
    delta of this process's children, so the server thread here never counts).
    """
    usage, wall, code = run_measured(cmd, env, cwd, log_path, timeout)
    return usage.ru_utime + usage.ru_stime, wall, code


def run_measured(
    cmd: Sequence[str], env: Mapping[str, str], cwd: Path, log_path: Path, timeout: float
) -> tuple[resource.struct_rusage, float, int]:
    """``run_process`` with the child's whole rusage (``ru_maxrss``: its peak RSS in KiB)."""
    with log_path.open("wb") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            list(cmd), cwd=cwd, env=dict(env), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if wall >= timeout:
        raise CrawlError(
            f"timed out after {timeout:.0f} s: {' '.join(cmd)}\nlast lines of its log:\n{log_tail(log_path)}"
        )
    return usage, wall, proc.returncode


def log_tail(log_path: Path, lines: int = 30) -> str:
    return "\n".join(log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def base_env() -> dict[str, str]:
    """This environment without proxies, Scrapy project selection or Python path."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
        and k not in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT", "PYTHONPATH")
    }
    env["PYTHONHASHSEED"] = "0"
    return env


def settings_args(settings: Mapping[str, str]) -> list[str]:
    return [arg for name, value in settings.items() for arg in ("-s", f"{name}={value}")]
