"""``scrapy crawls``: the crawls there are, in ``DATA_DIR`` (or in Redis with ``REDIS_URL``)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand

from crawler.commands import check_command_settings, check_redis, lock_holder
from crawler.context.connection import redis_clients, uses_redis
from crawler.frontier.backends.embedded.store import read_counts
from crawler.frontier.backends.redis.opening import open_redis_frontier
from crawler.paths import data_path

if TYPE_CHECKING:
    import argparse

    from redis import Redis, RedisCluster

HEADER = ("CRAWL", "STATE", "PAGES", "QUEUED", "LAST ACTIVITY")


def iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def crawl_state(counts: dict[str, int], running: bool) -> str:
    """running, finished (nothing queued, leased or waiting for a retry) or stopped (the
    same command resumes it)."""
    if running:
        return "running"
    left = counts.get("queued", 0) + counts.get("leased", 0) + counts.get("waiting", 0)
    return "stopped" if left else "finished"


def embedded_crawls(frontier_dir: Path) -> list[tuple[str, ...]]:
    """One row per crawl state under ``frontier_dir``, the most recent first."""
    rows = []
    for state in frontier_dir.glob("*/frontier.sqlite"):
        counts = read_counts(state)
        holder = lock_holder(state)
        active = max(p.stat().st_mtime for p in state.parent.glob("frontier.sqlite*"))
        rows.append((active, state.parent.name, crawl_state(counts, holder is not None),
                     str(counts.get("stored", counts["done"])), str(counts["queued"]),
                     iso(active) + (f" ({holder})" if holder else "")))
    return [row[1:] for row in sorted(rows, reverse=True)]


def redis_crawls(clients: list[Redis] | list[RedisCluster]) -> list[tuple[str, ...]]:
    """One row per crawl in Redis (keys ``crawl:{<id>}:...``); running: a worker beat
    within the last minute."""
    ids = set()
    for client in clients:
        for key in client.scan_iter(match="crawl:{*}:counters", count=1000):
            ids.add(key.decode().partition("{")[2].rpartition("}")[0])
    rows: list[tuple[float, str, str, str, str, str]] = []
    now = time.time()
    for crawl_id in ids:
        frontier = open_redis_frontier(clients, crawl_id)
        counts = {**frontier.counters, **frontier.gauges(now)}
        beats: list[float] = []
        for client in clients:
            newest = client.zrange(f"crawl:{{{crawl_id}}}:workers", -1, -1, withscores=True)
            beats += [float(entry[1]) for entry in newest]  # (worker id, last beat)
        last = max(beats, default=0.0)
        rows.append((last, crawl_id, crawl_state(counts, now - last < 60),
                     str(counts.get("stored", 0)), str(counts.get("queued", 0)), iso(last) if last else "-"))
    return [row[1:] for row in sorted(rows, reverse=True)]


class Command(ScrapyCommand):
    """Lists the crawls there are: each one's state (running, with the process that runs
    it; stopped, which its command resumes; finished), pages stored, URLs queued and last
    activity. Embedded crawls are read from ``FRONTIER_DIR`` under ``DATA_DIR``; with
    ``REDIS_URL``, the crawls in Redis. A crawl run with ``JOBDIR`` is kept there instead:
    ``scrapy crawlstats`` reads it with the same ``-s JOBDIR``."""

    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[options]"

    def short_desc(self) -> str:
        return "List the crawls (state, pages, queued, last activity)"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        settings = self.settings
        assert settings is not None
        check_command_settings(settings)
        if uses_redis(settings):
            check_redis(settings)
            where = settings.get("REDIS_URL") or "Redis"
            rows = redis_crawls(redis_clients(settings))
        else:
            frontier_dir = Path(data_path(settings, "FRONTIER_DIR")).resolve()
            where = str(frontier_dir)
            rows = embedded_crawls(frontier_dir)
        if not rows:
            print(f"no crawls in {where}", file=sys.stderr)
            return
        widths = [max(len(row[i]) for row in [HEADER, *rows]) for i in range(len(HEADER) - 1)]
        for row in [HEADER, *rows]:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
                  + "  " + row[-1])
