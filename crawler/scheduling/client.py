"""``FrontierClient``: the scheduler's typed calls that change the frontier.

Each method mirrors a method of the ``Frontier`` contract (``crawler.frontier.api``) and
returns a Deferred of its result. The call is a step of the ``Outbox``: sent in the order
made, off the reactor where the backend is shared, and kept and replayed in order while the
backend is unavailable. A type checker follows every call to the backend's method.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred

    from crawler.frontier.api import Entry, Fetch, Frontier, Revisit
    from crawler.scheduling.outbox import Outbox

T = TypeVar("T")


@dataclass(frozen=True)
class AddStep:
    """``Frontier.add`` of ``entries``: consecutive adds with the same ``force`` go to the
    backend as one call (a page's links: one script, all or none of it done)."""

    entries: list[Entry]
    force: bool


#: One step of the outbox: a call of the frontier, or an add that may join the next ones.
Step = Callable[["Frontier"], Any] | AddStep


class FrontierClient:
    """The frontier's changing calls, each a step of ``outbox``."""

    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox

    def _step(self, call: Callable[[Frontier], T]) -> Deferred[T]:
        return self.outbox.send(call)

    # ---- queueing and the ends of leases
    def add(self, entries: list[Entry], force: bool = False) -> Deferred[list[bool]]:
        return self.outbox.send(AddStep(entries, force))

    def requeue(self, fp: int, token: int, request: str) -> Deferred[bool]:
        return self._step(lambda f: f.requeue(fp, token, request))

    def ack_many(self, leases: list[tuple[int, int]]) -> Deferred[list[bool]]:
        return self._step(lambda f: f.ack_many(leases))

    def fetched_many(self, fetches: list[Fetch]) -> Deferred[list[float | None]]:
        return self._step(lambda f: f.fetched_many(fetches))

    def retry_later(self, fp: int, token: int, request: str, due: float) -> Deferred[bool]:
        return self._step(lambda f: f.retry_later(fp, token, request, due))

    def due_retries(self, now: float) -> Deferred[int]:
        return self._step(lambda f: f.due_retries(now))

    def dead_letter(self, fp: int, token: int, request: str, error: str, now: float) -> Deferred[bool]:
        return self._step(lambda f: f.dead_letter(fp, token, request, error, now))

    def dead_letter_host(self, name: str, error: str, now: float) -> Deferred[int]:
        return self._step(lambda f: f.dead_letter_host(name, error, now))

    # ---- revisits
    def revisit_many(self, revisits: list[Revisit]) -> Deferred[list[bool]]:
        return self._step(lambda f: f.revisit_many(revisits))

    def revisit_at(self, fp: int, host: str) -> Deferred[tuple[float, float] | None]:
        return self._step(lambda f: f.revisit_at(fp, host))

    def hasten_revisit(self, fp: int, host: str, due: float) -> Deferred[bool]:
        return self._step(lambda f: f.hasten_revisit(fp, host, due))

    # ---- host state
    def set_politeness_key(self, name: str, key: str) -> Deferred[None]:
        return self._step(lambda f: f.set_politeness_key(name, key))

    def defer(self, name: str, until: float) -> Deferred[bool]:
        return self._step(lambda f: f.defer(name, until))

    def set_crawl_delay(self, name: str, delay: float) -> Deferred[None]:
        return self._step(lambda f: f.set_crawl_delay(name, delay))

    def host_queued(self, name: str) -> Deferred[int]:
        return self._step(lambda f: f.host_queued(name))

    def unanswered(self, name: str) -> Deferred[int]:
        return self._step(lambda f: f.unanswered(name))

    def demote(self, name: str, margin: int) -> Deferred[int]:
        return self._step(lambda f: f.demote(name, margin))

    # ---- counts
    def count(self, key: str, n: int = 1) -> Deferred[None]:
        return self._step(lambda f: f.count(key, n))
