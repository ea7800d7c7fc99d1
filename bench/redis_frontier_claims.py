"""Part 2 of the Redis frontier bench: claim + ack pairs per second, ours against scrapy-redis's queue."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import redis
import scrapy
from common import fmt_table
from redis_server import RedisServer
from scrapy_redis import defaults as sr_defaults
from scrapy_redis import picklecompat
from scrapy_redis.queue import PriorityQueue

from crawler.frontier.api import Entry, Fetch
from crawler.frontier.backends.redis.single import RedisFrontier
from crawler.frontier.policy import PolitenessPolicy
from crawler.scheduling.codec import request_to_json
from crawler.urls.keys import fingerprint


class CountingConnection(redis.Connection):
    """A redis-py connection that counts round trips: each packet of commands it sends
    (one command, or a whole pipeline / MULTI..EXEC) waits for its replies once."""

    sends = 0

    def send_packed_command(self, command: object, check_health: bool = True) -> None:
        CountingConnection.sends += 1
        super().send_packed_command(command, check_health)


def redis_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


@dataclass
class OpsResult:
    pairs: int
    seconds: float
    round_trips: int
    client_cpu: float
    server_cpu: float
    best: float = 0.0  # pairs/s of the best round

    @property
    def per_second(self) -> float:
        return self.pairs / self.seconds

    @classmethod
    def total(cls, rounds: list[OpsResult]) -> OpsResult:
        result = cls(*(sum(getattr(r, name) for r in rounds) for name in
                       ("pairs", "seconds", "round_trips", "client_cpu", "server_cpu")))
        result.best = max(r.per_second for r in rounds)
        return result


def measure(client: redis.Redis, pairs: int, step: object) -> OpsResult:
    """Run ``step(most)`` (which returns how many pairs it did) until ``pairs`` are done."""
    CountingConnection.sends = 0
    server0, cpu0, started = redis_cpu(client), time.process_time(), time.perf_counter()
    done = 0
    while done < pairs:
        done += step(pairs - done)  # type: ignore[operator]
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu0
    trips = CountingConnection.sends - 1  # the INFO below is one of them
    server = redis_cpu(client) - server0
    return OpsResult(done, seconds, trips, cpu, server)


def cores_busy(seconds: float = 1.0) -> float:
    """The share of the machine's CPU time busy over ``seconds`` (Linux ``/proc/stat``):
    the load the ratio is measured under."""
    def sample() -> tuple[int, int]:
        values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return sum(values), values[3] + values[4]  # all, idle + iowait
    total0, idle0 = sample()
    time.sleep(seconds)
    total1, idle1 = sample()
    return 1 - (idle1 - idle0) / max(1, total1 - total0)


ROUNDS = 5  # claim + ack: measured in rounds, ours and theirs in turn


def claim_ack(n: int, hosts: int, batch: int, tmp: Path) -> tuple[OpsResult, OpsResult]:
    warm = 100
    busy = cores_busy()
    n -= n % ROUNDS
    spider = scrapy.Spider(name="bench")
    urls = [f"http://host{i % hosts}.example/path/{i}/page.html" for i in range(n + warm)]
    server = RedisServer(tmp).start()
    try:
        client = redis.Redis.from_url(server.url, connection_class=CountingConnection)
        # Ours: N entries (+ warm-up) over `hosts` hosts, every host always due.
        frontier = RedisFrontier(client, "ops", policy=PolitenessPolicy(min_delay=0, delay_factor=0),
                                 expected_urls=n)
        entries = []
        for url in urls:
            entries.append(Entry(fingerprint(url), urlsplit(url).hostname or "",
                                 0, request_to_json(scrapy.Request(url), spider)[0]))
            if len(entries) == 1000:
                frontier.add(entries)
                entries.clear()
        frontier.add(entries)

        steps = {"claim_many": [0.0, 0], "fetched_many": [0.0, 0], "ack_many": [0.0, 0]}  # s, trips

        def timed(name: str, call: object, *args: object) -> object:
            sends, started = CountingConnection.sends, time.perf_counter()
            result = call(*args)  # type: ignore[operator]
            steps[name][0] += time.perf_counter() - started
            steps[name][1] += CountingConnection.sends - sends
            return result

        def ours_step(most: int) -> int:
            now = time.time()
            claims, _ = timed("claim_many", frontier.claim_many, now, min(batch, most))
            assert claims, "nothing claimed"
            timed("fetched_many", frontier.fetched_many,
                  [Fetch(c.fp, c.token, now, 0.05, 200) for c in claims])
            timed("ack_many", frontier.ack_many, [(c.fp, c.token) for c in claims])
            return len(claims)

        # Theirs: the queue class and key its Scheduler uses, with the pickle serializer.
        queue = PriorityQueue(server=client, spider=spider,
                              key=sr_defaults.SCHEDULER_QUEUE_KEY % {"spider": spider.name},
                              serializer=picklecompat)
        for url in urls[:n]:
            queue.push(scrapy.Request(url))
        more = iter([scrapy.Request(f"http://host{i % hosts}.example/more/{i}/page.html")
                     for i in range(n + warm)])  # new URLs: the queue keeps its size

        def theirs_step(most: int) -> int:
            queue.push(next(more))
            request = queue.pop()
            assert request is not None
            return 1

        for _ in range(warm):  # loads our scripts (NOSCRIPT, SCRIPT LOAD) outside the timing
            ours_step(1)
            theirs_step(1)
        for step in steps.values():
            step[:] = [0.0, 0]
        # Interleaved rounds, so that both sides share whatever else the machine is doing.
        ours_rounds, theirs_rounds = [], []
        for _ in range(ROUNDS):
            ours_rounds.append(measure(client, n // ROUNDS, ours_step))
            theirs_rounds.append(measure(client, n // ROUNDS, theirs_step))
        ours, theirs = OpsResult.total(ours_rounds), OpsResult.total(theirs_rounds)
        ours_left = (frontier.queued, frontier.leased)
        ours_done = frontier.done_count()
        theirs_left = len(queue)
    finally:
        server.stop()
    per = {name: f"{1e6 * t / ours.pairs:.0f} µs and {trips / ours.pairs:.3f} round trips a pair"
           for name, (t, trips) in steps.items()}
    print(f"\n# Claim + ack pairs per second, one worker process, one local Redis\n\n"
          f"- {n:,} pairs each after warm-up, in {ROUNDS} rounds taken in turn (ours, theirs, ...); "
          "pairs/s over all rounds, and of the best round; one client connection. "
          f"Ours: {n:,} URLs over {hosts:,} hosts, every host always due (min delay 0, factor 0), "
          f"drained to {ours_left[0]} queued, {ours_left[1]} leased, {ours_done:,} done. Theirs: "
          f"{n:,} Requests queued, each pair pushes a new one (queue left at {theirs_left:,})\n"
          "- round trips counted on the client's connection (one per packet sent: one command, or "
          "one pipeline / MULTI..EXEC); CPU per pair: client from `process_time`, Redis from `INFO cpu`\n"
          f"- ours, a step of up to {batch} pairs: `claim_many(now, {batch})` = "
          "one claim script (for each claim: pops the earliest due host of the level the policy's "
          "cycle names, takes the URL of the level the host's own cursor names, marks its "
          "politeness group busy, writes the lease with a token, returns the group's times) "
          f"[{per['claim_many']}]; `fetched_many(...)` = the policy in Python from the times the "
          "claim read, one script writing each next allowed time and releasing the host where "
          f"those times still hold [{per['fetched_many']}]; `ack_many(...)` = one ack script "
          f"[{per['ack_many']}]\n"
          "- theirs, a pair: `push` = `Request.to_dict` + pickle + ZADD; `pop` = MULTI ZRANGE 0 0 + "
          "ZREMRANGEBYRANK 0 0 EXEC (one round trip) + unpickle + `request_from_dict`. No per-host "
          "state, no lease, no ack: a popped request that is never fetched is lost\n")
    rows = [[name, what, f"{r.round_trips / r.pairs:.2f}", f"{r.per_second:,.0f}", f"{r.best:,.0f}",
             f"{1e6 * r.client_cpu / r.pairs:.0f}", f"{1e6 * r.server_cpu / r.pairs:.0f}"]
            for name, what, r in (("ours: RedisFrontier", f"claim + release + ack, {batch} a step", ours),
                                  ("scrapy-redis: PriorityQueue", "push + pop", theirs))]
    print(fmt_table(["queue", "a pair", "round trips/pair", "pairs/s", "best round", "client CPU µs/pair",
                     "Redis CPU µs/pair"], rows))
    print(f"\nRatio: ours {ours.per_second / theirs.per_second:.2f}x scrapy-redis's pairs/s "
          f"(best rounds: {ours.best / theirs.best:.2f}x); CPU a pair, client + Redis: ours "
          f"{1e6 * (ours.client_cpu + ours.server_cpu) / ours.pairs:.0f} µs, theirs "
          f"{1e6 * (theirs.client_cpu + theirs.server_cpu) / theirs.pairs:.0f} µs.\n"
          f"Cores busy before (the last second): {busy:.0%}. Theirs waits for 2 round trips a pair, "
          "ours for 0.1: "
          "on a loaded machine a waiting process is woken sooner (its core never idles), which speeds "
          "theirs more than ours, so the ratio is lower there (2 busy loops on 2 cores: about 4x).",
          flush=True)
    return ours, theirs
