"""Frontier steps sent in order, off the reactor, and kept through a Redis outage."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from scrapy.utils.asyncio import call_later
from twisted.internet import defer
from twisted.python.failure import Failure

from crawler.frontier.api import Frontier, FrontierUnavailable
from crawler.frontier.outages import OutageNotices
from crawler.scheduling.client import AddStep, Step

logger = logging.getLogger(__name__)

#: Steps sent to the frontier's thread in one go (each is still its own frontier call).
BATCH = 256


def run_steps(frontier: Frontier, steps: list[Step]) -> tuple[list[tuple[bool, Any]], Exception | None]:
    """In the I/O thread: the steps in order, until the frontier is unavailable (the rest
    waits). Each result is (True, value), or (False, Failure) for a step that failed
    otherwise (bad input). A run of adds (the links of a page, one step each) goes as one
    ``add``: one script, whose answer is split back, and all or none of it is done."""
    results: list[tuple[bool, Any]] = []
    i = 0
    while i < len(steps):
        step = steps[i]
        adds = _adds_from(steps, i) if isinstance(step, AddStep) else []
        try:
            if isinstance(step, AddStep):
                added = iter(frontier.add([e for add in adds for e in add.entries], step.force))
                results += [(True, [next(added) for _ in add.entries]) for add in adds]
            else:
                results.append((True, step(frontier)))
        except FrontierUnavailable as error:
            return results, error
        except Exception:  # one bad step must not hold up the others
            results += [(False, Failure())] * max(1, len(adds))
        i += max(1, len(adds))
    return results, None


def _adds_from(steps: list[Step], i: int) -> list[AddStep]:
    """The adds from ``steps[i]`` on with its ``force``, up to the first other step."""
    first = steps[i]
    assert isinstance(first, AddStep)
    run = [first]
    for step in steps[i + 1:]:
        if not isinstance(step, AddStep) or step.force != first.force:
            break
        run.append(step)
    return run


class Outbox:
    """Sends frontier steps (``FrontierClient``'s calls) through ``calls`` (the I/O thread)
    in the order sent, in batches: a step's Deferred fires with its result.

    While the shared frontier is unreachable each step, and every later one, waits here in
    order and is replayed when it answers, with backoff (0.5 s doubling to 30 s): nothing
    is lost, and the outage is logged once when it starts and once when it ends (at WARNING;
    at INFO when it flaps: ``OutageNotices``). ``retry_in`` hears each backoff (and 0 when
    the outage ends), so the caller can wake up to try again; ``drained`` hears each time
    the last step waiting has run. A call that hangs (a stalled Redis) is an outage too (``stalled``). Stats:
    ``frontier/redis_errors``, ``frontier/redis_stalls``."""

    def __init__(self, calls: Any, inc_stat: Callable[[str], None], retry_in: Callable[[float], None],
                 later: Callable[[float, Callable[[], None]], Any] = call_later,
                 drained: Callable[[], None] = lambda: None) -> None:
        self.calls = calls
        self.drained = drained
        self.later = later  # (seconds, fn) -> a call that can be cancelled
        self.inc_stat = inc_stat
        self.retry_in = retry_in
        self.written = 0  # steps ever written: a read issued before the latest write is stale
        self._steps: deque[tuple[Step, defer.Deferred]] = deque()
        self._sending = False
        self._on_way = 0  # steps of the batch in the I/O thread
        self._down_since: float | None = None
        self._backoff = 0.0
        self._retry_at = 0.0
        self._timer: Any = None
        self._drained: list[defer.Deferred] = []
        self._notices = OutageNotices()

    def __len__(self) -> int:
        return len(self._steps)

    @property
    def down(self) -> bool:
        """Whether the last call failed and no call has succeeded since."""
        return self._down_since is not None

    @property
    def idle(self) -> bool:
        """No step waiting or on its way."""
        return not self._steps and not self._sending

    @property
    def sent(self) -> int:
        """Steps written that a call sent now through ``calls`` runs after (done, or in the
        batch on its way): the I/O thread runs calls in the order asked."""
        return self.written - len(self._steps) + self._on_way

    def send(self, step: Step) -> defer.Deferred:
        """Queue the step; its Deferred fires with its result once it ran (after an outage,
        once the frontier answers again)."""
        done: defer.Deferred = defer.Deferred()
        self._steps.append((step, done))
        self.written += 1
        self._send()
        return done

    def drain(self) -> defer.Deferred:
        """Try now, backoff or not (at close); fires True once every step ran, False when
        Redis still did not answer."""
        self._retry_at = 0.0
        waiter: defer.Deferred = defer.Deferred()
        if self.idle:
            waiter.callback(True)
            return waiter
        self._drained.append(waiter)
        self._send()
        return waiter

    def _send(self) -> None:
        if self._sending or not self._steps:
            return
        if time.monotonic() < self._retry_at:
            if self._timer is None:
                self._timer = self.later(self._retry_at - time.monotonic(), self._retry)
            return
        self._sending = True
        batch = [step for step, _ in list(self._steps)[:BATCH]]
        self._on_way = len(batch)
        d = self.calls.run(run_steps, self.calls.frontier, batch)
        d.addCallbacks(self._sent, self._crashed)

    def _retry(self) -> None:
        self._timer = None
        self._send()

    def _sent(self, outcome: tuple[list[tuple[bool, Any]], Exception | None]) -> None:
        results, error = outcome
        # Popped first: their callbacks may write more steps, which go in the next batch.
        finished = [self._steps.popleft()[1] for _ in results]
        self._sending, self._on_way = False, 0
        if error is not None:
            self.outage(error)
        for (ok, value), done in zip(results, finished, strict=True):
            if ok:
                done.callback(value)
            else:
                done.errback(value)
                done.addErrback(self._log_failed)
        if error is not None:
            self._settle(False)
            return
        self.answered()
        if self._steps:
            self._send()
        elif not self._sending:
            self._settle(True)

    def _crashed(self, failure: Failure) -> None:
        self._sending, self._on_way = False, 0
        logger.error("Frontier steps failed", exc_info=(failure.type, failure.value, failure.tb))

    @staticmethod
    def _log_failed(failure: Failure) -> None:
        logger.error("A frontier step failed", exc_info=(failure.type, failure.value, failure.tb))

    def _settle(self, drained: bool) -> None:
        waiters, self._drained = self._drained, []
        for waiter in waiters:
            waiter.callback(drained)
        if drained:
            self.drained()

    def answered(self) -> None:
        """A call succeeded: an outage is over (its waiting steps go now)."""
        if self._down_since is None:
            return
        if self._steps:
            self._retry_at = 0.0
            self._send()
            return
        logger.log(self._notices.end(), "Redis is back after %.1f s; buffered steps replayed",
                   time.monotonic() - self._down_since)
        self._down_since, self._backoff = None, 0.0
        self.retry_in(0.0)

    def stalled(self, waited: float) -> None:
        """A call has waited ``waited`` seconds for Redis: an outage (logged once), though the
        call may still get its answer; the steps after it wait in order."""
        if self._down_since is not None:
            return
        self._down_since = time.monotonic() - waited
        self.inc_stat("frontier/redis_stalls")
        logger.log(self._notices.start(), "Redis has not answered for %.0f s: frontier steps wait in "
                   "order, downloads in flight go on", waited)

    def outage(self, error: Exception) -> None:
        """A call failed: back off before the next try."""
        now = time.monotonic()
        if self._down_since is None:
            self._down_since = now
            logger.log(self._notices.start(), "Redis unreachable (%s): buffering frontier steps, "
                       "retrying with backoff", error)
        self.inc_stat("frontier/redis_errors")
        self._backoff = min(30.0, max(0.5, self._backoff * 2))
        self._retry_at = now + self._backoff
        self.retry_in(self._backoff)
        if self._steps and self._timer is None and not self._sending:
            self._timer = self.later(self._backoff, self._retry)

    def cancel(self) -> None:
        """Stop retrying (at close, after the last drain)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
