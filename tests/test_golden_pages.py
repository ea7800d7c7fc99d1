"""Nothing lost in the parser change: the test web's pages give the links, base, title and
text that the lxml extraction gave.

``data/golden_pages.json`` was recorded from these sites with the extraction this
replaced (Scrapy's lxml selector, ``//a/@href | //area/@href``, ``get_base_url`` and the
hand-written text walk, at commit 015f578): per reachable page, its hrefs in document
order, its base URL, its title and the SHA-256 of its whitespace-normalised text, with
the server's port written ``PORT``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from scrapy.http import HtmlResponse, Request
from testweb import Site, TestWeb

from crawler.extract.html import normalize_whitespace
from crawler.extract.page import extract_page
from crawler.stages import StageClock

GOLDEN = Path(__file__).parent / "data" / "golden_pages.json"
SITES = [
    Site("docs.test", pages=40, fanout=3, extra_links=5, nav_links=12, cross_links=["blog.test"],
         broken_links=2, binary_links=True, calendar_trap=True, session_trap=True, repeat_trap=True,
         page_bytes=3000, redirects={"/old.html": "/p/3.html"}),
    Site("blog.test", pages=15, fanout=2, nav_links=4),
    Site("mirror.test", mirror_of="blog.test"),
]


class _Stats:
    def inc_value(self, key: str, count: float = 1, start: float = 0) -> None:
        pass


def extracted_pages() -> dict[str, dict]:
    found = {}
    with TestWeb(SITES) as web:
        port = str(web.port)
        for site in SITES:
            for url in sorted(web.reachable([f"http://{site.host}:{port}/"], {site.host})):
                path, _, query = url.split(port, 1)[1].partition("?")
                body = web._render(web._answer(site, path, query, stateful=False))
                response = HtmlResponse(url, body=body, request=Request(url),
                                        headers={"Content-Type": "text/html; charset=utf-8"})
                # The visible text, which the recording's text walk gave (the main text
                # is tested in test_main_text.py).
                page, hrefs, base = extract_page(response, url, StageClock(_Stats()), "visible")
                found[url.replace(port, "PORT")] = {
                    "base": base.replace(port, "PORT"),
                    "hrefs": [href.replace(port, "PORT") for href in hrefs],
                    "title": page.title,
                    "text_sha256": hashlib.sha256(normalize_whitespace(page.text).encode()).hexdigest(),
                }
    return found


def test_test_web_pages_give_the_same_links_base_title_and_text_as_before():
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    found = extracted_pages()
    assert sorted(found) == sorted(golden)
    for url, expected in golden.items():
        assert found[url] == expected, url
