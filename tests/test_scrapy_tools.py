"""Scrapy's own tools in a fresh ``scrapy startproject`` project: with the add-on on they
behave as in plain Scrapy and keep no crawl state; without it, installing the package
changes nothing (no command replaced or added, no setting changed)."""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from crawling import REPO
from projects import ADDON_LINE, COMMANDS_LINE, scrapy, start_project

SPIDER = '''
import scrapy


class OwnSpider(scrapy.Spider):
    """A plain spider of the project's own, with a contract for scrapy check."""

    name = "own"
    start_urls = ["http://127.0.0.1:1/never"]

    def __init__(self, start=None, **kwargs):
        super().__init__(**kwargs)
        if start:
            self.start_urls = [start]

    def parse(self, response):
        """@url {url}
        @returns items 1 1
        @returns requests 1 1
        """
        yield {"url": response.url, "title": response.css("title::text").get()}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)
'''

PAGES = {
    "/": b"<html><head><title>Home</title></head><body><a href='/a.html'>a</a></body></html>",
    "/a.html": b"<html><head><title>A</title></head><body><p>A page.</p></body></html>",
    "/robots.txt": b"User-agent: *\nDisallow: /hidden/\n",
}
STATE_DIRS = ("crawl-state", "crawl-data", "crawl-index", "crawl-spool")


class Site:
    """A loopback HTTP server of :data:`PAGES` that records the paths asked for."""

    def __init__(self) -> None:
        paths: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                paths.append(self.path)
                body = PAGES.get(self.path)
                self.send_response(200 if body is not None else 404)
                kind = "text/plain" if self.path.endswith(".txt") else "text/html"
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args: object) -> None:
                pass

        self.paths = paths
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    served = Site()
    served.thread.start()
    try:
        yield served
    finally:
        served.server.shutdown()
        served.server.server_close()


def _project(tmp_path: Path, site: Site, *lines: str) -> Path:
    return start_project(tmp_path, SPIDER.replace("{url}", site.url + "/"), *lines)


@pytest.fixture
def with_addon(tmp_path: Path, site: Site) -> Path:
    return _project(tmp_path, site, ADDON_LINE)


@pytest.fixture
def plain(tmp_path: Path, site: Site) -> Path:
    return _project(tmp_path, site)


def _no_state(project: Path) -> None:
    assert not [name for name in STATE_DIRS if (project / name).exists()]


def test_fetch_and_view_print_the_page_and_keep_no_state(with_addon, site):
    done = scrapy(with_addon, "fetch", "--nolog", site.url + "/")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "<title>Home</title>" in done.stdout
    headers = scrapy(with_addon, "fetch", "--nolog", "--headers", site.url + "/a.html")
    assert "Content-Type: text/html" in headers.stdout
    refused = scrapy(with_addon, "fetch", site.url + "/hidden/x.html")
    assert "/hidden/x.html" not in site.paths and "robots.txt" in refused.stderr
    viewed = scrapy(with_addon, "view", "--nolog", site.url + "/", env={**os.environ, "BROWSER": "true"})
    assert viewed.returncode == 0, viewed.stderr[-2000:]
    _no_state(with_addon)


def test_shell_fetches_its_url_and_those_asked_for(with_addon, site):
    done = scrapy(with_addon, "shell", "--nolog", site.url + "/", "-c",
                  "(response.status, response.css('title::text').get())")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "(200, 'Home')" in done.stdout
    agent = scrapy(with_addon, "shell", "--nolog", site.url + "/", "-c", "request.headers['User-Agent']")
    assert "b'politecrawler/" in agent.stdout
    _no_state(with_addon)


def test_parse_fetches_the_one_url_it_is_given(with_addon, site):
    before = len(site.paths)
    done = scrapy(with_addon, "parse", "--spider", "own", site.url + "/")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'title': 'Home'" in done.stdout and f"{site.url}/a.html" in done.stdout
    asked = site.paths[before:]
    assert "/" in asked and "/a.html" not in asked  # the link is shown, not followed
    assert "127.0.0.1:1" not in done.stderr  # the spider's start_urls are not fetched
    _no_state(with_addon)


def test_parse_with_the_web_spider_in_this_project(site, tmp_path):
    done = scrapy(REPO, "parse", "--spider", "web", site.url + "/", "-s", f"DATA_DIR={tmp_path}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert "'title': 'Home'" in done.stdout and f"{site.url}/a.html" in done.stdout
    assert not list(tmp_path.iterdir())


def test_check_runs_the_contracts(with_addon):
    done = scrapy(with_addon, "check", "own")
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "Ran 2 contracts" in done.stderr and "OK" in done.stderr
    _no_state(with_addon)


@pytest.mark.serial  # scrapy bench's server takes port 8998
def test_bench_runs(with_addon):
    done = scrapy(with_addon, "bench", "-s", "CLOSESPIDER_TIMEOUT=2", timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'finish_reason': 'closespider_timeout'" in done.stderr
    pages = int(done.stderr.split("'response_received_count': ")[1].split(",")[0])
    assert pages > 10
    _no_state(with_addon)


def test_without_the_addon_the_package_changes_nothing(plain, site):
    listed = scrapy(plain, "-h").stdout
    assert "crawl " in listed
    assert not {"page", "crawlstats", "crawls", "deadletters", "forget", "plan", "serve"} & {
        line.split()[0] for line in listed.splitlines() if line.startswith("  ") and line.split()}
    assert "seeds" not in scrapy(plain, "crawl", "-h").stdout
    assert scrapy(plain, "settings", "--get", "DEPTH_LIMIT").stdout.strip() == "0"
    assert scrapy(plain, "settings", "--get", "SCHEDULER").stdout.strip() == "scrapy.core.scheduler.Scheduler"
    done = scrapy(plain, "crawl", "own", "-a", f"start={site.url}/a.html", "-s", "DOWNLOAD_DELAY=0.5")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "must be" not in done.stderr
    fetched = scrapy(plain, "fetch", "--nolog", site.url + "/")
    assert "<title>Home</title>" in fetched.stdout
    _no_state(plain)


def test_with_the_addon_and_its_commands_a_decimal_download_delay_is_taken(tmp_path, site):
    project = _project(tmp_path, site, ADDON_LINE, COMMANDS_LINE)
    assert "crawls" in scrapy(project, "-h").stdout
    pipelines = scrapy(project, "settings", "--get", "ITEM_PIPELINES").stdout
    assert '"crawler.pipelines.store.PageStorePipeline": 800' in pipelines
    done = scrapy(project, "crawl", "own", "-a", f"start={site.url}/a.html", "-s", "DOWNLOAD_DELAY=0.5",
                  "-s", f"DATA_DIR={tmp_path}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "must be" not in done.stderr and "POLITENESS_MIN_DELAY = 0.5" in done.stderr


def test_with_the_addon_alone_a_bad_setting_is_an_error_line_and_nothing_is_fetched(with_addon, site):
    before = len(site.paths)
    done = scrapy(with_addon, "crawl", "own", "-a", f"start={site.url}/", "-s", "POLITENESS_MIN_DELAY=fast")
    assert "ERROR: bad setting(s), nothing was fetched:" in done.stderr, done.stderr[-2000:]
    assert "POLITENESS_MIN_DELAY = 'fast': must be a number >= 0" in done.stderr
    assert len(site.paths) == before
