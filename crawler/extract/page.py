"""One fetched HTML response as a :class:`~crawler.items.Page`: what it says and how it came."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from lxml import etree

from crawler.extract.text import extract_text, extract_title
from crawler.items import Page

if TYPE_CHECKING:
    from scrapy.http import HtmlResponse

#: Every link of a page, as the web spider follows them.
HREFS = etree.XPath("//a/@href | //area/@href", smart_strings=False)


def page_from_response(response: HtmlResponse, url: str, links: int) -> Page:
    """The page of ``response`` under its normalised ``url``, with ``links`` hrefs found.

    Reads the lxml tree Scrapy already parsed (``response.selector``), so a spider that
    also selects from the response parses it once.
    """
    root = response.selector.root
    parsed = isinstance(root, etree._Element)
    headers = response.headers
    etag = headers.get(b"ETag")
    last_modified = headers.get(b"Last-Modified")
    return Page(
        url=url,
        status=response.status,
        fetched_at=time.time(),
        depth=response.meta.get("depth", 0),
        html=response.body,
        text=extract_text(root) if parsed else "",
        title=extract_title(root) if parsed else "",
        content_type=(headers.get(b"Content-Type") or b"").decode("latin-1"),
        encoding=response.encoding,
        http_headers=[(k.decode("latin-1"), v.decode("latin-1"))
                      for k, values in headers.items() for v in values],
        etag=etag.decode("latin-1") if etag else None,
        last_modified=last_modified.decode("latin-1") if last_modified else None,
        links=links,
        sitemap_lastmod=response.meta.get("sitemap_lastmod"),
    )
