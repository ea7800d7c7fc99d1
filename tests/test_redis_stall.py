"""A Redis that stops answering (SIGSTOP for 20 s, then SIGCONT) under a running worker."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import time
from collections import Counter

from crawling import crawl_command
from redis_server import RedisServer
from testweb import Site, TestWeb

from crawler.store.files import LocalStore, iter_records

STOPPED = 20.0
GAP = 0.1


def test_a_redis_stopped_for_20_s_stalls_no_download_and_loses_nothing(tmp_path):
    server = RedisServer(tmp_path).start()
    # Slow pages (0.5 to 2 s an answer), so that fetches are in flight when Redis stops.
    sites = [Site(f"s{i}.test", pages=6, latency=0.5 + 0.3 * i) for i in range(6)]
    ticks_file = tmp_path / "ticks.json"
    try:
        with TestWeb(sites) as web:
            seeds = [web.url(s.host) for s in sites]
            command, env = crawl_command(
                web, tmp_path, "seeds=" + ",".join(seeds), REDIS_URL=server.url, CRAWL_ID="stall",
                POLITENESS_MIN_DELAY=GAP, LOG_LEVEL="DEBUG",
                LOG_FORMAT="%(created).3f [%(name)s] %(levelname)s: %(message)s",
                EXTENSIONS=json.dumps({"reactor_lag.ReactorTicks": 0}), REACTOR_LAG_FILE=ticks_file,
                # The content index, the trap rules' store and the pushed seeds call Redis too:
                # each page, each new host and each second.
                SEEDS_POLL_INTERVAL=1, SCHEDULER_IDLE_BEFORE_CLOSE=1)
            log = tmp_path / "log"
            worker = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                      stderr=log.open("w"))
            deadline = time.monotonic() + 60
            while len(web.hits()) < 7 and time.monotonic() < deadline:
                time.sleep(0.02)
            os.kill(server.process.pid, signal.SIGSTOP)
            stopped_at = time.time()
            time.sleep(STOPPED)
            resumed_at = time.time()
            os.kill(server.process.pid, signal.SIGCONT)
            assert worker.wait(timeout=120) == 0
            expected = web.reachable(seeds)
            hits = {site.host: sorted(web.hits(site.host), key=lambda r: r.start) for site in sites}
    finally:
        server.stop()
    stored = Counter(r["url"] for r in iter_records(LocalStore(tmp_path / "store")))
    assert set(stored) == expected and max(stored.values()) == 1  # every page, once
    for records in hits.values():  # never two fetches of one host at once, gaps kept
        for a, b in itertools.pairwise(records):
            assert b.start - a.end >= GAP - 0.005, (a, b)
    # The reactor kept running while Redis was stopped: no gap between its 0.1 s ticks
    # anywhere near the stop (a call blocking it would leave one as long as the stop).
    ticks = [t for t in json.loads(ticks_file.read_text()) if stopped_at - 1 <= t <= resumed_at + 1]
    worst = max(b - a for a, b in itertools.pairwise(ticks))
    assert len(ticks) > STOPPED / 0.1 / 2 and worst < STOPPED / 4, worst
    # ... and pages answered meanwhile went through the spider and the pipelines.
    lines = log.read_text().splitlines()

    def while_stopped(marker: str) -> int:
        return sum(marker in line and stopped_at + 0.5 < float(line.split(" ", 1)[0]) < resumed_at
                   for line in lines if line[:1].isdigit())

    assert while_stopped("Crawled (200)") >= 1 and while_stopped("Scraped from") >= 1
    warnings = [line for line in lines if "WARNING" in line and "Redis" in line]
    assert sum("Redis has not answered" in line for line in warnings) == 1, warnings
    assert sum("Redis is back" in line for line in warnings) == 1, warnings
    # Pages answered while it was stopped were taken as originals, said once.
    assert sum("Content index unreachable" in line for line in lines) == 1
    assert sum("Trap state unreachable" in line for line in lines) == 1
    print(f"reactor: worst tick gap {worst:.2f} s while Redis was stopped {STOPPED:.0f} s; "
          f"responses handled meanwhile: {while_stopped('Crawled (200)')}")
