"""A dont_filter request the frontier drops is said once in the log, not dropped in silence."""

from __future__ import annotations

import subprocess
import sys

from testweb import Site

_SPIDER = """
import sys
import scrapy
from scrapy.crawler import CrawlerProcess

port = int(sys.argv[1])

class Again(scrapy.Spider):
    name = "again"
    start_urls = [f"http://a.test:{port}/"]

    def parse(self, response):
        yield {"url": response.url}
        for _ in range(3):  # the page being parsed is still leased: each one is dropped
            yield scrapy.Request(response.url, dont_filter=True)

process = CrawlerProcess({
    "ADDONS": {"crawler.addon.PoliteCrawler": 0}, "DATA_DIR": sys.argv[2],
    "TWISTED_DNS_RESOLVER": "testweb.LoopbackResolver", "NETWORK_ALLOW": ["127.0.0.0/8"],
    "POLITENESS_MIN_DELAY": 0.05, "LOG_LEVEL": "WARNING", "TELNETCONSOLE_ENABLED": False,
})
process.crawl(Again)
process.start()
"""


def test_a_dropped_dont_filter_request_is_said_once(web_factory, tmp_path):
    web = web_factory([Site("a.test", pages=1)])
    script = tmp_path / "again.py"
    script.write_text(_SPIDER)
    done = subprocess.run([sys.executable, str(script), str(web.port), str(tmp_path / "data")],
                          env=web.subprocess_env(), cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if "has dont_filter" in line]
    assert len(said) == 1, done.stderr[-3000:]
    assert web.url("a.test") in said[0] and "frontier/dropped/seen" in said[0]
