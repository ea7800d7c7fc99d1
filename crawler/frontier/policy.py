"""Politeness, backoff, budget and priority rules of the frontier: pure code, no I/O.

Every backend (embedded, Redis) keeps per-host state and asks this module what to
do with it, so the rules are written and tested once.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from crawler import defaults
from crawler.frontier.failure import FailureKind

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
    cannot eat the crawl.

    A backend keeps each host's pages *left* (None: no limit), set from this rule when it
    first sees the host and when it demotes it; a claim takes one, and a host with 0 left
    is exhausted. So a backend (a Lua script) only decrements and tests for zero."""

    pages: int = defaults.HOST_PAGE_BUDGET

    def left(self, fetched: int) -> int | None:
        """Pages a host that has made ``fetched`` fetches may still make; None: no limit."""
        return max(0, self.pages - fetched) if self.pages else None

    def demoted_left(self, claimed: int, margin: int) -> int:
        """Pages left to a host demoted after ``claimed`` claims: ``margin`` more (at least
        one), never past this budget. Demoted again (it still gave new pages), it gets the
        margin again from where it is."""
        more = max(1, margin)
        left = self.left(claimed)
        return more if left is None else min(more, left)


#: FRONTIER_PRIORITY_LEVELS at most: the level cycle (2 ** levels - 1 positions) goes to
#: every claim script as arguments.
MAX_LEVELS = 8


@dataclass(frozen=True)
class PriorityLevels:
    """Maps a request to one of ``levels`` front queues and picks among them.

    Level 0 is the most urgent. A request's level is its depth (shallower first)
    shifted by its Scrapy priority (each ``priority_step`` of priority moves it one
    level up), clamped to the range.

    Picks follow one fixed ``cycle`` of levels: a deterministic weighted round robin
    (smooth WRR, as nginx balances upstreams) with weights halving per level, so with
    4 levels level 0 has 8 of the 15 positions and level 3 still 1. It orders two
    choices, both made here and only followed by the backends (a Lua script gets the
    cycle as arguments and walks it, no arithmetic):

    - across hosts (Mercator's front queues): each claim takes the next position of the
      claimer's cursor; among the due hosts whose best queued URL is at that position's
      level, the earliest-allowed goes; if none is due there, the most urgent level with
      a due host (``host_level``). High levels go first, low ones still get their share.
    - within a host: a cursor per host walks the cycle to the next position whose level
      has URLs queued (``next_level``). Skipping empty levels keeps the others' shares:
      each round gives each level its weight.
    """

    levels: int = defaults.FRONTIER_PRIORITY_LEVELS
    priority_step: int = 10

    def __post_init__(self) -> None:
        if not 1 <= self.levels <= MAX_LEVELS:
            raise ValueError(f"FRONTIER_PRIORITY_LEVELS must be 1..{MAX_LEVELS}, not {self.levels}")

    def level(self, depth: int, priority: int) -> int:
        raw = depth - math.floor(priority / self.priority_step)
        return min(self.levels - 1, max(0, raw))

    @property
    def lowest(self) -> int:
        """The least urgent level (a demoted host's URLs all go there)."""
        return self.levels - 1

    def weights(self) -> list[int]:
        return [2 ** (self.levels - 1 - i) for i in range(self.levels)]

    @functools.cached_property
    def cycle(self) -> tuple[int, ...]:
        """One round of smooth WRR over every level: level i at ``weights()[i]`` positions,
        spread out (8 4 2 1 gives 0 1 0 2 0 1 0 3 0 1 0 2 0 1 0)."""
        weights = self.weights()
        credit = [0] * self.levels
        order = []
        for _ in range(sum(weights)):
            for i, w in enumerate(weights):
                credit[i] += w
            best = max(range(self.levels), key=lambda i: credit[i])  # the first of equals
            credit[best] -= sum(weights)
            order.append(best)
        return tuple(order)

    def next_level(self, queued: Sequence[int], cursor: int) -> tuple[int, int]:
        """Within a host: (level to take from, the host's next cursor), from its URLs
        queued per level and its cursor. ``queued`` must have one above 0."""
        size = len(self.cycle)
        for step in range(size):
            level = self.cycle[(cursor + step) % size]
            if queued[level] > 0:
                return level, (cursor + step + 1) % size
        raise ValueError("no level has URLs queued")

    def host_level(self, cursor: int, due: Sequence[bool]) -> int | None:
        """Across hosts: the level whose due hosts go next, at position ``cursor`` of the
        cycle, from which levels have a due host (a host counts at its best queued URL's
        level): the position's level, else the most urgent with one; None: none is due."""
        preferred = self.cycle[cursor % len(self.cycle)]
        if due[preferred]:
            return preferred
        return next((level for level in range(self.levels) if due[level]), None)


def plan_claims(levels: PriorityLevels, cursor: int, due: dict[tuple[int, int], list[tuple[float, bytes]]],
                limit: int) -> dict[int, list[int]]:
    """Up to ``limit`` claims over shards: claim k takes the level ``levels.host_level``
    picks at ``cursor + k`` among the levels with a due host left on some shard, and the
    shard whose next due host of that level is allowed earliest (ties by host name, as
    in one sorted set). ``due``: (shard, level) -> (allowed time, host) of its due hosts,
    earliest first. Returns shard -> the levels of its claims, in order (each shard's
    claim script follows them)."""
    taken = dict.fromkeys(due, 0)
    plan: dict[int, list[int]] = {}
    for k in range(limit):
        open_levels = [any(taken[key] < len(times) for key, times in due.items() if key[1] == level)
                       for level in range(levels.levels)]
        level = levels.host_level(cursor + k, open_levels)
        if level is None:
            break
        key = min((key for key, times in due.items() if key[1] == level and taken[key] < len(times)),
                  key=lambda key: due[key][taken[key]])
        taken[key] += 1
        plan.setdefault(key[0], []).append(level)
    return plan


@dataclass(frozen=True)
class RetryPolicy:
    """The retry chain of a URL whose fetch or processing failed (seed 004): try again
    after each of ``delays`` in turn (seconds, default 1 min, 10 min, 1 h), then give
    the URL up as a dead letter. ``attempts`` counts the failures so far. A permanent
    failure is confirmed once, no sooner than ``confirm_after`` (``DNS_NEGATIVE_TTL``,
    so the confirming lookup really asks again), and is then a dead letter."""

    delays: tuple[float, ...] = tuple(float(d) for d in defaults.FRONTIER_RETRY_DELAYS)
    confirm_after: float = defaults.DNS_NEGATIVE_TTL

    def delay_after(self, attempts: int, kind: FailureKind = FailureKind.TRANSIENT) -> float | None:
        """Seconds before the next try after ``attempts`` failures, the last of ``kind``;
        None: a dead letter."""
        if kind is FailureKind.EXHAUSTED:
            return None
        if kind is FailureKind.PERMANENT:
            if attempts >= 2 or not self.delays:
                return None
            return max(self.delays[0], self.confirm_after)
        return self.delays[attempts - 1] if 1 <= attempts <= len(self.delays) else None

    def hold_again(self, unanswered: int) -> float:
        """The hold of a host in a run of ``unanswered`` fetches with no answer (the hold
        ``FailureChain`` gave it after the last of them), for its probe given back unreported
        when a worker leaves: the host is held as long again, no more (it is no new probe)
        and no less (the probe may have gone out); 0 for a host that answers."""
        if unanswered <= 0 or not self.delays:
            return 0.0
        return self.delays[min(unanswered, len(self.delays)) - 1]

    @classmethod
    def parse(cls, value: str | Sequence[float | str],
              confirm_after: float = defaults.DNS_NEGATIVE_TTL) -> RetryPolicy:
        """From ``FRONTIER_RETRY_DELAYS``: a comma list (``"1,2,4"``) or a list of seconds."""
        parts = value.split(",") if isinstance(value, str) else list(value)
        try:
            delays = tuple(float(str(p).strip()) for p in parts if str(p).strip())
        except ValueError:
            raise ValueError(
                f"FRONTIER_RETRY_DELAYS must be a comma list of seconds, not {value!r}") from None
        if not all(0 <= d < math.inf for d in delays):  # NaN too: float() reads "nan"
            raise ValueError(f"FRONTIER_RETRY_DELAYS must be numbers >= 0: {value!r}")
        return cls(delays, confirm_after)


def allowed_after_leave(next_allowed: float, now: float, unreported: bool, last_gap: float,
                        hold: float) -> float:
    """When a host may be fetched again once a leaving worker gives back its lease of it
    (``Frontier.leave``). Its URL goes back to its queue and its hold stands: a host's next
    allowed time is never brought forward. A fetch that was claimed and never reported may
    have gone out: the host waits as after a fetch, its last gap (its backoff in it) and its
    hold again (``RetryPolicy.hold_again``), from now."""
    if not unreported:
        return next_allowed
    return max(next_allowed, now + max(last_gap, hold))


def beat_interval(worker_timeout: float) -> float:
    """Seconds between a worker's heartbeats: at least three per ``FRONTIER_WORKER_TIMEOUT``,
    at most 5."""
    return min(5.0, worker_timeout / 3)
