"""The two fingerprints of a page's text: SHA-256 for exact copies, simhash for near ones."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from crawler.dedup.simhash import content_fingerprint
from crawler.extract.html import normalize_whitespace

if TYPE_CHECKING:
    from crawler.stages import StageClock


def content_fingerprints(text: str, clock: StageClock | None = None) -> tuple[str, int, int]:
    """(SHA-256 hex of the whitespace-normalised text, its 64-bit simhash, its word count);
    the simhash weighs the text's paragraphs (``content_fingerprint``: it needs the line
    breaks); with ``clock``, stages ``sha256`` and ``simhash`` timed."""
    start = clock.now() if clock else 0
    normal = normalize_whitespace(text)
    digest = hashlib.sha256(normal.encode("utf-8")).hexdigest()
    if clock:
        start = clock.add("sha256", start)
    simhash = content_fingerprint(text)
    if clock:
        clock.add("simhash", start)
    return digest, simhash, normal.count(" ") + 1 if normal else 0
