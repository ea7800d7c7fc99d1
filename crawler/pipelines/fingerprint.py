"""Content fingerprints of each page's text."""

from __future__ import annotations

import hashlib
from typing import Any

from crawler.items import Page
from crawler.text import normalize_whitespace


class ContentHashPipeline:
    """Sets ``Page.content_sha256``: SHA-256 (hex) of the page's whitespace-normalised
    text, so pages that differ only in markup or spacing hash alike. Other items
    pass through untouched."""

    def process_item(self, item: Any) -> Any:
        if isinstance(item, Page):
            text = normalize_whitespace(item.text).encode("utf-8")
            item.content_sha256 = hashlib.sha256(text).hexdigest()
        return item
