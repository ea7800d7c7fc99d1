"""Traps told by content: the soft-404 probe and duplicate-rate demotion. Pure rules, no I/O."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from crawler.dedup.same import SameText, TextPrint
from crawler.traps.params import same_resource


def probe_url(origin: str, token: str | None = None) -> str:
    """A path of ``origin`` (``scheme://host[:port]``) that no site serves: a random
    nonsense name, so a 2xx answer there is the host's soft 404."""
    return f"{origin}/{token or secrets.token_hex(12)}-no-such-page.html"


@dataclass(frozen=True)
class Probe:
    """What a host answered 2xx at its probe path: the text's SHA-256 (hex) and simhash."""

    url: str
    sha256: str
    simhash: int


def is_soft_404(page: TextPrint, probe: Probe, same: SameText) -> bool:
    """A page whose text is the probe's (the crawl's one test of the same page) is the
    host's "not found" answer."""
    return same.same(page, TextPrint(probe.sha256, probe.simhash))


def counts_for_demotion(url: str, duplicate_of: str | None, kind: str | None) -> bool:
    """Whether a page is a duplicate that speaks against its host: a copy under another
    path. Soft 404s and copies that differ in parameters only are the other traps'
    business (the probe, learned parameters)."""
    return duplicate_of is not None and kind in ("exact", "near") and not same_resource(url, duplicate_of)


def should_demote(recent: Sequence[bool], window: int, rate: float) -> bool:
    """Whether a host whose last pages were duplicates (True) or not, newest first, is
    demoted: a full ``window`` of pages with more than ``rate`` of them duplicates."""
    last = recent[:window]
    return len(last) >= window > 0 and sum(last) > rate * window

