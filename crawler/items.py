"""The page item the ``web`` spider yields and the pipelines fill in and store."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field


def base64_text(data: bytes) -> str:
    """A page's bytes as feeds can carry them (JSON, CSV, XML): base64, ASCII."""
    return base64.b64encode(data).decode("ascii")


@dataclass
class Page:
    """One fetched HTML page.

    The spider fills what the response tells; ``ContentSeenMiddleware`` adds the
    content fingerprints and ``duplicate_of`` (``ContentHashPipeline`` the
    fingerprints alone, where that middleware is off); ``PageStorePipeline`` writes
    it and adds ``stored`` (its record, with where its bytes are). In feed exports
    (``-o pages.jsonl``) ``html`` is base64 text.
    """

    url: str
    status: int
    fetched_at: float  # seconds since the epoch, UTC
    depth: int
    html: bytes = field(metadata={"serializer": base64_text})
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
    # What the page waits for before it is safe: its files' uploads (S3) or its fsync
    # batch (a local disk); its URL is acked only once they are (crawler.signals.store_safe).
    awaiting_store: list[str] = field(default_factory=list)
    lang: str | None = None  # declared (<html lang>, Content-Language), else detected from the text
    published: str | None = None  # ISO 8601 date the page states for itself (metadata, JSON-LD)


@dataclass
class ProbeAnswer:
    """What a host answered 2xx at its soft-404 probe path: the URL and its text.
    Consumed by ``TrapsMiddleware``; never a page."""

    url: str
    text: str
