"""The same article in two sites' templates is a near-duplicate; two articles in one are not.

Four real pages (``data/syndication``); each article's content transplanted into two of
the others' templates (``syndication.py``). Pages go through the crawler's own path: the
page's text as the spider extracts it, then ``ContentSeenMiddleware``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from scrapy.http import HtmlResponse, Request
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler
from syndication import article, pairs

from crawler import defaults
from crawler.dedup.near import hamming
from crawler.dedup.simhash import text_fingerprint
from crawler.extract.page import extract_page
from crawler.middlewares.content_seen import ContentSeenMiddleware
from crawler.stages import StageClock

FIXTURE = Path(__file__).parent / "data" / "syndication"


def _stats() -> MemoryStatsCollector:
    return MemoryStatsCollector(get_crawler())


def fixture_pairs() -> tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]:
    truth = json.loads((FIXTURE / "ground-truth.json").read_text(encoding="utf-8"))
    articles = []
    for name in sorted(truth):
        body = gzip.decompress((FIXTURE / f"{name}.html.gz").read_bytes())
        response = HtmlResponse(truth[name]["url"], body=body)
        found = article(name, response.text, truth[name]["articleBody"])
        assert found is not None, name
        articles.append(found)
    return pairs(articles, len(articles))


SYNDICATED, CONTROL = fixture_pairs()


def page(body: bytes, url: str, mode: str = "main"):
    response = HtmlResponse(url, body=body, request=Request(url), encoding="utf-8")
    return extract_page(response, url, StageClock(_stats()), mode)[0]


def content_seen() -> ContentSeenMiddleware:
    return ContentSeenMiddleware(_stats(), defaults.SIMHASH_MAX_DISTANCE, defaults.SIMHASH_MIN_WORDS)


@pytest.mark.parametrize("index", range(len(SYNDICATED)))
def test_one_article_in_two_templates_is_a_near_duplicate(index):
    first, second = SYNDICATED[index]
    middleware = content_seen()
    assert not middleware.check(page(first, "http://one.example/story"))
    copy = page(second, "http://two.example/news/story")
    assert middleware.check(copy)
    assert copy.duplicate_of == "http://one.example/story" and copy.duplicate_kind in ("exact", "near")


@pytest.mark.parametrize("index", range(len(CONTROL)))
def test_two_articles_in_one_template_are_not(index):
    first, second = CONTROL[index]
    middleware = content_seen()
    assert not middleware.check(page(first, "http://one.example/a"))
    assert not middleware.check(page(second, "http://one.example/b"))


def test_the_whole_visible_text_with_the_plain_simhash_misses_them():
    # What the crawler did before: every pair is more than 3 bits apart.
    distances = [hamming(text_fingerprint(page(a, "http://a.example/", "visible").text),
                         text_fingerprint(page(b, "http://b.example/", "visible").text))
                 for a, b in SYNDICATED]
    assert min(distances) > defaults.SIMHASH_MAX_DISTANCE
