"""Crawl ids follow the crawl: the same command resumes, new seeds start a new crawl."""

from __future__ import annotations

import shlex

from crawling import crawl_command
from testweb import Site, TestWeb

from crawler.context.crawl_id import derive_crawl_id, fresh_crawl_command


def test_same_seeds_in_any_order_name_the_same_crawl():
    a = derive_crawl_id("web", ["http://a.test/", "http://b.test/"], "host")
    assert a == derive_crawl_id("web", ["http://b.test/", "http://a.test/", "http://a.test/"], "host")
    assert a.startswith("web-") and len(a) == len("web-") + 8


def test_new_seeds_or_scope_name_a_new_crawl():
    a = derive_crawl_id("web", ["http://a.test/"], "host")
    assert a != derive_crawl_id("web", ["http://b.test/"], "host")
    assert a != derive_crawl_id("web", ["http://a.test/"], "domain")
    assert a != derive_crawl_id("other", ["http://a.test/"], "host")


def test_a_spider_without_seeds_is_named_by_its_name():
    assert derive_crawl_id("web", []) == "web"


def test_fresh_command_is_the_same_command_with_a_new_crawl_id():
    argv = ["/usr/bin/scrapy", "crawl", "web", "-a", "seeds=http://a.test/", "-s", "CRAWL_ID=old"]
    command = fresh_crawl_command(argv, "old", "20261203")
    assert shlex.split(command) == ["scrapy", "crawl", "web", "-a", "seeds=http://a.test/",
                                    "-s", "CRAWL_ID=old-20261203"]
    # Scrapy's command line has taken "crawl" out of sys.argv by the time a crawl runs.
    assert fresh_crawl_command(["scrapy", "web", "-s", "X=1"], "web-1", "2") \
        == "scrapy crawl web -s X=1 -s CRAWL_ID=web-1-2"


def test_a_second_crawl_with_other_seeds_crawls_them(crawl, tmp_path):
    sites = [Site("a.test", pages=4), Site("b.test", pages=5)]
    with TestWeb(sites) as web:
        first = crawl(web, tmp_path, "seeds=" + web.url("a.test"), ROBOTSTXT_OBEY=False)
        assert first.returncode == 0, first.log[-3000:]
        assert len(first.records) == 4
        second = crawl(web, tmp_path, "seeds=" + web.url("b.test"), ROBOTSTXT_OBEY=False)
        assert second.returncode == 0, second.log[-3000:]
        assert len(web.hits("b.test")) == 5
    assert len(second.records) == 9  # the store is shared; the state is not
    assert len(list((tmp_path / "state").iterdir())) == 2


def test_rerunning_a_finished_crawl_says_so_with_the_command_to_start_afresh(crawl, tmp_path):
    with TestWeb([Site("a.test", pages=3)]) as web:
        seeds = "seeds=" + web.url("a.test")
        assert crawl(web, tmp_path, seeds, ROBOTSTXT_OBEY=False).returncode == 0
        again = crawl(web, tmp_path, seeds, ROBOTSTXT_OBEY=False)
        assert len(web.hits("a.test")) == 3
    assert again.returncode == 0
    assert "already finished (3 URLs done" in again.log
    line = next(line for line in again.log.splitlines() if line.strip().startswith("scrapy crawl web"))
    assert "-a " + shlex.quote(seeds) in line and "CRAWL_ID=web-" in line


def test_jobdir_names_the_crawl_and_holds_its_state(crawl, tmp_path):
    with TestWeb([Site("a.test", pages=3)]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("a.test"), ROBOTSTXT_OBEY=False,
                       JOBDIR=str(tmp_path / "job-7"))
    assert result.returncode == 0, result.log[-3000:]
    assert (tmp_path / "job-7" / "frontier.sqlite").exists()
    assert "Crawl id job-7" in result.log


def test_crawlstats_reads_an_embedded_crawl(crawl, tmp_path):
    import json
    import subprocess
    import sys

    with TestWeb([Site("a.test", pages=5)]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("a.test"), ROBOTSTXT_OBEY=False, CRAWL_ID="docs")
        _, env = crawl_command(web, tmp_path)
    assert result.returncode == 0, result.log[-3000:]

    def crawlstats(crawl_id: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "scrapy", "crawlstats", crawl_id, "-s",
                               f"FRONTIER_DIR={tmp_path / 'state'}"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60, check=False)

    done = crawlstats("docs")
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout)
    assert counts["done"] == len(result.records) == 5
    assert counts["queued"] == counts["leased"] == 0 and counts["hosts"] == 1
    unknown = crawlstats("nope")
    assert unknown.returncode == 2
    assert "no crawl 'nope'" in unknown.stderr and "crawls there: docs" in unknown.stderr
    assert "give the same -s JOBDIR" in unknown.stderr
