"""The two fingerprints of a page's text: SHA-256 for exact copies, simhash for near ones."""

from __future__ import annotations

import hashlib

from crawler.dedup.simhash import text_fingerprint
from crawler.extract.text import normalize_whitespace


def content_fingerprints(text: str) -> tuple[str, int, int]:
    """(SHA-256 hex of the whitespace-normalised text, its 64-bit simhash, its word count)."""
    normal = normalize_whitespace(text)
    digest = hashlib.sha256(normal.encode("utf-8")).hexdigest()
    return digest, text_fingerprint(normal), normal.count(" ") + 1 if normal else 0
