"""A discrete-event model of a crawl: N frontier shards x M worker processes over a web.

Pure (no I/O, no clock, no randomness beyond a seeded ``random.Random``), so tests can
check it on small cases by hand. What it models, as the code does it:

* **A shard** is one single-threaded Redis holding its hosts' queues and politeness
  state (hosts are placed by a hash of the host). Requests are served one at a time in
  arrival order; each costs the shard CPU time measured on a real Redis
  (:class:`ShardCosts`). A claim is decided with the worker's clock at sending (the
  claim script takes ``now`` from the worker).
* **A worker** is one Scrapy process with ``concurrency`` download slots and one thread.
  It claims as many hosts as it has free slots, from the shards in turn, one round trip
  each, until it has enough or has asked every shard, each round starting one shard
  after the previous round's start (``ShardedRedisFrontier.claim_many``);
  a round that got some claims is followed by another at once (the engine asks again),
  one that got none sleeps until the earliest host falls due (the scheduler's wake-up),
  or the engine's 5 s heartbeat when nothing is queued.
* **A fetch** takes the host's latency; when it ends the worker reports it (the host's
  next allowed time is the end plus the gap ``PolitenessPolicy.after_fetch`` gives,
  the same rule the crawler runs). The page then waits for the worker's thread, which
  spends ``1 / page_rate`` seconds on it (the measured pages/s of one worker) and then
  blocks, as the scheduler's Redis calls do, on one call to the host's shard that acks
  the page and makes its link checks (one call per link, as
  ``FrontierScheduler.enqueue_request`` made them, or with ``link_batch`` one per page,
  as it makes them now); the shard queues the host's newly discovered pages (a tree: each
  page discovers up to ``fanout`` more). Then the page's slot is free.
* **The content check** of a page (``ShardCosts.content``, when not 0), before its ack:
  the Redis Cluster content index is split over every shard by fingerprint, so each
  check's CPU goes to the shards in turn (the same mean load a shard); the thread waits
  for it, ``CONTENT_ROUNDS`` round trips and its queue at that shard.
* **Politeness** is checked apart from the shards' state, as the test web's log is:
  per host, a fetch starting while another is in flight is an overlap, one starting
  sooner than the previous fetch's end plus its gap is a short gap.

The inputs (:class:`Web` and how its hosts are drawn, :class:`ShardCosts`, :class:`Setup`)
are in ``scale_sim_inputs``; this module exports them too.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections import deque
from dataclasses import dataclass

from scale_sim_inputs import Setup, ShardCosts, Web, lognormal_latencies, power_law_sizes

from crawler.frontier.policy import HostTimes, PolitenessPolicy

__all__ = [
    "CONTENT_ROUNDS",
    "PolitenessLog",
    "Result",
    "Setup",
    "ShardCosts",
    "Simulation",
    "Web",
    "lognormal_latencies",
    "power_law_sizes",
    "simulate",
]

HEARTBEAT = 5.0  # seconds: Scrapy's engine asks for requests at least this often
EPSILON = 1e-9

CONTENT_ROUNDS = 2  # round trips of an original's content check: read, then record (crawler/dedup/split.py)

# Event kinds, in the heap as (time, sequence, kind, a, b, c).
(CLAIM_AT_SHARD, CLAIM_REPLY, FETCH_END, FETCHED_AT_SHARD, CPU_DONE, CONTENT_AT_SHARD, DONE_AT_SHARD,
 DONE_REPLY, WAKE) = range(9)


@dataclass
class Result:
    fetches: int  # fetches started
    pages_done: int  # pages whose CPU work ended
    fetch_rate: float  # fetches ended per second within the measuring window
    span_rate: float  # fetches / (last fetch end - first fetch start)
    shard_utilisation: list[float]  # busy share of each shard within the window
    worker_utilisation: float  # mean busy share of the workers' CPUs within the window
    overlaps: int
    short_gaps: int
    claim_calls: int
    ended: float  # simulated time at the end

    @property
    def violations(self) -> int:
        return self.overlaps + self.short_gaps


def shard_of(host: int, shards: int) -> int:
    """A host's shard: a hash of its name, as the sharded frontier places hosts."""
    digest = hashlib.blake2b(f"h{host}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


class PolitenessLog:
    """Per host: fetch starts and ends as the web would log them; counts overlaps and
    gaps shorter than the policy's gap after the previous fetch."""

    def __init__(self, hosts: int, policy: PolitenessPolicy) -> None:
        self.policy = policy
        self.busy = [False] * hosts
        self.allowed = [-math.inf] * hosts
        self.overlaps = 0
        self.short_gaps = 0

    def start(self, host: int, now: float) -> None:
        if self.busy[host]:
            self.overlaps += 1
        elif now < self.allowed[host] - EPSILON:
            self.short_gaps += 1
        self.busy[host] = True

    def end(self, host: int, started: float, now: float) -> None:
        self.busy[host] = False
        self.allowed[host] = now + self.policy.adaptive_gap(now - started)


class Simulation:
    """One run of the model; :meth:`run` returns its :class:`Result`."""

    def __init__(self, web: Web, setup: Setup, costs: ShardCosts) -> None:
        if setup.shards < 1 or setup.workers < 1 or setup.concurrency < 1 or setup.page_rate <= 0:
            raise ValueError("shards, workers, concurrency and page_rate must be positive")
        if setup.starts and len(setup.starts) != setup.workers:
            raise ValueError("starts: one time per worker")
        self.web, self.setup, self.costs = web, setup, costs
        hosts = len(web.sizes)
        self.total_pages = web.pages
        self.shard = [shard_of(h, setup.shards) for h in range(hosts)]
        self.pending = [1] * hosts  # discovered, not claimed
        self.undiscovered = [size - 1 for size in web.sizes]
        self.in_flight = [False] * hosts
        # a crawl in full swing has its hosts' next fetches spread over a cycle, not all due at once
        self.next_ok = [setup.ramp * ((h * 0.6180339887498949) % 1) for h in range(hosts)]
        self.times = [HostTimes() for _ in range(hosts)]
        self.ready: list[list[tuple[float, int]]] = [[] for _ in range(setup.shards)]
        for h in range(hosts):
            self.ready[self.shard[h]].append((self.next_ok[h], h))
        for heap in self.ready:
            heapq.heapify(heap)
        self.shard_free_at = [0.0] * setup.shards
        self.shard_busy = [0.0] * setup.shards
        m = setup.workers
        self.free = [setup.concurrency] * m
        self.claiming = [False] * m
        self.wake_at: list[float | None] = [None] * m
        self.thread_busy = [False] * m  # the worker's one thread: a page's CPU work, then its shard call
        self.parsing: list[deque[int]] = [deque() for _ in range(m)]  # pages waiting for the thread
        self.cpu_busy = [0.0] * m
        self.sent_at = [0.0] * m  # when the thread's page went to the shards (its check, or its ack)
        self.content_turn = 0  # the shard the next content check goes to
        self.turn = [w % setup.shards for w in range(m)]
        self.round: list[list] = [[0, 0, 0, None] for _ in range(m)]  # asked, got, limit, least wait
        self.log = PolitenessLog(hosts, setup.policy)
        self.events: list[tuple] = []
        self.sequence = 0
        self.window = (0.0, math.inf)
        self.fetches = self.pages_done = self.ended_in_window = self.claim_calls = 0
        self.first_start, self.last_end = math.inf, 0.0

    # ------------------------------------------------------------------ plumbing

    def _at(self, when: float, kind: int, a: int = 0, b: float = 0.0, c: float = 0.0) -> None:
        self.sequence += 1
        heapq.heappush(self.events, (when, self.sequence, kind, a, b, c))

    def _serve(self, shard: int, now: float, cost: float) -> float:
        """The shard serves a request arriving ``now``: when it is done."""
        start = max(now, self.shard_free_at[shard])
        self.shard_free_at[shard] = start + cost
        self.shard_busy[shard] += _overlap(start, start + cost, self.window)
        return start + cost

    # ------------------------------------------------------------------ workers

    def _start_round(self, w: int, now: float) -> None:
        if self.claiming[w] or self.free[w] <= 0 or self.pages_done == self.total_pages:
            return  # (every page done: the workers stop asking, the last acks drain)
        self.claiming[w] = True
        self.wake_at[w] = None
        self.round[w] = [0, 0, self.free[w], None]
        self.turn[w] = (self.turn[w] + 1) % self.setup.shards  # each round starts one shard on
        self._ask_next_shard(w, now)

    def _ask_next_shard(self, w: int, now: float) -> None:
        state = self.round[w]
        shard = (self.turn[w] + state[0]) % self.setup.shards
        state[0] += 1
        self.claim_calls += 1
        # b: the worker's clock at sending (the claim's "now"); c: the shard asked
        self._at(now + self.setup.rtt / 2, CLAIM_AT_SHARD, w, now, shard)

    def _claim_at_shard(self, now: float, w: int, sent: float, asked: float) -> None:
        shard = int(asked)
        heap, state = self.ready[shard], self.round[w]
        want = state[2] - state[1]
        claimed = []
        while heap and len(claimed) < want and heap[0][0] <= sent:
            _, h = heapq.heappop(heap)
            self.pending[h] -= 1
            self.in_flight[h] = True
            claimed.append(h)
        wait = None if claimed or not heap else heap[0][0] - sent
        costs = self.costs
        done = self._serve(shard, now, costs.claim_call + len(claimed) * costs.claim_item)
        reply = done + self.setup.rtt / 2
        for h in claimed:  # each claimed URL's fetch starts when the reply is read
            self.fetches += 1
            self.first_start = min(self.first_start, reply)
            self.log.start(h, reply)
            self._at(reply + self.web.latencies[h], FETCH_END, h, reply, w)
        self._at(reply, CLAIM_REPLY, w, len(claimed), -1.0 if wait is None else wait)

    def _claim_reply(self, now: float, w: int, got: int, wait: float) -> None:
        state = self.round[w]
        state[1] += got
        self.free[w] -= got
        if wait >= 0:
            state[3] = wait if state[3] is None else min(state[3], wait)
        if state[1] < state[2] and state[0] < self.setup.shards:
            self._ask_next_shard(w, now)
            return
        self.claiming[w] = False
        if state[1] and self.free[w] > 0:
            self._start_round(w, now)  # some were due: the engine asks again at once
        elif not state[1] and self.free[w] > 0:
            self._sleep(w, now, HEARTBEAT if state[3] is None else min(HEARTBEAT, state[3]))

    def _sleep(self, w: int, now: float, seconds: float) -> None:
        if self.pages_done == self.total_pages:
            return
        when = now + max(seconds, EPSILON)
        self.wake_at[w] = when
        self._at(when, WAKE, w, when)

    def _fetch_end(self, now: float, h: int, started: float, worker: float) -> None:
        w = int(worker)
        self.log.end(h, started, now)
        self.last_end = now
        if self.window[0] <= now < self.window[1]:
            self.ended_in_window += 1
        self._at(now + self.setup.rtt / 2, FETCHED_AT_SHARD, h, started, now)
        self.parsing[w].append(h)
        if not self.thread_busy[w]:
            self._parse_next(w, now)

    def _parse_next(self, w: int, now: float) -> None:
        """The thread takes the next page: its CPU work, then (blocking, as the scheduler's
        Redis calls are) the ack and link checks at its host's shard."""
        if not self.parsing[w]:
            self.thread_busy[w] = False
            return
        self.thread_busy[w] = True
        h = self.parsing[w].popleft()
        cpu = 1 / self.setup.page_rate
        self.cpu_busy[w] += _overlap(now, now + cpu, self.window)
        self._at(now + cpu, CPU_DONE, w, h)

    def _cpu_done(self, now: float, w: int, host: float, _: float) -> None:
        h = int(host)
        found = min(self.web.fanout, self.undiscovered[h])
        self.undiscovered[h] -= found
        self.sent_at[w] = now
        then = CONTENT_AT_SHARD if self.costs.content else DONE_AT_SHARD
        self._at(now + self.setup.rtt / 2, then, h, found, w)

    def _content_at_shard(self, now: float, h: int, found: float, worker: float) -> None:
        """The page's content check, at the next shard in turn; then its ack is sent."""
        self.content_turn = (self.content_turn + 1) % self.setup.shards
        done = self._serve(self.content_turn, now, self.costs.content)
        # its reply, its other rounds, and the ack's way to its shard: CONTENT_ROUNDS round trips in all
        self._at(done + CONTENT_ROUNDS * self.setup.rtt, DONE_AT_SHARD, h, found, worker)

    def _done_reply(self, now: float, w: int, _: float, __: float) -> None:
        self.cpu_busy[w] += _overlap(self.sent_at[w], now, self.window)  # blocked on the shards
        self.pages_done += 1
        self.free[w] += 1  # the engine is done with the request: its slot is free
        self._parse_next(w, now)
        self._start_round(w, now)

    # ------------------------------------------------------------------ shards

    def _fetched_at_shard(self, now: float, h: int, started: float, ended: float) -> None:
        costs = self.costs
        self._serve(self.shard[h], now, costs.report_call + costs.report_item)
        gap = self.setup.policy.after_fetch(self.times[h], ended - started, 200, None)
        self.next_ok[h] = ended + gap
        self.in_flight[h] = False
        if self.pending[h]:
            heapq.heappush(self.ready[self.shard[h]], (self.next_ok[h], h))

    def _done_at_shard(self, now: float, h: int, discovered: float, worker: float) -> None:
        found = int(discovered)
        costs, links = self.costs, self.setup.links
        calls = (1 if links else 0) if self.setup.link_batch else links
        cost = costs.ack_call + costs.ack_item + calls * costs.link_call + links * costs.link_item
        done = self._serve(self.shard[h], now, cost)
        self._at(done + self.setup.rtt / 2, DONE_REPLY, int(worker))
        if found:
            if not self.pending[h] and not self.in_flight[h]:
                heapq.heappush(self.ready[self.shard[h]], (self.next_ok[h], h))
            self.pending[h] += found

    # ------------------------------------------------------------------ run

    def run(self, duration: float, warmup: float = 0.0, max_events: int = 50_000_000) -> Result:
        """Simulate until ``duration`` seconds, every page done and acked, or ``max_events``;
        rates and utilisations are measured over [warmup, duration)."""
        self.window = (warmup, duration)
        setup = self.setup
        for w in range(setup.workers):
            self._at(setup.starts[w] if setup.starts else 0.0, WAKE, w, -1.0)
        handlers = {CLAIM_AT_SHARD: self._claim_at_shard, CLAIM_REPLY: self._claim_reply,
                    FETCH_END: self._fetch_end, FETCHED_AT_SHARD: self._fetched_at_shard,
                    CPU_DONE: self._cpu_done, CONTENT_AT_SHARD: self._content_at_shard,
                    DONE_AT_SHARD: self._done_at_shard,
                    DONE_REPLY: self._done_reply}
        now = 0.0
        events = self.events
        for _ in range(max_events):
            if not events or events[0][0] >= duration:
                break
            now, _, kind, a, b, c = heapq.heappop(events)
            if kind == WAKE:
                if b < 0 or self.wake_at[a] == b:  # a start, or a wake-up not overtaken
                    self._start_round(a, now)
            else:
                handlers[kind](now, a, b, c)
        end = duration if events and events[0][0] >= duration else now
        window = max(EPSILON, min(duration, end) - warmup)
        span = self.last_end - self.first_start
        return Result(
            fetches=self.fetches, pages_done=self.pages_done,
            fetch_rate=self.ended_in_window / window,
            span_rate=self.fetches / span if span > 0 else 0.0,
            shard_utilisation=[busy / window for busy in self.shard_busy],
            worker_utilisation=sum(self.cpu_busy) / window / setup.workers,
            overlaps=self.log.overlaps, short_gaps=self.log.short_gaps,
            claim_calls=self.claim_calls, ended=end,
        )


def _overlap(start: float, end: float, window: tuple[float, float]) -> float:
    return max(0.0, min(end, window[1]) - max(start, window[0]))


def simulate(web: Web, setup: Setup, costs: ShardCosts, duration: float, warmup: float = 0.0,
             max_events: int = 50_000_000) -> Result:
    return Simulation(web, setup, costs).run(duration, warmup, max_events)
