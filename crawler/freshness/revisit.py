"""When to fetch a page again (seeds 000 and 003): pure code, no I/O.

Per URL the crawl keeps a :class:`RevisitState`: its revisit interval, the hash of its
last text, its validators (ETag, Last-Modified), when it was last fetched and what its
visits showed (how many found a change, and after how long). While a page has fewer than
``evidence`` gaps between visits its interval halves when it changed and doubles when it
did not (a 304, or a 200 with the same text hash: a rotating ad in the markup is no
change), bounded to [min, max]; the next visit is ``now + interval / importance``, never
sooner than the minimum interval. From then on the gap is the one
:class:`~crawler.freshness.change_rate.GapChooser` finds worth most for the page's
evidence (a changed version's Last-Modified, when it dates the change, tells how long ago
it changed) and importance: halving and doubling settles every page where half its visits
find a change, which spends the most fetches on the pages that change too fast to keep
fresh (docs/freshness.md measures both). Hot pages are stretched while they take more
than their share of the fetches (:class:`HotShare`). Each wait is moved by up to
``jitter`` of itself, earlier or later by a share fixed per URL (:func:`revisit_phase`):
pages first crawled together have slightly different periods and drift apart, so a
continuous crawl fetches at a steady rate instead of in waves."""

from __future__ import annotations

import hashlib
import math
from collections import deque
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from crawler import defaults
from crawler.freshness.change_rate import Evidence, GapChooser

NOT_MODIFIED, UNCHANGED, CHANGED, FIRST = "not_modified", "unchanged", "changed", "first"
#: A Last-Modified this close to the fetch is the response's time, not the version's.
DATED_SLACK = 60.0


@dataclass
class RevisitState:
    """What the crawl remembers of a URL between visits (kept in its stored request)."""

    interval: float  # seconds
    sha: str | None  # content_sha256 of the last text
    etag: str | None
    last_modified: str | None
    fetched_at: float  # Unix seconds of the last fetch
    next_visit: float
    visits: int = 1
    changes: int = 0
    # Seconds between visits, summed over the gaps that ended in an undated change and in
    # none, and changes dated by a Last-Modified with the summed seconds from it to the
    # fetch: the evidence the revisit gap is chosen from (crawler/freshness/change_rate.py).
    changed_time: float = 0.0
    unchanged_time: float = 0.0
    dated_changes: int = 0
    dated_age: float = 0.0
    # Seconds from the first fetch's Last-Modified to that fetch, when it dates the version
    # (the time since a Poisson page's last change is ~ Exp(l) too): evidence from day 0.
    first_age: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RevisitState | None:
        """The state stored in a request's meta; None when absent or unreadable."""
        if not isinstance(data, dict):
            return None
        try:
            return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
        except TypeError:
            return None


def outcome(previous: RevisitState | None, status: int, sha: str | None) -> str:
    """How a visit compares with the last one: first, not_modified, unchanged or changed."""
    if previous is None:
        return FIRST
    if status == 304:
        return NOT_MODIFIED
    return UNCHANGED if sha is not None and sha == previous.sha else CHANGED


def change_age(previous_fetch: float, now: float, last_modified: str | None) -> float | None:
    """Seconds from a changed version's Last-Modified to ``now``, when it dates a change
    between the two fetches; None when absent, unreadable or telling nothing: older than
    the last fetch (the server does not date its text), or within ``DATED_SLACK`` of now
    (a dynamic page stamped with the response time)."""
    if not last_modified:
        return None
    try:
        parsed = parsedate_to_datetime(last_modified)
    except (TypeError, ValueError, IndexError):
        return None
    when = (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    if previous_fetch < when <= now - DATED_SLACK:
        return now - when
    return None


def revisit_phase(url: str) -> float:
    """A fraction in [0, 1) fixed for ``url`` (its BLAKE2b hash): where in the jitter
    window its revisits fall, the same on every worker and after every restart."""
    digest = hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def importance(depth: int, sitemap_priority: float | None = None) -> float:
    """How much sooner than its interval a page is worth visiting: 2 for a seed, falling
    towards 1 with depth (pages near the seeds are the site's hubs), times 0.5 to 1.5 by
    a sitemap's <priority> (0.0 to 1.0, default 0.5 means no change)."""
    value = 1.0 + 1.0 / (1 + max(0, depth))
    if sitemap_priority is not None and 0.0 <= sitemap_priority <= 1.0:
        value *= 0.5 + sitemap_priority
    return value


def lastmod_time(value: str | None) -> float | None:
    """Unix seconds of a sitemap <lastmod> (W3C datetime: a date, or a date and time with a
    zone); None when absent or unreadable."""
    if not value:
        return None
    text = value.strip().replace("Z", "+00:00")
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


@dataclass(frozen=True)
class RevisitPolicy:
    """Intervals in seconds: start at ``interval``, kept within [``min_interval``,
    ``max_interval``] (defaults 7 days, 1 day, 30 days). Until a page has ``evidence``
    gaps between visits its interval halves on a change and doubles when unchanged;
    from then on it is the gap :class:`GapChooser` picks from those gaps, with a fetch's
    cost set so that a page known to change once per ``interval`` is revisited once per
    ``interval``, and a fetch that finds no change costing ``waste_cost`` times more.
    Each wait is multiplied by ``1 + jitter * (2 * phase - 1)`` (``jitter`` a fraction, 0
    for none), never below the minimum interval."""

    interval: float = defaults.REVISIT_INTERVAL
    min_interval: float = defaults.REVISIT_MIN_INTERVAL
    max_interval: float = defaults.REVISIT_MAX_INTERVAL
    waste_cost: float = defaults.REVISIT_WASTE_COST
    evidence: int = defaults.REVISIT_EVIDENCE
    jitter: float = defaults.REVISIT_JITTER
    chooser: GapChooser = field(init=False, repr=False, compare=False)  # set by __post_init__

    def __post_init__(self) -> None:
        if not 0 < self.min_interval <= self.interval <= self.max_interval:
            raise ValueError(
                "revisit intervals must satisfy 0 < REVISIT_MIN_INTERVAL <= REVISIT_INTERVAL <= "
                f"REVISIT_MAX_INTERVAL, not {self.min_interval}, {self.interval}, {self.max_interval}")
        if self.waste_cost < 0:
            raise ValueError(f"REVISIT_WASTE_COST must be >= 0, not {self.waste_cost}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"REVISIT_JITTER must be in [0, 1], not {self.jitter}")
        if self.evidence < 1:
            raise ValueError(f"REVISIT_EVIDENCE must be >= 1, not {self.evidence}")
        chooser = GapChooser(self.min_interval, self.max_interval, self.fetch_cost, self.waste_cost)
        object.__setattr__(self, "chooser", chooser)  # frozen: its tables are built once

    @property
    def fetch_cost(self) -> float:
        """Seconds of freshness a fetch costs, u: for a known rate l the best gap g solves
        (1 + x) e^-x = (1 - u l) / (1 + u l c), x = l g; x = 1 at l = 1 / ``interval``."""
        a = (1 - 2 / math.e) / (1 + 2 * self.waste_cost / math.e)
        return a * self.interval

    def next_interval(self, previous: RevisitState | None, result: str) -> float:
        """Halved on a change, doubled when unchanged, bounded; the start for a first visit."""
        if previous is None or result == FIRST:
            return self.interval
        grown = previous.interval / 2 if result == CHANGED else previous.interval * 2
        return self._bounded(grown)

    def _bounded(self, interval: float) -> float:
        return min(self.max_interval, max(self.min_interval, interval))

    def halving_wait(self, interval: float, weight: float) -> float:
        """The wait before the next visit while the interval halves and doubles: the
        interval over the page's importance, never sooner than the minimum interval."""
        return max(self.min_interval, interval / weight)

    def is_hot(self, interval: float) -> bool:
        """The page is revisited as often as the policy allows."""
        return interval <= self.min_interval

    def visit(self, previous: RevisitState | None, now: float, status: int, sha: str | None,
              etag: str | None, last_modified: str | None, weight: float = 1.0,
              stretch: float = 1.0, phase: float = 0.5) -> tuple[str, RevisitState]:
        """(outcome, new state) of a visit at ``now``. ``weight``: :func:`importance`, a
        page's freshness is worth that much more (its fetches cost that much less);
        ``stretch``: :meth:`HotShare.stretch` for a hot page; ``phase``:
        :func:`revisit_phase` of the page (0.5 leaves the wait as it is).
        A 304 keeps the stored hash and validators the server did not resend."""
        result = outcome(previous, status, sha)
        weight = max(weight, 1e-9)
        state = RevisitState(self.next_interval(previous, result), sha, etag, last_modified, now, now)
        if previous is None:
            state.first_age = change_age(-math.inf, now, last_modified)
        else:
            state.first_age = previous.first_age
            gap = max(0.0, now - previous.fetched_at)
            changed = result == CHANGED
            age = change_age(previous.fetched_at, now, last_modified) if changed else None
            state.visits, state.changes = previous.visits + 1, previous.changes + changed
            state.dated_changes = previous.dated_changes + (age is not None)
            state.dated_age = previous.dated_age + (age or 0.0)
            state.changed_time = previous.changed_time + gap * (changed and age is None)
            state.unchanged_time = previous.unchanged_time + gap * (not changed)
            if result == NOT_MODIFIED:
                state.sha = previous.sha
                state.etag = etag or previous.etag
                state.last_modified = last_modified or previous.last_modified
        first = state.first_age is not None
        if state.visits - 1 + first >= self.evidence:
            seen = Evidence(state.changes - state.dated_changes, state.changed_time, state.unchanged_time,
                            state.dated_changes + first, state.dated_age + (state.first_age or 0.0))
            state.interval = wait = self.chooser.gap(seen, weight)
        else:
            wait = self.halving_wait(state.interval, weight)
        if self.is_hot(state.interval):
            wait *= max(1.0, stretch)
        state.next_visit = now + max(self.min_interval, wait * (1.0 + self.jitter * (2 * phase - 1)))
        return result, state

    @staticmethod
    def due_by_lastmod(state_fetched_at: float, lastmod: float | None) -> bool:
        """A sitemap says the page changed after its last fetch: visit it now."""
        return lastmod is not None and lastmod > state_fetched_at


class HotShare:
    """The share of the last ``window`` fetches that went to hot pages (revisited at the
    minimum interval), and how much to stretch their next visits so that they take at
    most ``cap`` of the fetches, leaving the rest to discovery and slower pages."""

    def __init__(self, cap: float = defaults.REVISIT_HOT_SHARE, window: int = 1000) -> None:
        if not 0 < cap <= 1:
            raise ValueError(f"REVISIT_HOT_SHARE must be in (0, 1], not {cap}")
        self.cap = cap
        self._recent: deque[bool] = deque(maxlen=window)
        self._hot = 0

    def record(self, hot: bool) -> None:
        if len(self._recent) == self._recent.maxlen and self._recent[0]:
            self._hot -= 1
        self._recent.append(hot)
        self._hot += hot

    @property
    def share(self) -> float:
        return self._hot / len(self._recent) if self._recent else 0.0

    def stretch(self) -> float:
        """1 within the cap; else share / cap (hot pages visited that much less often)."""
        share = self.share
        return 1.0 if share <= self.cap else share / self.cap


def seconds(value: float) -> str:
    """An interval for people: ``3.5 d``, ``6 h``, ``90 s``."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if value >= size:
            amount = value / size
            whole = math.isclose(amount, round(amount))
            return f"{round(amount)} {unit}" if whole else f"{amount:.1f} {unit}"
    return f"{value:.0f} s"
