"""The page item the ``web`` spider yields and the pipelines fill in and store, and the
record a feed (``-o pages.jsonl``) carries for it (docs/items.md)."""

from __future__ import annotations

import base64
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

from itemadapter import ItemAdapter
from itemadapter.adapter import AdapterInterface

if TYPE_CHECKING:
    from crawler.store.wire import Exchange


def base64_text(data: bytes) -> str:
    """A page's bytes as feeds can carry them (JSON, CSV, XML): base64, ASCII."""
    return base64.b64encode(data).decode("ascii")


@dataclass
class Page:
    """One fetched HTML page.

    The spider fills what the response tells; ``ContentSeenMiddleware`` adds the
    content fingerprints and ``duplicate_of`` (``ContentHashPipeline`` the
    fingerprints alone, where that middleware is off); ``PageStorePipeline`` writes
    it and adds ``stored`` (its record, with where its bytes are). Feeds and Scrapy's
    tools see it through :class:`PageAdapter`: the stored record's names and formats.
    """

    url: str
    status: int
    fetched_at: float  # seconds since the epoch, UTC
    depth: int
    html: bytes
    text: str
    title: str = ""
    content_type: str = ""
    encoding: str = ""
    http_headers: list[tuple[str, str]] = field(default_factory=list)  # as received
    etag: str | None = None
    last_modified: str | None = None
    links: int = 0  # links found on the page, followed or not
    sitemap_lastmod: str | None = None  # <lastmod> of the sitemap entry that led here
    canonical: str | None = None  # rel=canonical (Link header, else <link>), normalised
    fetched_url: str | None = None  # the URL fetched, when the page is stored under its canonical
    meta_robots: str | None = None  # <meta name=robots content>, as written
    content_sha256: str | None = None
    simhash: int | None = None  # 64-bit simhash of the text's word 3-grams
    duplicate_of: str | None = None  # URL of the earlier page with the same or near text
    duplicate_kind: str | None = None  # "exact", "near" or "soft_404"
    soft_404: bool = False  # its text is its host's answer for a nonsense path
    sitemap_priority: float | None = None  # <priority> of the sitemap entry that led here
    # Freshness: the state kept from the last visit (request meta "revisit"), how this visit
    # compares (first, changed, unchanged, not_modified), and the state for the next one.
    last_visit: dict | None = None
    revisit: str | None = None
    revisit_state: dict | None = None
    stored: dict | None = None
    # The fetch as it went over the wire (WireCaptureMiddleware), for its WARC records;
    # left out of feed exports, which carry ``html``.
    wire: Exchange | None = field(default=None, repr=False, metadata={"serializer": lambda _: None})
    # Whether a feed carries ``html`` (base64): ``FEED_PAGE_HTML``, set by the spider.
    feed_html: bool = False
    lang: str | None = None  # declared (<html lang>, Content-Language), else detected from the text
    published: str | None = None  # ISO 8601 date the page states for itself (metadata, JSON-LD)


# Page fields a feed leaves out: the frontier's and the store's bookkeeping, the fetch as it
# went over the wire, and ``html`` (there only when ``feed_html`` asks for it).
BOOKKEEPING = frozenset({"last_visit", "revisit_state", "stored", "feed_html", "html", "wire"})


def feed_record(page: Page) -> dict[str, Any]:
    """What a feed carries for ``page``: the stored record's names and formats (ISO 8601
    UTC times, a hex simhash), described by docs/page-item.schema.json."""
    from crawler.pipelines.store import iso_time  # the stored record's format; it imports Page

    record = {f.name: getattr(page, f.name) for f in fields(page) if f.name not in BOOKKEEPING}
    record["fetched_at"] = iso_time(page.fetched_at)
    record["simhash"] = None if page.simhash is None else f"{page.simhash:016x}"
    record["http_headers"] = [list(pair) for pair in page.http_headers]
    state = page.revisit_state
    record["next_visit"] = None if state is None else iso_time(state["next_visit"])
    record["revisit_interval"] = None if state is None else state["interval"]
    if page.feed_html:
        record["html"] = base64_text(page.html)
    return record


class PageAdapter(AdapterInterface):
    """``ItemAdapter`` of a :class:`Page`: its :func:`feed_record`, which is what Scrapy's
    feed exporters and ``scrapy parse`` read. A field set through it is set on the page."""

    def __init__(self, item: Any) -> None:
        super().__init__(item)
        self.record = feed_record(item)

    @classmethod
    def is_item_class(cls, item_class: type) -> bool:
        return issubclass(item_class, Page)

    @classmethod
    def get_field_names_from_class(cls, item_class: type) -> list[str] | None:
        return list(feed_record(Page("", 0, 0.0, 0, b"", "")))

    def get_field_meta(self, field_name: str) -> MappingProxyType:
        return MappingProxyType({})

    def __getitem__(self, field_name: str) -> Any:
        return self.record[field_name]

    def __setitem__(self, field_name: str, value: Any) -> None:
        if field_name in BOOKKEEPING or not hasattr(self.item, field_name):
            raise KeyError(f"Page does not support field: {field_name}")
        setattr(self.item, field_name, value)
        self.record = feed_record(self.item)

    def __delitem__(self, field_name: str) -> None:
        raise KeyError(f"Page fields cannot be deleted: {field_name}")

    def __iter__(self) -> Iterator[str]:
        return iter(self.record)

    def __len__(self) -> int:
        return len(self.record)


# Ahead of itemadapter's dataclass adapter; it sees Page items only.
cast("deque[type[AdapterInterface]]", ItemAdapter.ADAPTER_CLASSES).appendleft(PageAdapter)


@dataclass
class ProbeAnswer:
    """What a host answered 2xx at its soft-404 probe path: the URL and its text.
    Consumed by ``TrapsMiddleware``; never a page."""

    url: str
    text: str
