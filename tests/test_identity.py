"""A polite identity: the default User-Agent names the crawler, its version and the
operator's contact (a WARNING while none is set), and robots.txt is matched on its
product token."""

from __future__ import annotations

from importlib import metadata

from crawling import run_crawl
from testweb import Site, TestWeb

ROBOTS = "User-agent: politecrawler\nDisallow: /p/2.html\n\nUser-agent: *\nDisallow:\n"


def test_the_user_agent_names_the_crawler_its_version_and_contact(tmp_path):
    with TestWeb([Site("who.test", pages=4, fanout=3, robots_txt=ROBOTS)]) as web:
        result = run_crawl(web, tmp_path, "seeds=" + web.url("who.test"),
                           CRAWLER_CONTACT="https://example.org/bot")
        hits = web.hits("who.test")
    assert result.returncode == 0, result.log[-3000:]
    version = metadata.version("scrapy-polite-crawler")
    assert {r.headers.get("User-Agent") for r in hits} == {
        f"politecrawler/{version} (+https://example.org/bot)"}
    assert "/p/2.html" not in {r.path for r in hits} and "/p/3.html" in {r.path for r in hits}
    assert result.stats["robotstxt/forbidden"] == 1
    assert "CRAWLER_CONTACT is not set" not in result.log


def test_a_crawl_without_a_contact_is_warned_once(tmp_path):
    with TestWeb([Site("anon.test", pages=1)]) as web:
        result = run_crawl(web, tmp_path, "seeds=" + web.url("anon.test"))
        agents = {r.headers.get("User-Agent") for r in web.hits("anon.test")}
    assert result.returncode == 0, result.log[-3000:]
    assert agents == {f"politecrawler/{metadata.version('scrapy-polite-crawler')}"}
    warned = [line for line in result.log.splitlines() if "WARNING" in line and "CRAWLER_CONTACT" in line]
    assert len(warned) == 1
