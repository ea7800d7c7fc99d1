"""From a page's raw hrefs to the URLs worth a request: the per-link hot path.

A documentation page carries about 300 links and nearly all of them point to
URLs already seen. So a link is first turned into a *key* by string concatenation
(its absolute form before normalisation, :func:`crawler.urls.absolute_reference`,
less its fragment),
and a key already handled costs one set lookup: no parsing, no normalisation, no
Request. Only new keys are normalised, fingerprinted, checked
against scope and trap rules, and returned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from crawler.urls.keys import fingerprint, registered_domain, url_host
from crawler.urls.references import absolute_reference
from crawler.urls.rejects import rejection_reason
from crawler.urls.traps import has_repeated_segments

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

SCOPES = ("host", "domain", "all")


class Scope:
    """Which hosts a crawl may follow links to.

    ``host``: the seeds' hosts, with or without a leading ``www.``; ``domain``: any
    host under the seeds' registered domains (eTLD+1); ``all``: every host.
    """

    def __init__(self, mode: str, seed_hosts: Iterable[str]) -> None:
        if mode not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, not {mode!r}")
        self.mode = mode
        hosts = set(seed_hosts)
        if mode == "host":
            self._allowed = {h.removeprefix("www.") for h in hosts}
        else:
            self._allowed = {registered_domain(h) for h in hosts}

    def add_host(self, host: str) -> None:
        """Widen the scope to a seed host that arrived later."""
        if self.mode == "host":
            self._allowed.add(host.removeprefix("www."))
        elif self.mode == "domain":
            self._allowed.add(registered_domain(host))

    def allows(self, host: str) -> bool:
        if self.mode == "all":
            return True
        if self.mode == "host":
            return host.removeprefix("www.") in self._allowed
        return registered_domain(host) in self._allowed


class _BoundedSet:
    """A set that forgets its oldest generation when it grows past ``size``.

    Used for caches in front of the authoritative seen set: forgetting costs a
    repeated check, never a wrong answer.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.current: set = set()
        self.previous: set = set()

    def __contains__(self, item: object) -> bool:
        return item in self.current or item in self.previous

    def add(self, item: object) -> None:
        if len(self.current) >= self.size:
            self.previous, self.current = self.current, set()
        self.current.add(item)


class LinkFollower:
    """Turns a page's hrefs into new URLs that pass scope and trap rules.

    Stats (by reason): ``links/new``, ``urls/rejected/<reason>`` (not http or
    https, a malformed host, port or IPv6 literal: :func:`rejection_reason`),
    ``links/dropped/offsite``, ``traps/dropped/url_length``,
    ``traps/dropped/repeated_segments``. ``rewrite`` (the host's learned parameters
    removed; None: drop) applies to each normalised URL.
    """

    def __init__(
        self,
        normalize: Callable[[str], str | None],
        scope: Scope,
        stats: StatsCollector,
        *,
        max_url_length: int = 2048,
        segment_repeats: int = 3,
        cache_size: int = 500_000,
        rewrite: Callable[[str], str | None] | None = None,
    ) -> None:
        self._normalize = normalize
        self.rewrite = rewrite
        self.scope = scope
        self.stats = stats
        self.max_url_length = max_url_length
        self.segment_repeats = segment_repeats
        self._keys = _BoundedSet(cache_size)
        self._fingerprints = _BoundedSet(cache_size)

    def forget(self) -> None:
        """Forget every URL handled: the frontier lost some it was sent (a rollback)."""
        self._keys = _BoundedSet(self._keys.size)
        self._fingerprints = _BoundedSet(self._fingerprints.size)

    def mark_seen(self, url: str) -> None:
        """Remember a normalised URL scheduled elsewhere (a seed), so links to it are skipped."""
        self.claim(url)

    def claim(self, url: str) -> bool:
        """Remember normalised ``url`` as handled; False if it already was."""
        fp = fingerprint(url)
        if fp in self._fingerprints:
            return False
        self._fingerprints.add(fp)
        return True

    def new_links(self, base_url: str, hrefs: Iterable[str]) -> list[str]:
        """Normalised URLs from ``hrefs`` this follower has not returned before."""
        keys = self._keys
        found = []
        # Each distinct href once (a documentation page repeats 40% of its hrefs): a
        # repeat gives the same key, already handled by then.
        for href in dict.fromkeys(map(str.strip, hrefs)):
            key = absolute_reference(href, base_url)
            if key is None:
                continue
            cut = key.find("#")
            if cut > 0 and key[cut - 1] > " ":
                # Links to the sections of a page are one key: normalising drops the fragment,
                # and the text before it ends in neither space nor control character, which
                # normalising would strip were the fragment gone first.
                key = key[:cut]
            if key in keys:
                continue
            keys.add(key)
            url = self.accept(key)
            if url is not None:
                found.append(url)
        return found

    def accept(self, key: str) -> str | None:
        """An absolute URL (a link's key, or a sitemap's URL): its normal form if new,
        in scope and trap-free, else None."""
        url = self._normalize(key)
        if url is None:
            self.stats.inc_value(f"urls/rejected/{rejection_reason(key)}")
            return None
        if self.rewrite is not None and (url := self.rewrite(url)) is None:
            return None
        fp = fingerprint(url)
        if fp in self._fingerprints:
            return None
        self._fingerprints.add(fp)
        reason = self._drop_reason(url)
        if reason:
            self.stats.inc_value(reason)
            return None
        self.stats.inc_value("links/new")
        return url

    def _drop_reason(self, url: str) -> str | None:
        if not self.scope.allows(url_host(url)):
            return "links/dropped/offsite"
        if self.max_url_length and len(url) > self.max_url_length:
            return "traps/dropped/url_length"
        if self.segment_repeats and has_repeated_segments(url, self.segment_repeats):
            return "traps/dropped/repeated_segments"
        return None
