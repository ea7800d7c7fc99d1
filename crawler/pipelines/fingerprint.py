"""Content fingerprints of each page's text, where ContentSeenMiddleware is off."""

from __future__ import annotations

from typing import Any

from crawler.dedup.fingerprints import content_fingerprints
from crawler.items import Page


class ContentHashPipeline:
    """Sets ``Page.content_sha256`` (SHA-256 hex of the whitespace-normalised text, so
    pages that differ only in markup or spacing hash alike) and ``Page.simhash``,
    unless ``ContentSeenMiddleware`` already did. Other items pass through untouched."""

    def process_item(self, item: Any) -> Any:
        if isinstance(item, Page) and item.content_sha256 is None:
            item.content_sha256, item.simhash, _ = content_fingerprints(item.text)
        return item
