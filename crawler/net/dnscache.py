"""DNS answers kept for their TTL, failures for a short negative TTL: no I/O.

Hand-written on an OrderedDict because each entry expires at its own record's TTL
(floored and capped), which neither functools' LRU nor dnspython's cache can do
(dnspython's has no floor, no cap and no negative TTL of our choosing).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["DnsAnswer", "DnsCache"]


@dataclass(frozen=True)
class DnsAnswer:
    """A name's addresses (A then AAAA), or the error of a failed lookup, until ``expires``;
    ``missing``: DNS said the name does not exist (NXDOMAIN)."""

    addresses: tuple[str, ...]
    expires: float
    error: str | None = None
    missing: bool = False


class DnsCache:
    """Least-recently-used answers by host name, at most ``size`` of them.

    An answer holds for its TTL clamped to [``min_ttl``, ``max_ttl``]; a failure
    (NXDOMAIN, no address, timeout) holds for ``negative_ttl``. Times are the caller's
    clock, so the cache is tested without waiting.
    """

    def __init__(self, size: int, min_ttl: float, max_ttl: float, negative_ttl: float) -> None:
        self.size = size
        self.min_ttl = min_ttl
        self.max_ttl = max(min_ttl, max_ttl)
        self.negative_ttl = negative_ttl
        self._answers: OrderedDict[str, DnsAnswer] = OrderedDict()

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, name: str, now: float) -> DnsAnswer | None:
        """The answer for ``name`` still valid at ``now``, else None (and it is forgotten)."""
        answer = self._answers.get(name)
        if answer is None:
            return None
        if answer.expires <= now:
            del self._answers[name]
            return None
        self._answers.move_to_end(name)
        return answer

    def put(self, name: str, addresses: list[str], ttl: float, now: float) -> DnsAnswer:
        """Keep ``addresses`` for ``ttl`` seconds, clamped."""
        ttl = min(self.max_ttl, max(self.min_ttl, ttl))
        return self._keep(name, DnsAnswer(tuple(addresses), now + ttl))

    def put_failure(self, name: str, error: str, now: float, missing: bool = False) -> DnsAnswer:
        """Keep a failed lookup for ``negative_ttl`` seconds."""
        return self._keep(name, DnsAnswer((), now + self.negative_ttl, error, missing))

    def _keep(self, name: str, answer: DnsAnswer) -> DnsAnswer:
        if self.size <= 0:
            return answer
        self._answers[name] = answer
        self._answers.move_to_end(name)
        while len(self._answers) > self.size:
            self._answers.popitem(last=False)
        return answer
