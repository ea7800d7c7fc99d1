"""One fetched HTML response as a :class:`~crawler.items.Page`: what it says and how it came."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from w3lib.url import safe_url_string

from crawler.extract.html import extract_head, extract_hrefs, extract_text, parse_html
from crawler.extract.main import MainText, extract_main
from crawler.extract.meta import page_language, published_date
from crawler.items import Page
from crawler.store.wire import WIRE_META

if TYPE_CHECKING:
    from resiliparse.parse.html import HTMLTree
    from scrapy.http import HtmlResponse, Response

    from crawler.stages import StageClock


#: What ``TEXT_EXTRACTION`` takes: the page's main content (``crawler.extract.main``), or
#: all its visible text but navigation, header, footer and sidebars.
TEXT_MODES = ("main", "visible")


def page_text(tree: HTMLTree, mode: str) -> MainText:
    """The text stored for a page parsed as ``tree``, as ``TEXT_EXTRACTION`` says."""
    if mode == "visible":
        return MainText(extract_text(tree))
    if mode != "main":
        raise ValueError(f"TEXT_EXTRACTION takes one of {', '.join(TEXT_MODES)}, not {mode!r}")
    return extract_main(tree)


def extract_page(response: HtmlResponse, url: str, clock: StageClock,
                 text_mode: str = "main") -> tuple[Page, list[str], str]:
    """(the page of ``response`` under its normalised ``url``, its hrefs, the URL they are
    relative to) from one parse of its body; stages ``parse``, ``links``, ``text``,
    ``meta`` (language and publication date) timed.
    The text is ``text_mode``'s (``TEXT_MODES``); a main text that fell back to the
    visible text counts ``text/fallback``. The links and head are read before the text:
    the main-content pass marks the elements it skips in the tree."""
    start = clock.now()
    tree = parse_html(response.body, response.encoding)
    start = clock.add("parse", start)
    hrefs = extract_hrefs(tree)
    head = extract_head(tree)
    base = safe_url_string(urljoin(response.url, head.base), response.encoding) if head.base else response.url
    start = clock.add("links", start)
    text = page_text(tree, text_mode)
    start = clock.add("text", start)
    if text.fallback:
        clock.stats.inc_value("text/fallback")
    content_language = response.headers.get(b"Content-Language")
    lang = page_language(tree, content_language.decode("latin-1") if content_language else None, text.text)
    published = published_date(tree)
    clock.add("meta", start)
    page = Page(
        url=url,
        html=response.body,
        text=text.text,
        title=head.title,
        content_type=(response.headers.get(b"Content-Type") or b"").decode("latin-1"),
        encoding=response.encoding,
        links=len(hrefs),
        canonical=head.canonical,
        meta_robots=head.robots,
        lang=lang,
        published=published,
        **_how_it_came(response),
    )
    return page, hrefs, base


def not_modified_page(response: Response, url: str) -> Page:
    """The page of a 304 answer to a revisit: no body, its text hash the last visit's."""
    page = Page(url=url, html=b"", text="", **_how_it_came(response))
    page.content_sha256 = (page.last_visit or {}).get("sha")
    return page


def _how_it_came(response: Response) -> dict:
    """The fields of a page that its response and request tell, body apart."""
    headers = response.headers
    etag = headers.get(b"ETag")
    last_modified = headers.get(b"Last-Modified")
    priority = response.meta.get("sitemap_priority")
    return {
        "status": response.status,
        "fetched_at": time.time(),
        "depth": response.meta.get("depth", 0),
        "http_headers": [(k.decode("latin-1"), v.decode("latin-1"))
                         for k, values in headers.items() for v in values],
        "etag": etag.decode("latin-1") if etag else None,
        "last_modified": last_modified.decode("latin-1") if last_modified else None,
        "sitemap_lastmod": response.meta.get("sitemap_lastmod"),
        "sitemap_priority": priority if isinstance(priority, float) else None,
        "last_visit": response.meta.get("revisit"),
        "wire": response.meta.get(WIRE_META),
    }
