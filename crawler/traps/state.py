"""One worker's view of the traps: the rules of ``params`` and ``content`` over the
shared :class:`~crawler.traps.store.TrapStore`, with a short-lived cache per host."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from crawler.dedup.same import SameText
from crawler.traps.content import Probe, is_soft_404, should_demote
from crawler.traps.params import LEARN, strip_params, variants, verdict
from crawler.traps.store import TrapStore
from crawler.urls.keys import fingerprint, url_host

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrapSettings:
    """``TRAP_PARAM_EVIDENCE``, ``TRAP_DUPLICATE_WINDOW``, ``TRAP_DUPLICATE_RATE``,
    ``TRAP_STATE_REFRESH`` and the content-seen distances the probe is compared with."""

    evidence: int = 3
    window: int = 50
    rate: float = 0.5
    refresh: float = 10.0
    max_distance: int = 3
    min_words: int = 20


def _key(url: str) -> str:
    return f"{fingerprint(url):016x}"


#: The value a parameter has in the URL without it: a NUL, which a normalised URL never holds.
ABSENT = "\x00"


class Traps:
    """Learns a host's irrelevant parameters, knows its probe's answer, watches its
    duplicate rate. What other workers learned is read again after ``refresh`` seconds.

    Stats: ``traps/params_learned``, ``traps/params_relevant``,
    ``traps/dropped/learned_params`` (a URL whose learned form was fetched),
    ``traps/probes``, ``traps/soft_404_hosts``, ``traps/soft_404``, ``traps/hosts_demoted``.
    """

    def __init__(self, store: TrapStore, stats: Any, settings: TrapSettings | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.stats = stats
        self.settings = settings or TrapSettings()
        self.same = SameText(self.settings.max_distance, self.settings.min_words)
        self.clock = clock
        self._params: dict[str, tuple[float, frozenset[str], frozenset[str]]] = {}
        self._probes: dict[str, tuple[float, Probe | None]] = {}
        self._probed: set[str] = set()
        self._demoted: set[str] = set()

    # ---------------------------------------------------------------- parameters

    def host_params(self, host: str) -> tuple[frozenset[str], frozenset[str]]:
        """(learned, settled) parameters of ``host``, from the cache while fresh."""
        now = self.clock()
        cached = self._params.get(host)
        if cached is None or cached[0] <= now:
            cached = (now + self.settings.refresh, self.store.learned(host), self.store.settled(host))
            self._params[host] = cached
        return cached[1], cached[2]

    def known_learned(self, host: str) -> tuple[frozenset[str], bool]:
        """The parameters of ``host`` learned as this worker last read them, and whether
        that read is still fresh; no store call, so a caller on the reactor never waits."""
        cached = self._params.get(host)
        if cached is None:
            return frozenset(), False
        return cached[1], cached[0] > self.clock()

    def rewrite(self, url: str) -> str | None:
        """Normalised ``url`` without its host's learned parameters; None when that form
        was already fetched (with some value of a learned parameter). A ``url`` without
        any (stripped already, or linked so) is checked against every learned one."""
        host = url_host(url)
        learned = self.host_params(host)[0]
        if not learned:
            return url
        stripped = strip_params(url, learned)
        names = learned if stripped == url else {v.name for v in variants(url)} & learned
        rest = _key(stripped)
        if any(self.store.seen_without(host, name, rest) for name in sorted(names)):
            self.stats.inc_value("traps/dropped/learned_params")
            return None
        return stripped

    def observe(self, url: str, digest: str, simhash: int | None = None, words: int = 0) -> None:
        """The page at ``url`` has text ``digest`` (SHA-256 hex; ``simhash`` and
        ``words`` for the near test): evidence for each of its parameters not settled
        yet; a parameter with enough of it is settled (logged once). A page without
        parameters (a seed ``/`` before its ``/?sid=...`` links) is kept as the value
        ``ABSENT`` of every parameter later met over it, so it counts as evidence too."""
        token = self.same.print(digest, simhash, words).token()
        if not self.settings.evidence:
            return
        host = url_host(url)
        learned, settled = self.host_params(host)
        found_any = False
        for v in variants(url):
            found_any = True
            if v.name in settled:
                continue
            rest = _key(strip_params(v.rest, learned))
            bare = self.store.bare(host, rest)
            if bare is not None:
                self.store.observe(host, v.name, rest, ABSENT, bare, self.settings.evidence)
            texts = self.store.observe(host, v.name, rest, v.value, token, self.settings.evidence)
            found = verdict(texts, self.settings.evidence, self.same.same_tokens)
            if found is None:
                continue
            settled_here = self.store.settle(host, v.name, found == LEARN)
            self._params.pop(host, None)
            self.host_params(host)  # read again now: links parsed next (on the reactor) use it
            if not settled_here:
                continue  # another worker settled it first
            if found == LEARN:
                self.stats.inc_value("traps/params_learned")
                logger.info("Host %s: parameter %r learned as irrelevant (%d values, one text); "
                            "it is removed from the host's URLs", host, v.name, len(texts))
            else:
                self.stats.inc_value("traps/params_relevant")
        if not found_any:
            self.store.keep_bare(host, _key(url), token)

    # ---------------------------------------------------------------- soft-404 probe

    def probed(self, host: str) -> bool:
        """Whether this worker asked for ``host``'s probe already (no store call)."""
        return host in self._probed

    def claim_probe(self, host: str) -> bool:
        """Whether this worker should fetch ``host``'s probe: once per host per crawl."""
        if host in self._probed:
            return False
        self._probed.add(host)
        claimed = self.store.claim_probe(host)
        if claimed:
            self.stats.inc_value("traps/probes")
        return claimed

    def probe_answered(self, host: str, probe: Probe) -> None:
        """The host answered 2xx at its probe path: pages like that text are soft 404s."""
        self.store.set_probe(host, probe)
        self._probes[host] = (float("inf"), probe)
        self.stats.inc_value("traps/soft_404_hosts")
        logger.info("Host %s answers 200 at a nonsense path (%s): pages with that text are soft 404s",
                    host, probe.url)

    def soft_404(self, url: str, sha256: str, simhash: int, words: int) -> Probe | None:
        """The probe answer that page ``url`` repeats, if it does."""
        host = url_host(url)
        now = self.clock()
        cached = self._probes.get(host)
        if cached is None or cached[0] <= now:
            probe = self.store.probe(host)
            cached = self._probes[host] = (float("inf") if probe else now + self.settings.refresh, probe)
        probe = cached[1]
        if probe is None or url == probe.url:
            return None
        if not is_soft_404(self.same.print(sha256, simhash, words), probe, self.same):
            return None
        self.stats.inc_value("traps/soft_404")
        return probe

    # ---------------------------------------------------------------- demotion

    def page_seen(self, url: str, duplicate: bool) -> bool:
        """Count a page of the host as a duplicate or not; True when the host is to be
        (re)demoted: its duplicate rate demotes it, or, demoted, it still gave a new
        page, so its budget keeps a margin ahead of its last new page."""
        s = self.settings
        if not s.window:
            return False
        host = url_host(url)
        recent = self.store.record_page(host, duplicate, s.window)
        if host in self._demoted:
            return not duplicate
        if not should_demote(recent, s.window, s.rate):
            return False
        self._demoted.add(host)
        if self.store.demote(host):  # once per crawl, whichever worker saw it first
            self.stats.inc_value("traps/hosts_demoted")
            logger.info("Host %s demoted: %d of its last %d pages were duplicates", host, sum(recent),
                        len(recent))
        return True
