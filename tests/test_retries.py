"""Failures go through the frontier's retry chain, then become dead letters; a crawl with
a page that always fails still ends by itself."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

from crawling import crawl_command
from testweb import Site, TestWeb, page_path

DELAYS = (1.0, 2.0, 4.0)
FAST = {"FRONTIER_RETRY_DELAYS": ",".join(str(d) for d in DELAYS), "ROBOTSTXT_OBEY": False}


def fetch_gaps(web, host, path):
    hits = sorted(web.hits(host, path), key=lambda r: r.start)
    return [b.start - a.end for a, b in itertools.pairwise(hits)]


def deadletters(web, tmp_path, *args):
    _, env = crawl_command(web, tmp_path)
    return subprocess.run([sys.executable, "-m", "scrapy", "deadletters", *args, "-s",
                           f"FRONTIER_DIR={tmp_path / 'state'}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def test_flaky_pages_are_retried_after_each_delay_and_a_dead_page_is_a_dead_letter(crawl, tmp_path):
    # 502 twice, then the page; a connection reset twice (Twisted itself retries a request
    # whose kept-alive connection drops at once, so the chain may see one drop or two).
    flaky, dropped, dead = page_path(1), page_path(2), page_path(5)
    site = Site("flaky.test", pages=6, status_sequences={flaky: [502, 502], dropped: [0, 0]},
                statuses={dead: 500})
    with TestWeb([site]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("flaky.test"), CRAWL_ID="flaky", **FAST)
        gaps = {p: fetch_gaps(web, "flaky.test", p) for p in (flaky, dropped, dead)}
        letters = deadletters(web, tmp_path, "flaky")
        stored = {r["url"] for r in result.records}
    assert result.returncode == 0, result.log[-3000:]
    assert len(gaps[flaky]) == 2  # fetched 3 times, each retry after its delay, and stored
    assert all(g >= d - 0.01 for g, d in zip(gaps[flaky], DELAYS, strict=False))
    assert web.url("flaky.test", flaky) in stored
    assert web.url("flaky.test", dropped) in stored and max(gaps[dropped]) >= DELAYS[0] - 0.01
    assert result.stats["retry/failures/DownloadFailedError"] >= 1
    assert len(gaps[dead]) == 3  # fetched 4 times
    assert all(g >= d - 0.01 for g, d in zip(gaps[dead], DELAYS, strict=True))
    assert result.stats["retry/failures/500"] == 4 and result.stats["retry/failures/502"] == 2
    assert result.stats["frontier/dead_letters"] == 1
    assert "Giving up " + web.url("flaky.test", dead) + " after 4 attempts" in result.log
    assert letters.returncode == 0, letters.stderr
    [letter] = [json.loads(line) for line in letters.stdout.splitlines()]
    assert letter["url"] == web.url("flaky.test", dead) and letter["attempts"] == 4
    assert "500" in letter["error"]


def test_a_poison_page_ends_as_a_dead_letter_and_can_be_requeued(crawl, tmp_path):
    with TestWeb([Site("poison.test", pages=5)]) as web:
        options = {**FAST, "CRAWL_ID": "poison",
                   "ITEM_PIPELINES": json.dumps({"failing_pipeline.FailOnePage": 500})}
        result = crawl(web, tmp_path, "seeds=" + web.url("poison.test"), **options)
        poison = web.url("poison.test", page_path(3))
        fetched = len(web.hits("poison.test", page_path(3)))
        listed = deadletters(web, tmp_path, "poison")
        requeued = deadletters(web, tmp_path, "--requeue", "poison")
        again = crawl(web, tmp_path, "seeds=" + web.url("poison.test"), **options)
        refetched = len(web.hits("poison.test", page_path(3))) - fetched
    assert result.returncode == 0, result.log[-3000:]
    assert fetched == 4 and poison not in {r["url"] for r in result.records}
    assert len(result.records) == 4  # the others are stored
    assert [json.loads(line)["url"] for line in listed.stdout.splitlines()] == [poison]
    assert "No space left on device" in listed.stdout
    assert requeued.stdout.strip().endswith("1 dead letters queued again")
    assert again.returncode == 0 and refetched == 4  # a fresh chain, failing again
