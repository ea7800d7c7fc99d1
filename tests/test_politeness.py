"""The frontier's politeness, measured on the server side over real loopback HTTP."""

from __future__ import annotations

import itertools
import signal
import subprocess
import time
from collections import Counter

from crawling import crawl_command
from testweb import Site, TestWeb

from crawler.store.files import LocalStore, iter_records

POLITE = {"ROBOTSTXT_OBEY": False, "CONCURRENT_REQUESTS": 16}


def gaps(web: TestWeb, host: str) -> list[tuple[float, float]]:
    """(gap before the next request, duration of the previous one), in server time."""
    records = sorted(web.hits(host), key=lambda r: r.start)
    return [(b.start - a.end, a.end - a.start) for a, b in itertools.pairwise(records)]


def test_fetches_to_a_host_never_overlap_nor_come_closer_than_the_policy(crawl, tmp_path):
    sites = [Site(f"h{i}.test", pages=12, latency=0.03) for i in range(3)]
    with TestWeb(sites) as web:
        result = crawl(web, tmp_path, "seeds=" + ",".join(web.url(s.host) for s in sites),
                       POLITENESS_MIN_DELAY=0.15, POLITENESS_DELAY_FACTOR=3, **POLITE)
        assert result.returncode == 0, result.log[-3000:]
        for site in sites:
            assert web.max_in_flight(site.host) == 1
            for gap, duration in gaps(web, site.host):
                assert gap >= max(0.15, 3 * duration) - 0.005
    assert len(result.records) == 36


def test_hosts_on_one_ip_share_politeness_with_per_ip_on(crawl, tmp_path):
    sites = [Site("a.test", pages=8, latency=0.02, address="127.0.0.2"),
             Site("b.test", pages=8, latency=0.02, address="127.0.0.2"),
             Site("c.test", pages=8, latency=0.02, address="127.0.0.3")]
    with TestWeb(sites) as web:
        result = crawl(web, tmp_path, "seeds=" + ",".join(web.url(s.host) for s in sites),
                       POLITENESS_PER_IP=True, POLITENESS_MIN_DELAY=0.1, POLITENESS_DELAY_FACTOR=0,
                       **POLITE)
        assert result.returncode == 0, result.log[-3000:]
        shared = sorted(web.hits("a.test") + web.hits("b.test"), key=lambda r: r.start)
        alone = web.hits("c.test")
    assert len(result.records) == 24
    for before, after in itertools.pairwise(shared):
        assert after.start - before.end >= 0.1 - 0.005
    # c.test, on its own address, was fetched while the other two waited for each other.
    assert min(r.start for r in alone) < shared[2].start


def test_a_slow_host_is_spaced_ten_times_its_fetch_time(crawl, tmp_path):
    with TestWeb([Site("slow.test", pages=4, fanout=3, latency=0.12)]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("slow.test"),
                       POLITENESS_MIN_DELAY=0.1, POLITENESS_DELAY_FACTOR=10, **POLITE)
        assert result.returncode == 0, result.log[-3000:]
        spacing = gaps(web, "slow.test")
    assert len(spacing) == 3
    for gap, duration in spacing:
        assert duration >= 0.12
        assert gap >= 10 * duration - 0.005


def test_503_and_429_back_off_and_honour_retry_after(crawl, tmp_path):
    answers = [(503, {"Retry-After": "1"}), (429, {"Retry-After": "3"}), (503, {})]
    with TestWeb([Site("busy.test", pages=1, status_sequences={"/": answers})]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("busy.test"), FRONTIER_RETRY_DELAYS="0,0,0,0,0",
                       POLITENESS_MIN_DELAY=0.05, POLITENESS_DELAY_FACTOR=1, **POLITE)
        assert result.returncode == 0, result.log[-3000:]
        spacing = [gap for gap, _ in gaps(web, "busy.test")]
    assert [r.status for r in sorted(web.hits("busy.test"), key=lambda r: r.start)] == [503, 429, 503, 200]
    assert spacing[0] >= 1.0 - 0.005  # Retry-After: 1
    assert spacing[1] >= 3.0 - 0.005  # Retry-After: 3, longer than twice the backoff
    assert spacing[2] >= 6.0 - 0.005  # no Retry-After: the backoff doubles
    assert spacing[2] < 7.0  # and no more: the engine is woken when the host falls due
    assert len(result.records) == 1
    assert "Host busy.test answered 503: backing off 1.0 s" in result.log
    assert result.stats["frontier/backoffs"] == 1


def test_shallow_pages_come_first(crawl, tmp_path):
    with TestWeb([Site("tree.test", pages=40, fanout=3)]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("tree.test"),
                       POLITENESS_MIN_DELAY=0, POLITENESS_DELAY_FACTOR=0, **POLITE)
        assert result.returncode == 0, result.log[-3000:]
        order = [r.path for r in sorted(web.hits("tree.test"), key=lambda r: r.start)]

    def depth(path: str) -> int:
        i, d = (0 if path == "/" else int(path.split("/")[-1].split(".")[0])), 0
        while i:
            i, d = (i - 1) // 3, d + 1
        return d

    by_depth: dict[int, list[int]] = {}
    for position, path in enumerate(order):
        by_depth.setdefault(depth(path), []).append(position)
    mean = {d: sum(p) / len(p) for d, p in by_depth.items()}
    assert mean[0] < mean[1] < mean[2] < mean[3]


def test_small_hosts_finish_long_before_one_big_host(crawl, tmp_path):
    sites = [Site("big.test", pages=60)] + [Site(f"s{i}.test", pages=5) for i in range(19)]
    with TestWeb(sites) as web:
        result = crawl(web, tmp_path, "seeds=" + ",".join(web.url(s.host) for s in sites),
                       POLITENESS_MIN_DELAY=0.1, POLITENESS_DELAY_FACTOR=0, **POLITE)
        assert result.returncode == 0, result.log[-3000:]
        start = min(r.start for r in web.hits())
        small_done = max(r.end for s in sites[1:] for r in web.hits(s.host)) - start
        big_done = max(r.end for r in web.hits("big.test")) - start
    assert big_done >= 59 * 0.1
    assert small_done < 0.35 * big_done
    assert len(result.records) == 60 + 19 * 5


def test_kill_9_then_rerun_resumes_with_nothing_lost(tmp_path):
    sites = [Site(f"k{i}.test", pages=60, fanout=4) for i in range(2)]
    with TestWeb(sites) as web:
        seeds = [web.url(s.host) for s in sites]
        command, env = crawl_command(web, tmp_path, "seeds=" + ",".join(seeds),
                                     POLITENESS_MIN_DELAY=0.02, POLITENESS_DELAY_FACTOR=0, **POLITE)
        first = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while len(web.hits()) < 50 and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.02)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        fetched_before = len(web.hits())
        assert 50 <= fetched_before < 120, "the first run must be killed mid-way"
        second = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=120, check=False)
        assert second.returncode == 0, second.stderr[-3000:]
        assert "Resuming the crawl" in second.stderr
        hits = Counter((r.host, r.path) for r in web.hits())
        expected = web.reachable(seeds)
    stored = Counter(r["url"] for r in iter_records(LocalStore(tmp_path / "store")))
    assert set(stored) == expected
    assert max(stored.values()) <= 2
    assert max(hits.values()) <= 2
    assert sum(hits.values()) < 2 * len(expected)
