"""Freshness end to end: a continuous crawl of a site whose pages change on a clock."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from changing_site import ChangingSite
from redis_server import RedisServer

from crawler.store.files import LocalStore, iter_records

REPO = Path(__file__).resolve().parent.parent
# Short intervals: first revisit after 2 s, halved on change down to 0.5 s, doubled up to 8 s.
FAST_CLOCK = {
    "CRAWL_CONTINUOUS": True,
    "REVISIT_INTERVAL": 2,
    "REVISIT_MIN_INTERVAL": 0.5,
    "REVISIT_MAX_INTERVAL": 8,
    "REVISIT_HOT_SHARE": 0.8,  # hot pages may take 4x the other fetches: a cap that does not bind here
    "POLITENESS_MIN_DELAY": 0,
    "POLITENESS_DELAY_FACTOR": 0,
    "ROBOTSTXT_OBEY": False,
    "LOG_LEVEL": "INFO",
}


def crawl(site: ChangingSite, tmp_path: Path, **settings: object) -> subprocess.Popen:
    options = {**FAST_CLOCK, "STORE_URI": tmp_path / "store", "FRONTIER_DIR": tmp_path / "state",
               "CRAWL_ID": "fresh", **settings}
    command = [sys.executable, "-m", "scrapy", "crawl", "web", "-a", f"seeds={site.url}"]
    for name, value in options.items():
        command += ["-s", f"{name}={value}"]
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["SCRAPY_SETTINGS_MODULE"] = "crawler.settings"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    log = (tmp_path / "crawl.log").open("a")
    return subprocess.Popen(command, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)


def finish(process: subprocess.Popen, tmp_path: Path, timeout: float = 60) -> str:
    assert process.wait(timeout=timeout) == 0, (tmp_path / "crawl.log").read_text()[-3000:]
    return (tmp_path / "crawl.log").read_text()


def page_command(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCRAPY_SETTINGS_MODULE": "crawler.settings",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "scrapy", "page", *args, "-s", f"STORE_URI={tmp_path / 'store'}"]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
                          check=True)


def revisit_states(tmp_path: Path) -> list[dict]:
    """The revisit states the crawl's frontier holds as of its last commit."""
    try:
        state = sqlite3.connect(f"file:{tmp_path / 'state' / 'fresh' / 'frontier.sqlite'}?mode=ro", uri=True)
        try:
            return [json.loads(request)["meta"]["revisit"] for (request,) in state.execute(
                "SELECT request FROM urls WHERE state = 5")]
        finally:
            state.close()
    except sqlite3.OperationalError:  # not made yet
        return []


@pytest.fixture(params=["embedded", "redis"])
def backend(request, tmp_path_factory):
    if request.param == "embedded":
        yield {}
        return
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield {"REDIS_URL": server.url}
    server.stop()


def test_a_continuous_crawl_revisits_changed_pages_often_and_unchanged_ones_by_304(backend, tmp_path):
    with ChangingSite(fast=2, slow=3, period=0.5) as site:
        log = finish(crawl(site, tmp_path, CLOSESPIDER_TIMEOUT=14, **backend), tmp_path)
        fast = [site.fetches(p) for p in site.paths("fast")]
        slow = [site.fetches(p) for p in site.paths("slow")]
        ad = site.fetches("/ad")
    assert "'finish_reason': 'closespider_timeout'" in log
    # Every page is revisited.
    assert all(len(f) >= 2 for f in [*fast, *slow, ad]), (fast, slow, ad)
    # Refetches of unchanged pages are conditional and answered 304.
    refetches = [f for pages in slow for f in pages[1:]]
    assert sum(f == (304, True) for f in refetches) >= 0.9 * len(refetches)
    # Pages that change are visited several times as often as pages that do not.
    fast_visits = sum(map(len, fast)) / len(fast)
    slow_visits = sum(map(len, slow)) / len(slow)
    assert fast_visits >= 3 * slow_visits, (fast_visits, slow_visits)
    records = list(iter_records(LocalStore(tmp_path / "store")))
    by_url: dict[str, list[dict]] = {}
    for record in records:
        by_url.setdefault(record["url"], []).append(record)
        assert record["next_visit"]  # every record says when it is fetched again
    # Each version of a changing page is stored with its own hash and text.
    versions = [r for r in by_url[site.url + "fast/0"] if r["revisit"] in ("first", "changed")]
    assert len(versions) >= 3 and len({r["content_sha256"] for r in versions}) == len(versions)
    assert all(r["text"] for r in versions)
    # An unchanged page costs a small record: a 304, or the same text under new markup.
    slow_records = by_url[site.url + "slow/0"]
    assert {r["revisit"] for r in slow_records[1:]} == {"not_modified"}
    assert all(r["status"] == 304 and r["text"] is None for r in slow_records[1:])
    assert {r["revisit"] for r in by_url[site.url + "ad"][1:]} == {"unchanged"}
    # `scrapy page` lists the visits of a URL and its interval; --text finds the last text.
    page = page_command(tmp_path, "--versions", site.url + "fast/0")
    assert len(page.stdout.splitlines()) == len(by_url[site.url + "fast/0"])
    assert "revisit interval" in page.stderr
    text = page_command(tmp_path, "--text", site.url + "slow/0")
    assert "an archive that never changes" in text.stdout and "unchanged at its last visit" in text.stderr
    stats = log.rpartition("Dumping Scrapy stats:")[2]
    for key in ("revisit/due", "revisit/not_modified", "revisit/unchanged", "revisit/changed"):
        assert f"'{key}':" in stats, key


def test_a_killed_continuous_crawl_keeps_its_intervals_and_validators(tmp_path):
    with ChangingSite(fast=1, slow=2, period=0.5) as site:
        process = crawl(site, tmp_path)
        # Killed once an unchanged page's grown interval is committed: its ack waits for
        # the page's fsync batch (STORE_FSYNC_INTERVAL), then the frontier's commit.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(s["interval"] > 2 for s in revisit_states(tmp_path)):
            time.sleep(0.2)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        assert any(status == 304 for p in site.paths("slow") for status, _ in site.fetches(p))
        kept = revisit_states(tmp_path)
        assert kept, "no revisit state survived the kill"
        assert any(s["interval"] > 2 for s in kept)  # grown past the first interval: an unchanged page
        assert all(s["etag"] for s in kept if s["sha"] and "slow" in json.dumps(s))
        before = len(site.requests)
        # The rerun runs until each unchanged page has been fetched again (at most its
        # 8 s maximum interval after its last fetch), then stops cleanly.
        process = crawl(site, tmp_path, CLOSESPIDER_TIMEOUT=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(
                any(path == p for path, _, _ in site.requests[before:]) for p in site.paths("slow")):
            time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        finish(process, tmp_path)
        again = site.requests[before:]
    # The rerun's fetches of the unchanged pages are conditional at once: validators kept.
    slow_again = [(status, conditional) for path, status, conditional in again if path.startswith("/slow/")]
    assert slow_again and all(conditional for _, conditional in slow_again)
