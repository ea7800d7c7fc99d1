"""The one-line plug-in: ``ADDONS = {"crawler.addon.PoliteCrawler": 0}`` in a fresh Scrapy project."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from projects import ADDON_LINE, COMMANDS_LINE, scrapy, start_project
from scrapy.settings import Settings
from testweb import Site, TestWeb

from crawler.addon import REMOTE_CONTROL, PoliteCrawler
from crawler.store.files import LocalStore, iter_records

SPIDER = '''
import scrapy


class PagesSpider(scrapy.Spider):
    """A plain spider of the project's own: dict items, links followed."""

    name = "pages"

    def __init__(self, start=None, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [start]

    def parse(self, response):
        yield {"url": response.url, "title": response.css("title::text").get()}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)
'''

ROBOTS = "User-agent: *\nDisallow: /p/3.html\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return start_project(tmp_path, SPIDER, ADDON_LINE, COMMANDS_LINE, "URLLENGTH_LIMIT = 1000")


def test_scrapy_settings_shows_the_addon_defaults_and_the_project_still_wins(project):
    def setting(name: str, *args: str) -> str:
        return scrapy(project, "settings", "--get", name, *args).stdout.strip()

    assert setting("DEPTH_LIMIT") == "20"
    assert setting("POLITENESS_DELAY_FACTOR") == "10.0"
    assert setting("URLLENGTH_LIMIT") == "1000"
    assert setting("DEPTH_LIMIT", "-s", "DEPTH_LIMIT=5") == "5"
    assert setting("SCHEDULER") == "crawler.scheduling.scheduler.FrontierScheduler"
    # The template's DOWNLOAD_DELAY = 1 becomes the frontier's gap, not a second delay.
    assert setting("DOWNLOAD_DELAY") == "0"
    assert setting("POLITENESS_MIN_DELAY") == "1.0"


def test_a_projects_own_spider_crawls_robots_first_politely_and_its_pages_are_stored(project, tmp_path):
    site = Site("shop.test", pages=8, fanout=2, robots_txt=ROBOTS)
    with TestWeb([site]) as web:
        done = scrapy(
            project, "crawl", "pages", "-a", f"start={web.url('shop.test')}", "-o", "items.jsonl",
            "-s", "TWISTED_DNS_RESOLVER=testweb.LoopbackResolver",
            "-s", f"STORE_URI={tmp_path / 'store'}", "-s", f"FRONTIER_DIR={tmp_path / 'state'}",
            "-s", "POLITENESS_MIN_DELAY=0.2", "-s", "POLITENESS_DELAY_FACTOR=0",
            env=web.subprocess_env(),
        )
        assert done.returncode == 0, done.stderr[-3000:]
        hits = web.hits("shop.test")
        assert hits[0].path == "/robots.txt"
        assert [h.path for h in hits].count("/robots.txt") == 1
        assert "/p/3.html" not in {h.path for h in hits}
        assert web.max_in_flight("shop.test") == 1
        assert web.min_gap("shop.test") >= 0.2 - 0.005
        fetched = {h.path for h in hits if h.status == 200 and h.path != "/robots.txt"}

    records = list(iter_records(LocalStore(tmp_path / "store")))
    assert {urlsplit(r["url"]).path for r in records} == fetched
    assert all(r["content_sha256"] and r["warc"] for r in records)
    # The spider's own items reach its feed unchanged, and only they do.
    items = [json.loads(line) for line in (project / "items.jsonl").read_text().splitlines()]
    assert len(items) == len(records) == len(fetched)
    assert all(set(item) == {"url", "title"} for item in items)
    assert "Enabled addons" in done.stderr and "PoliteCrawler" in done.stderr


@pytest.mark.parametrize(("enabled", "loaded"), [(None, False), (True, True)])
def test_scrapys_remote_control_is_not_even_loaded_while_it_is_off(enabled, loaded):
    # Loading it imports aiohttp, only for it to find itself off: CPU at every start.
    settings = Settings()
    if enabled is not None:
        settings.set("REMOTE_CONTROL_ENABLED", enabled, priority="cmdline")
    PoliteCrawler().update_settings(settings)
    assert (REMOTE_CONTROL in settings.get_component_priority_dict_with_base("EXTENSIONS")) is loaded
