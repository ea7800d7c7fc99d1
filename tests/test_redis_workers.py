"""Many workers, one crawl: the Redis frontier over a real redis-server and loopback HTTP."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
import redis
from crawling import REPO, crawl_command, reaped
from redis_server import RedisServer
from testweb import Site, TestWeb

from crawler import defaults
from crawler.store.files import LocalStore, iter_records

GAP = 0.1
IDLE = 2


@pytest.fixture
def redis_url(tmp_path):
    server = RedisServer(tmp_path).start()
    yield server.url
    server.stop()


def start_workers(web, tmp_path, redis_url, names, seeds, **settings):
    workers = []
    for name in names:
        home = tmp_path / f"worker-{name}"
        home.mkdir()
        # A worker closes after IDLE s with nothing left in the crawl (10 s by default).
        options = {"REDIS_URL": redis_url, "CRAWL_ID": "shared", "ROBOTSTXT_OBEY": False,
                   "STORE_URI": tmp_path / "store", "POLITENESS_MIN_DELAY": GAP,
                   "POLITENESS_DELAY_FACTOR": 0, "SCHEDULER_IDLE_BEFORE_CLOSE": IDLE, **settings}
        command, env = crawl_command(web, home, "seeds=" + ",".join(seeds), **options)
        workers.append(subprocess.Popen(command, cwd=home, env=env, stdout=subprocess.DEVNULL,
                                        stderr=(home / "log").open("w")))
    return workers


def wait_for_hits(web, count):
    deadline = time.monotonic() + 60
    while len(web.hits()) < count and time.monotonic() < deadline:
        time.sleep(0.02)


def scrapy_command(*args: str, redis_url: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "SCRAPY_SETTINGS_MODULE": "crawler.settings"}
    command = [sys.executable, "-m", "scrapy", *args, "-s", f"REDIS_URL={redis_url}"]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)


def check_politeness(web, hosts):
    for host in hosts:
        records = sorted(web.hits(host), key=lambda r: r.start)
        for a, b in itertools.pairwise(records):
            assert b.start - a.end >= GAP - 0.005, (host, a, b)


def test_three_workers_share_politeness_and_store_every_page_once(tmp_path, redis_url):
    sites = [Site(f"h{i:02d}.test", pages=10) for i in range(20)]
    with TestWeb(sites) as web:
        seeds = [web.url(s.host) for s in sites]
        workers = start_workers(web, tmp_path, redis_url, "abc", seeds)
        for w in workers:
            assert w.wait(timeout=120) == 0
        expected = web.reachable(seeds)
        check_politeness(web, [s.host for s in sites])
        assert max(web.max_in_flight(s.host) for s in sites) == 1
        hits = Counter((r.host, r.path) for r in web.hits())
    stored = Counter(r["url"] for r in iter_records(LocalStore(tmp_path / "store")))
    assert set(stored) == expected and max(stored.values()) == 1
    assert max(hits.values()) == 1  # the same seeds given to three workers: fetched once
    counters = json.loads(scrapy_command("crawlstats", "shared", redis_url=redis_url).stdout)
    assert counters["stored"] == counters["fetched"] == len(expected) and counters["queued"] == 0


def test_workers_share_the_content_seen_index(tmp_path, redis_url):
    sites = [Site("a.test", pages=20, fanout=3), Site("m.test", mirror_of="a.test", pages=20, fanout=3),
             Site("n.test", mirror_of="a.test", pages=20, fanout=3)]
    with TestWeb(sites) as web:
        seeds = [web.url(s.host) for s in sites]
        workers = start_workers(web, tmp_path, redis_url, "ab", seeds)
        for w in workers:
            assert w.wait(timeout=120) == 0
    records = list(iter_records(LocalStore(tmp_path / "store")))
    originals = [r for r in records if r["duplicate_of"] is None]
    # Each text is kept once across both workers; every copy points at a stored original.
    assert len(originals) == len({r["content_sha256"] for r in originals}) == 20
    by_url = {r["url"]: r for r in originals}
    for record in records:
        if record["duplicate_of"] is not None:
            assert by_url[record["duplicate_of"]]["content_sha256"] == record["content_sha256"]
    assert redis.Redis.from_url(redis_url).hlen("crawl:{shared}:content:dups") >= 1


def test_a_worker_killed_mid_crawl_loses_nothing(tmp_path, redis_url):
    sites = [Site(f"k{i:02d}.test", pages=15) for i in range(6)]
    with TestWeb(sites) as web:
        seeds = [web.url(s.host) for s in sites]
        # The victim crawls alone and is killed while it holds leases (it is the only
        # worker, so every lease in Redis is its own); then the others take over.
        victim = start_workers(web, tmp_path, redis_url, "v", seeds, FRONTIER_LEASE_SECONDS=3)[0]
        wait_for_hits(web, 10)
        leases = redis.Redis.from_url(redis_url)
        deadline = time.monotonic() + 30
        while leases.zcard("crawl:{shared}:leases") < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
        others = start_workers(web, tmp_path, redis_url, "ab", seeds, FRONTIER_LEASE_SECONDS=3)
        for w in others:
            assert w.wait(timeout=120) == 0
        assert "leases/expired" in (tmp_path / "worker-a" / "log").read_text() + (
            tmp_path / "worker-b" / "log").read_text()
        expected = web.reachable(seeds)
        hits = Counter((r.host, r.path) for r in web.hits())
    stored = Counter(r["url"] for r in iter_records(LocalStore(tmp_path / "store")))
    assert set(stored) == expected  # none missing
    assert max(stored.values()) <= 2 and max(hits.values()) <= 2  # in flight at the kill: twice


def test_the_others_take_over_a_killed_workers_urls_within_90_s_with_default_settings(tmp_path, redis_url):
    sites = [Site(f"d{i}.test", pages=12) for i in range(8)]
    with TestWeb(sites) as web:
        seeds = [web.url(s.host) for s in sites]
        idle = defaults.SCHEDULER_IDLE_BEFORE_CLOSE  # default settings, this one too
        with reaped(start_workers(web, tmp_path, redis_url, "abc", seeds, POLITENESS_MIN_DELAY=1.0,
                                  POLITENESS_DELAY_FACTOR=10.0, SCHEDULER_IDLE_BEFORE_CLOSE=idle)) as workers:
            took, victim, _ = kill_one_and_wait_for_the_others(web, redis_url, workers)
        expected = web.reachable(seeds)
        in_flight = {s.host: web.max_in_flight(s.host) for s in sites}
    logs = "".join((tmp_path / f"worker-{n}" / "log").read_text() for n in "abc")
    assert f"Worker {victim} has been silent" in logs
    assert took < 90
    stored = {r["url"] for r in iter_records(LocalStore(tmp_path / "store"))}
    assert stored == expected
    assert set(in_flight.values()) == {1}


def kill_one_and_wait_for_the_others(web, redis_url, workers):
    """kill -9 a worker that holds a lease; (seconds until the others end, its id, its pid)."""
    wait_for_hits(web, 20)
    client = redis.Redis.from_url(redis_url)
    victim, deadline = None, time.monotonic() + 30
    while victim is None and time.monotonic() < deadline:  # one that holds a lease
        victim = next((w for w in client.zrange("crawl:{shared}:workers", 0, -1)
                       if client.scard(b"crawl:{shared}:worker:" + w)), None)
    assert victim is not None
    pid = int(victim.decode().split("-")[-2])
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    for w in workers:
        if w.pid != pid:
            assert w.wait(timeout=90) == 0
    took = time.monotonic() - killed
    print(f"kill -9 to crawl end: {took:.1f} s")
    return took, victim.decode(), pid


def test_seeds_pushed_into_redis_are_crawled_and_idle_workers_close(tmp_path, redis_url):
    sites = [Site("p.test", pages=5), Site("q.test", pages=5)]
    with TestWeb(sites) as web:
        home = tmp_path / "worker"
        home.mkdir()
        command, env = crawl_command(web, home, REDIS_URL=redis_url, CRAWL_ID="pushed",
                                     ROBOTSTXT_OBEY=False, STORE_URI=tmp_path / "store",
                                     SEEDS_POLL_INTERVAL=0.5, SCHEDULER_IDLE_BEFORE_CLOSE=4)
        worker = subprocess.Popen(command, cwd=home, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)  # the worker runs, with nothing to do yet
        client = redis.Redis.from_url(redis_url)
        client.rpush("crawl:{pushed}:seeds", json.dumps(web.url("p.test")), json.dumps("ftp://x/"),
                     json.dumps(web.url("q.test")))
        _, log = worker.communicate(timeout=60)
        expected = web.reachable([web.url("p.test"), web.url("q.test")])
    assert worker.returncode == 0, log[-3000:]
    stored = {r["url"] for r in iter_records(LocalStore(tmp_path / "store"))}
    assert stored == expected
    assert "Pushed seed 'ftp://x/' rejected: scheme 'ftp' is not http or https" in log


def test_scrapy_forget_deletes_a_finished_crawl_and_keeps_a_running_one(tmp_path, redis_url):
    from crawler.frontier.api import Entry
    from crawler.frontier.backends.redis.single import RedisFrontier

    client = redis.Redis.from_url(redis_url)
    RedisFrontier(client, "busy").add([Entry(1, "a.test", 0, "{}")])
    finished = RedisFrontier(client, "done")
    finished.add([Entry(2, "a.test", 0, "{}")])
    claim = finished.next(0.0)
    finished.ack(claim.fp, claim.token)
    client.set("other:key", "kept")

    def forget(*args: str) -> subprocess.CompletedProcess:
        return scrapy_command("forget", *args, redis_url=redis_url)

    busy = forget("busy")
    assert busy.returncode == 1 and "1 URLs queued" in busy.stderr
    done = forget("done")
    assert done.returncode == 0, done.stderr
    assert client.keys("crawl:{done}:*") == [] and client.keys("crawl:{busy}:*")
    assert client.get("other:key") == b"kept"


def test_redis_restarting_mid_crawl_loses_nothing(tmp_path):
    server = RedisServer(tmp_path, appendonly=True).start()
    sites = [Site(f"r{i}.test", pages=12) for i in range(4)]
    try:
        with TestWeb(sites) as web:
            seeds = [web.url(s.host) for s in sites]
            worker = start_workers(web, tmp_path, server.url, "w", seeds, POLITENESS_MIN_DELAY=0.2)[0]
            wait_for_hits(web, 10)
            server.stop()
            time.sleep(2)  # the worker runs on without its frontier
            server.restart()
            assert worker.wait(timeout=120) == 0
            expected = web.reachable(seeds)
            hits = Counter((r.host, r.path) for r in web.hits())
    finally:
        server.stop()
    stored = Counter(r["url"] for r in iter_records(LocalStore(tmp_path / "store")))
    assert set(stored) == expected
    assert max(hits.values()) <= 2
    log = (tmp_path / "worker-w" / "log").read_text()
    assert "Redis unreachable" in log and "Redis is back" in log


def test_a_crawl_sharded_over_two_redis_servers(tmp_path, redis_url):
    second = RedisServer(tmp_path).start()
    sites = [Site(f"s{i:02d}.test", pages=6) for i in range(12)]
    try:
        with TestWeb(sites) as web:
            seeds = [web.url(s.host) for s in sites]
            workers = start_workers(web, tmp_path, f"{redis_url},{second.url}", "ab", seeds)
            for w in workers:
                assert w.wait(timeout=120) == 0
            expected = web.reachable(seeds)
            check_politeness(web, [s.host for s in sites])
            assert max(web.max_in_flight(s.host) for s in sites) == 1
        for url in (redis_url, second.url):  # both servers hold part of the crawl
            assert redis.Redis.from_url(url).keys("crawl:{shared}:host:*")
    finally:
        second.stop()
    stored = Counter(r["url"] for r in iter_records(LocalStore(tmp_path / "store")))
    assert set(stored) == expected and max(stored.values()) == 1


def test_workers_share_robots_txt_so_each_host_serves_it_once(tmp_path, redis_url):
    sites = [Site(f"t{i}.test", pages=12, robots_txt="User-agent: *\nDisallow: /p/5.html\n")
             for i in range(4)]
    with TestWeb(sites) as web:
        seeds = [web.url(s.host) for s in sites]
        workers = start_workers(web, tmp_path, redis_url, "ab", seeds, ROBOTSTXT_OBEY=True)
        for w in workers:
            assert w.wait(timeout=120) == 0
        robots = Counter(r.host for r in web.hits() if r.path == "/robots.txt")
        forbidden = web.hits(path="/p/5.html")
    assert robots == {s.host: 1 for s in sites}
    assert forbidden == []
