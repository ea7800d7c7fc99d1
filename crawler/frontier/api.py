"""The frontier contract: what every backend (embedded SQLite, Redis, sharded Redis, Redis Cluster)
does, in the words the contract tests (``tests/test_frontier.py``) check on each.

Times are Unix seconds passed in by the caller, so the rules run on a fake clock in
tests. Fingerprints are 64-bit unsigned integers (``crawler.urls.keys``); a URL's
request is stored as JSON (``crawler.scheduling.codec``). Every number and choice (the
gap after a fetch, backoff, priority level, budget, retry delay) comes from
``crawler.frontier.policy``; a backend only keeps state and makes each step atomic.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from crawler.frontier.policy import PolitenessPolicy, RetryPolicy


class FrontierUnavailable(Exception):
    """The backend's store did not answer (a Redis server down or stalled, a shard's master
    failing over): the step was not done, and may be sent again once it answers. Every
    backend raises this, never its client library's errors."""


class FrontierFull(Exception):
    """The disk of the frontier's local state has no room: its commit failed and was rolled
    back, and the frontier reloaded its memory from what its file holds, as a restart does
    (URLs leased since are queued again; a page whose ack was lost is fetched again). Its
    steps go on; commit again once the disk has room."""


class CrawlStateInUse(Exception):
    """Another process holds this crawl's local state (the embedded frontier's lock): a
    second crawl of the same crawl id is refused before anything is fetched."""

    def __init__(self, state_dir: str) -> None:
        super().__init__(f"crawl state {state_dir} is in use by another process")
        self.state_dir = state_dir


@dataclass
class Entry:
    """A URL offered to the frontier."""

    fp: int  # 64-bit unsigned fingerprint
    host: str  # politeness key
    level: int
    request: str  # JSON


@dataclass
class Claim:
    """A leased URL: fetch it, report the fetch (``fetched``), then ``ack`` it."""

    fp: int
    host: str
    token: int
    request: str


@dataclass
class Fetch:
    """The end of a leased URL's fetch, as ``fetched`` takes it (``status`` None: no response)."""

    fp: int
    token: int
    now: float
    fetch_seconds: float
    status: int | None
    retry_after: float | None = None
    hold_until: float = 0.0  # the host waits at least until then (one that did not answer)


# Upper bounds (seconds) of the fetch-time histogram kept as frontier counters
# ``fetch_seconds/<bound>`` (and ``fetch_seconds/inf``), read by the service's /metrics.
FETCH_SECONDS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def fetch_seconds_counts(fetches: Iterable[Fetch]) -> dict[str, int]:
    """The histogram counters to add for ``fetches``: one bucket each (not cumulative),
    plus ``fetch_seconds/sum_ms``."""
    counts: dict[str, int] = {}
    total = 0.0
    for fetch in fetches:
        bound = next((b for b in FETCH_SECONDS_BUCKETS if fetch.fetch_seconds <= b), None)
        key = f"fetch_seconds/{'inf' if bound is None else bound}"
        counts[key] = counts.get(key, 0) + 1
        total += fetch.fetch_seconds
    if counts:
        counts["fetch_seconds/sum_ms"] = round(total * 1000)
    return counts


@dataclass
class Revisit:
    """A URL done for now: fetch it again at ``due`` as ``request`` (which carries its
    revisit state and validators, ``crawler.freshness.revisit``); last fetched at ``fetched_at``."""

    fp: int
    token: int
    request: str
    due: float
    fetched_at: float


@dataclass
class DeadLetter:
    """A URL given up after its retry chain: its stored request, last error and when."""

    fp: int
    host: str
    level: int
    request: str
    error: str
    at: float


@runtime_checkable
class Frontier(Protocol):
    """Priority front queues feeding one back queue per host, and a heap of the hosts'
    earliest-allowed times. Invariants: a politeness key (a host, or every host on one
    IP) has at most one URL leased and fetching at once, across every worker; after a
    fetch it waits the policy's gap; a URL is queued at most once; a leased URL is
    acked, retried, dead-lettered or, once its lease or its worker's heartbeat has
    expired, queued again: none is lost."""

    policy: PolitenessPolicy
    lease_seconds: float
    #: True: the state is on a server that every worker shares (Redis), which can stall, so
    #: calls run in an I/O thread (and the backend is a ``SharedFrontier``); False: local
    #: state (SQLite on local disk) that one process owns, called on the reactor.
    shared: bool
    #: Hosts first seen since the caller last emptied this, waiting for a politeness key
    #: (``set_politeness_key``) when new hosts are held (per-IP politeness).
    new_hosts: list[str]

    # ---- queueing
    def add(self, entries: Iterable[Entry], force: bool = False) -> list[bool]:
        """Queue each URL not seen before; per entry, whether it was queued. ``force``: a
        URL already done is queued again (a revisit), where the backend can tell."""

    def next(self, now: float) -> Claim | float | None:
        """Lease a URL of a due host; else the seconds until a host is due; else None.
        Among due hosts the policy's level goes first (``PriorityLevels.host_level``: most
        often the host whose best queued URL is the most urgent, low levels still by their
        share), then the earliest allowed; within the host, ``PriorityLevels.next_level``."""

    def claim_many(self, now: float, limit: int) -> tuple[list[Claim], float | None]:
        """Up to ``limit`` claims, one per due host (Redis: one round trip); when fewer, the
        seconds until the next host is due (None: nothing queued or every host busy)."""

    # ---- the outcome of a lease (each ends it, except ``fetched``; a stale token is refused)
    def fetched(self, fp: int, token: int, now: float, fetch_seconds: float, status: int | None,
                retry_after: float | None = None, hold_until: float = 0.0) -> float | None:
        """The fetch ended (``status`` None: no response): the host's next allowed time is
        set by the policy, and no sooner than ``hold_until`` (a host that did not answer,
        held by the retry chain in the same step, so no other fetch slips in before the
        hold), and it may be leased again. The gap, or None for a stale token."""

    def fetched_many(self, fetches: list[Fetch]) -> list[float | None]:
        """``fetched`` for each, in order (Redis: two round trips for all)."""

    def ack(self, fp: int, token: int) -> bool:
        """The URL is done (stored, or nothing to store)."""

    def ack_many(self, leases: list[tuple[int, int]]) -> list[bool]:
        """``ack`` for each (fp, token), in order (Redis: pipelined, one round trip)."""

    def requeue(self, fp: int, token: int, request: str) -> bool:
        """Queue the URL again at once, as ``request``."""

    def retry_later(self, fp: int, token: int, request: str, due: float) -> bool:
        """The URL failed: keep it durably as ``request`` and queue it again at ``due``."""

    def due_retries(self, now: float) -> int:
        """Queue the URLs whose retry is due; how many."""

    def dead_letter(self, fp: int, token: int, request: str, error: str, now: float) -> bool:
        """The URL failed its last try: keep it, with ``error``, as a dead letter."""

    def dead_letters(self) -> list[DeadLetter]:
        """Every dead letter, oldest first."""

    def requeue_dead(self, letter: DeadLetter, request: str) -> bool:
        """Queue a dead letter again as ``request``; False if it is no longer one."""

    def dead_letter_host(self, name: str, error: str, now: float) -> int:
        """Host ``name`` is given up (it never answered through the retry chain): every URL
        of it that is queued or waiting for its retry becomes a dead letter with ``error``
        (a retry left waiting would probe the host once more); how many."""

    # ---- revisits (freshness): a URL done is kept, with its request, until it falls due
    def revisit_many(self, revisits: list[Revisit]) -> list[bool]:
        """Like ``ack`` (the URL is done, its lease ends), but the URL is fetched again once
        ``due`` (``due_revisits``). A scheduled revisit is not pending work: a crawl with
        only revisits left is finished for this pass."""

    def due_revisits(self, now: float, limit: int = 10_000) -> int:
        """Queue up to ``limit`` revisits that are due, at their own priority level, so they
        compete with new URLs; how many."""

    def revisit_at(self, fp: int, host: str) -> tuple[float, float] | None:
        """(due, last fetched) of the URL's scheduled revisit, or None."""

    def hasten_revisit(self, fp: int, host: str, due: float) -> bool:
        """Bring the URL's scheduled revisit forward to ``due``; False if it has none."""

    def next_revisit(self) -> float | None:
        """When the earliest scheduled revisit falls due (None: none scheduled)."""

    @property
    def revisits(self) -> int:
        """URLs done and scheduled for a revisit."""

    # ---- liveness
    def renew(self, fp: int, token: int, expires: float) -> None:
        """Extend a lease its holder still works on."""

    def reap(self, now: float) -> int:
        """Queue again the URLs whose lease expired; how many."""

    def heartbeat(self, now: float) -> list[tuple[str, int, float]]:
        """This worker is alive. Ends the leases of workers silent for longer than the
        worker timeout (``reap`` then queues them); (worker, leases, seconds silent) each."""

    def leave(self, now: float, retry: RetryPolicy) -> int:
        """This worker stops cleanly: the leases it still holds end now and their URLs are
        queued again, for the workers that go on or the next run, without waiting out the
        worker timeout; it is no longer among the live workers. A host keeps its hold: its
        next allowed time is never brought forward, and a fetch given back unreported holds
        it as after a fetch (``allowed_after_leave``; ``retry`` gives a held host's hold).
        Its run of unanswered fetches is left as it is. Returns how many."""

    # ---- host state
    def set_politeness_key(self, name: str, key: str) -> None:
        """Host ``name`` shares politeness with every host of ``key``; it may now be leased."""

    def defer(self, name: str, until: float) -> bool:
        """Host ``name`` is not leased before ``until``."""

    def set_crawl_delay(self, name: str, delay: float) -> None:
        """robots.txt's Crawl-delay of ``name``: a floor on its gap."""

    def host_queued(self, name: str) -> int:
        """URLs of host ``name`` queued."""

    def unanswered(self, name: str) -> int:
        """One more fetch of host ``name`` got no answer at all: count it, and return how
        many in a row have, counted by every worker of the crawl alike. A fetch of the host
        that gets any answer (``fetched`` with a status) ends the run."""

    def demote(self, name: str, margin: int) -> int:
        """Host ``name`` is demoted: its queued and later URLs go to the lowest level and
        its pages left become ``margin`` more from its claims so far, within the crawl's budget
        (``HostBudget.demoted_left``).
        How many URLs moved."""

    # ---- counts
    def count(self, key: str, n: int = 1) -> None:
        """Add to a counter (``frontier/<key>`` in stats)."""

    @property
    def counters(self) -> dict[str, int]: ...

    @property
    def queued(self) -> int: ...

    @property
    def leased(self) -> int: ...

    @property
    def waiting(self) -> int:
        """URLs waiting for their retry."""

    def pending_counts(self) -> tuple[int, int, int, int]:
        """(queued, leased, waiting, revisits), read at one instant: read one by one, a URL
        moving from one to another in between could be missed and the crawl look empty."""

    def has_pending(self) -> bool:
        """URLs queued, leased or waiting: the crawl is not finished."""

    def done_count(self) -> int: ...

    def gauges(self, now: float) -> dict[str, int]: ...

    # ---- lifecycle
    def commit(self) -> None:
        """Make every step so far durable (the embedded backend batches its writes)."""

    def close(self) -> None: ...

    def describe(self) -> str:
        """Where the state is, for log lines."""


@runtime_checkable
class SharedFrontier(Frontier, Protocol):
    """A frontier whose state outlives its workers on a shared server (Redis)."""

    def forget(self) -> int:
        """Delete the crawl's state (``scrapy forget``, ``SCHEDULER_PERSIST = False``);
        how many keys."""
