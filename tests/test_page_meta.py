"""A page's language and publication date, as the stored record gives them."""

from __future__ import annotations

import pytest
from scrapy.http import HtmlResponse, Request
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from crawler.extract.html import parse_html
from crawler.extract.meta import iso_date, page_language, published_date
from crawler.extract.page import extract_page
from crawler.pipelines.store import page_record
from crawler.stages import StageClock

GERMAN = ("Der Gemeinderat traf sich am Dienstagabend, um über den Haushalt, die neue Bibliothek "
          "und den Zustand der Straßen zu sprechen, über die sich die Bewohner seit Jahren beklagen.")


@pytest.mark.parametrize("html,header,expected", [
    (b'<html lang="en-GB"><body><p>x</p></body></html>', None, "en-gb"),
    (b'<html lang="fr"><body><p>x</p></body></html>', "de", "fr"),  # the page's own word first
    (b"<html><body><p>x</p></body></html>", "pt-BR, en", "pt-br"),
    (b'<html lang="not a tag"><body><p>x</p></body></html>', None, "de"),  # detected
    (b"<html><body><p>x</p></body></html>", None, "de"),
])
def test_language_declared_else_detected(html, header, expected):
    assert page_language(parse_html(html), header, GERMAN) == expected


def test_no_language_without_letters():
    assert page_language(parse_html(b"<p>1 2 3</p>"), None, "1 2 3") is None


@pytest.mark.parametrize("head,expected", [
    ('<meta property="article:published_time" content="2019-11-19T07:03:25Z">', "2019-11-19T07:03:25+00:00"),
    ('<meta itemprop="datePublished" content="2020-02-03">', "2020-02-03"),
    ('<meta name="date" content="Tue, 19 Nov 2019 10:31:00 -0600">', "2019-11-19T10:31:00-06:00"),
    ('<script type="application/ld+json">{"@context": "https://schema.org", "@graph": [{"@type": "WebPage"},'
     ' {"@type": "NewsArticle", "datePublished": "2018-08-25T15:24:00+09:00"}]}</script>',
     "2018-08-25T15:24:00+09:00"),
    ('<script type="application/ld+json">{not json</script>', None),
    ('<meta name="date" content="last Tuesday">', None),
    ("", None),
])
def test_published_date_from_metadata(head, expected):
    page = f"<html><head>{head}</head><body><p>Text</p></body></html>".encode()
    assert published_date(parse_html(page)) == expected


def test_published_date_from_a_time_element():
    page = (b'<article><time itemprop="datePublished" datetime="2021-05-06T08:00:00+02:00">'
            b"6 May</time></article>")
    assert published_date(parse_html(page)) == "2021-05-06T08:00:00+02:00"


def test_iso_date_forms():
    assert iso_date("2019-11-19") == "2019-11-19"
    assert iso_date(" 2019-11-19T07:03:25.120Z ") == "2019-11-19T07:03:25.120000+00:00"
    assert iso_date("19/11/2019") is None


def test_the_record_has_lang_and_published():
    body = (b'<html lang="de"><head><meta property="article:published_time" content="2024-03-01">'
            b"</head><body><article><p>" + GERMAN.encode() + b"</p></article></body></html>")
    response = HtmlResponse("http://x.example/a", body=body, request=Request("http://x.example/a"),
                            encoding="utf-8")
    page = extract_page(response, response.url, StageClock(MemoryStatsCollector(get_crawler())))[0]
    record = page_record(page, {}, None, None)
    assert record["lang"] == "de" and record["published"] == "2024-03-01"
