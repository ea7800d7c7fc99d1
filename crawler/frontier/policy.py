"""Politeness, backoff, budget and priority rules of the frontier: pure code, no I/O.

Every backend (embedded, Redis) keeps per-host state and asks this module what to
do with it, so the rules are written and tested once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from crawler import defaults

#: Statuses by which a server says "too much": they double the host's backoff.
BACKOFF_STATUSES = frozenset({429, 503})


def parse_retry_after(value: str | bytes | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After header (RFC 9110 10.2.3: delay-seconds or
    an HTTP-date), or None when absent or unreadable. ``now`` is the Unix time."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)


@dataclass
class HostTimes:
    """What the policy needs to know of a host, kept by the backend."""

    backoff: float = 0.0  # current backoff, seconds (0: none)
    crawl_delay: float = 0.0  # robots.txt Crawl-delay when honoured (0: none)
    last_gap: float = 0.0  # the gap set after the previous fetch


@dataclass(frozen=True)
class PolitenessPolicy:
    """The gap after a fetch from a host, and how 429/503 grow it.

    gap = max(min(max_delay, max(min_delay, delay_factor x fetch seconds)),
              crawl_delay, backoff)

    ``max_delay`` caps only the adaptive part: a host that takes 10 s to answer is
    still visited every 30 s (Heritrix's default cap), while a Crawl-delay or a
    server's own Retry-After is honoured above it (up to ``backoff_max``).
    A 429 or 503 doubles the backoff (the first step is twice the current gap), or
    sets it to Retry-After when that is longer; any other response resets it. A
    fetch that failed without a response (timeout, refused, reset) counts as a 503.
    """

    min_delay: float = defaults.POLITENESS_MIN_DELAY
    delay_factor: float = defaults.POLITENESS_DELAY_FACTOR
    max_delay: float = defaults.POLITENESS_MAX_DELAY
    backoff_max: float = defaults.POLITENESS_BACKOFF_MAX

    def adaptive_gap(self, fetch_seconds: float) -> float:
        return min(self.max_delay, max(self.min_delay, self.delay_factor * max(0.0, fetch_seconds)))

    def after_fetch(
        self, host: HostTimes, fetch_seconds: float, status: int | None, retry_after: float | None
    ) -> float:
        """Update ``host`` for a finished fetch; return the gap before its next fetch."""
        if status is None or status in BACKOFF_STATUSES:
            doubled = 2 * host.backoff if host.backoff else 2 * max(host.last_gap, self.min_delay)
            host.backoff = min(self.backoff_max, max(doubled, retry_after or 0.0))
        else:
            host.backoff = 0.0
        gap = max(self.adaptive_gap(fetch_seconds), host.crawl_delay, host.backoff)
        host.last_gap = gap
        return gap


@dataclass(frozen=True)
class HostBudget:
    """At most ``pages`` fetches per host in a crawl (0: no limit), so one host
    cannot eat the crawl."""

    pages: int = defaults.HOST_PAGE_BUDGET

    def exhausted(self, fetched: int) -> bool:
        return bool(self.pages) and fetched >= self.pages

    def demoted(self, fetched: int, margin: int) -> HostBudget:
        """The own budget of a host demoted after ``fetched`` fetches: those plus
        ``margin`` (at least one more), never above this one."""
        pages = fetched + max(1, margin)
        return HostBudget(min(pages, self.pages) if self.pages else pages)


@dataclass(frozen=True)
class PriorityLevels:
    """Maps a request to one of ``levels`` front queues and picks among them.

    Level 0 is the most urgent. A request's level is its depth (shallower first)
    shifted by its Scrapy priority (each ``priority_step`` of priority moves it one
    level up), clamped to the range. The pick is a deterministic weighted round
    robin (smooth WRR, as nginx balances upstreams) with weights halving per level:
    with 4 levels, level 0 gets 8 of 15 picks and level 3 still 1 of 15.
    """

    levels: int = defaults.FRONTIER_PRIORITY_LEVELS
    priority_step: int = 10

    def level(self, depth: int, priority: int) -> int:
        raw = depth - math.floor(priority / self.priority_step)
        return min(self.levels - 1, max(0, raw))

    def weights(self) -> list[int]:
        return [2 ** (self.levels - 1 - i) for i in range(self.levels)]

    def pick(self, nonempty: list[bool], credit: list[int]) -> int:
        """Index of the level to take from next; updates ``credit`` (one per level,
        kept by the caller per host). ``nonempty`` must have a True."""
        weights = self.weights()
        total = 0
        best = -1
        for i, has in enumerate(nonempty):
            if not has:
                continue
            credit[i] += weights[i]
            total += weights[i]
            if best < 0 or credit[i] > credit[best]:
                best = i
        credit[best] -= total
        return best


#: Failures that say the host gave no answer at all: it is held as a whole, one probe per
#: delay of the retry chain, and given up (its URLs dead letters) after the last.
UNREACHABLE_FAILURES = ("DownloadConnectionRefusedError", "DownloadTimeoutError", "CannotResolveHostError",
                        "ConnectionRefusedError", "TCPTimedOutError", "TimeoutError", "ConnectError",
                        "DNSLookupError")


def is_unreachable(reason: str) -> bool:
    """The failure ``reason`` (as the frontier records it) says the host did not answer."""
    return reason.startswith(UNREACHABLE_FAILURES)


#: Failures their reporter has already retried (robots.txt unreachable through every one
#: of ``ROBOTSTXT_RETRY_TIMES`` attempts): a dead letter at once, with the host's queue.
EXHAUSTED_FAILURES = ("RobotsUnreachable",)


def is_exhausted(reason: str) -> bool:
    """The failure ``reason`` ends the host's tries: no retry chain after it."""
    return reason.startswith(EXHAUSTED_FAILURES)


#: Failures that no wait mends (a name that does not exist): tried once more to confirm,
#: past the resolver's negative cache, then a dead letter.
PERMANENT_FAILURES = ("NXDOMAIN",)


def is_permanent(reason: str) -> bool:
    """The failure ``reason`` is one no wait mends: confirmed once, then the host's end."""
    return any(marker in reason for marker in PERMANENT_FAILURES)


@dataclass(frozen=True)
class RetryPolicy:
    """The retry chain of a URL whose fetch or processing failed (seed 004): try again
    after each of ``delays`` in turn (seconds, default 1 min, 10 min, 1 h), then give
    the URL up as a dead letter. ``attempts`` counts the failures so far. A permanent
    failure is confirmed once, no sooner than ``confirm_after`` (``DNS_NEGATIVE_TTL``,
    so the confirming lookup really asks again), and is then a dead letter."""

    delays: tuple[float, ...] = tuple(float(d) for d in defaults.FRONTIER_RETRY_DELAYS)
    confirm_after: float = defaults.DNS_NEGATIVE_TTL

    def delay_after(self, attempts: int, reason: str = "") -> float | None:
        """Seconds before the next try after ``attempts`` failures, the last for ``reason``;
        None: a dead letter."""
        if is_exhausted(reason):
            return None
        if is_permanent(reason):
            if attempts >= 2 or not self.delays:
                return None
            return max(self.delays[0], self.confirm_after)
        return self.delays[attempts - 1] if 1 <= attempts <= len(self.delays) else None

    @classmethod
    def parse(cls, value: str | list | tuple,
              confirm_after: float = defaults.DNS_NEGATIVE_TTL) -> RetryPolicy:
        """From ``FRONTIER_RETRY_DELAYS``: a comma list (``"1,2,4"``) or a list of seconds."""
        parts = value.split(",") if isinstance(value, str) else list(value)
        try:
            delays = tuple(float(str(p).strip()) for p in parts if str(p).strip())
        except ValueError:
            raise ValueError(
                f"FRONTIER_RETRY_DELAYS must be a comma list of seconds, not {value!r}") from None
        if any(d < 0 for d in delays):
            raise ValueError(f"FRONTIER_RETRY_DELAYS must not be negative: {value!r}")
        return cls(delays, confirm_after)
