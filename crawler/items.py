"""The page item the ``web`` spider yields and the pipelines fill in and store."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Page:
    """One fetched HTML page.

    The spider fills what the response tells; ``ContentHashPipeline`` adds
    ``content_sha256``; ``PageStorePipeline`` writes it and adds ``stored``
    (where its bytes are).
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
    etag: str | None = None
    last_modified: str | None = None
    links: int = 0  # links found on the page, followed or not
    sitemap_lastmod: str | None = None  # <lastmod> of the sitemap entry that led here
    content_sha256: str | None = None
    stored: dict | None = None
