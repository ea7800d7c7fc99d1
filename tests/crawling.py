"""Run `scrapy crawl web` in a subprocess (its own reactor) against the test web."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from testweb import TestWeb

from crawler.store.files import LocalStore, iter_records

REPO = Path(__file__).resolve().parent.parent
_STAT = re.compile(r"'([^']+)': (\d+)[,}]")


@dataclass
class CrawlResult:
    returncode: int
    log: str
    store: LocalStore

    @property
    def stats(self) -> dict[str, int]:
        """Integer stats from the end-of-crawl stats dump in the log."""
        dump = self.log.rpartition("Dumping Scrapy stats:")[2]
        return {k: int(v) for k, v in _STAT.findall(dump)}

    @property
    def records(self) -> list[dict]:
        return list(iter_records(self.store))


def crawl_command(
    web: TestWeb, tmp_path: Path, *spider_args: str, **settings: object
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of a crawl storing under ``tmp_path``."""
    base = {
        "STORE_URI": str(tmp_path / "store"),
        "FRONTIER_DIR": str(tmp_path / "state"),
        "POLITENESS_MIN_DELAY": 0,
        "POLITENESS_DELAY_FACTOR": 0,
        "TWISTED_DNS_RESOLVER": "testweb.LoopbackResolver",
        "LOG_LEVEL": "INFO",
        # One more fetch per host: the tests that count fetches leave the probe out;
        # tests/test_traps_crawl.py turns it on.
        "TRAP_SOFT_404_PROBE": False,
    }
    base.update(settings)
    command = [sys.executable, "-m", "scrapy", "crawl", "web"]
    for arg in spider_args:
        command += ["-a", arg]
    for name, value in base.items():
        command += ["-s", f"{name}={value}"]
    env = web.subprocess_env()
    env["SCRAPY_SETTINGS_MODULE"] = "crawler.settings"
    env["PYTHONPATH"] = f"{REPO}:{env['PYTHONPATH']}"
    return command, env


def run_crawl(
    web: TestWeb, tmp_path: Path, *spider_args: str, timeout: float = 120, **settings: object
) -> CrawlResult:
    """Run a crawl to its end; the log is stdout and stderr together."""
    command, env = crawl_command(web, tmp_path, *spider_args, **settings)
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    return CrawlResult(done.returncode, done.stdout + done.stderr, LocalStore(tmp_path / "store"))


@contextlib.contextmanager
def reaped(processes: list[subprocess.Popen]) -> Iterator[list[subprocess.Popen]]:
    """``processes``, each killed on the way out if still running (a test that failed
    halfway leaves no worker behind)."""
    try:
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
