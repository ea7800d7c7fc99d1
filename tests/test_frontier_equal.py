"""The rules that the Redis backends repeat in Lua give what the Python rules give.

Claim order across hosts (levels and their shares, earliest allowed time) and within a host,
budget spending, demotion, forced adds of done and queued URLs, and the first politeness
key's grouping are written once in ``crawler.frontier.policy`` and again in the Redis
backends' scripts. Each table below is a sequence of steps run on the embedded backend (the
Python rules) and on every other backend; the traces of what each step answered must be
the same, step by step.
"""

from __future__ import annotations

import pytest
from frontier_cases import entry

from crawler.frontier.api import Claim, Frontier
from crawler.frontier.backends.embedded.frontier import EmbeddedFrontier
from crawler.frontier.policy import HostBudget, PolitenessPolicy, PriorityLevels

POLICY = PolitenessPolicy(min_delay=1.0, delay_factor=0.0, max_delay=30.0, backoff_max=3600.0)
LEVELS = PriorityLevels(4)

Step = tuple  # ("add", [(url, level)], force) | ("claims", now, limit) | ("demote", host, margin) ...


def run(frontier: Frontier, steps: list[Step]) -> list[object]:
    """What each step answered; claims are fetched (200, 0.01 s) and acked at once."""
    trace: list[object] = []
    for step in steps:
        kind, *args = step
        if kind == "add":
            urls, force = args
            trace.append(frontier.add([entry(url, level=level) for url, level in urls], force))
        elif kind == "claims":
            now, limit = args
            claims, _ = frontier.claim_many(now, limit)
            trace.append(sorted(c.request for c in claims))
            for c in claims:
                frontier.fetched(c.fp, c.token, now, 0.01, 200)
                frontier.ack(c.fp, c.token)
        elif kind == "next":  # one claim at a time: the order itself
            (now,) = args
            got = frontier.next(now)
            trace.append(got.request if isinstance(got, Claim) else got is not None)
            if isinstance(got, Claim):
                frontier.fetched(got.fp, got.token, now, 0.01, 200)
                frontier.ack(got.fp, got.token)
        elif kind == "demote":
            host, margin = args
            trace.append(frontier.demote(host, margin))
        elif kind == "defer":
            host, until = args
            trace.append(frontier.defer(host, until))
        elif kind == "key":
            host, key = args
            frontier.set_politeness_key(host, key)
        elif kind == "counts":
            trace.append(frontier.pending_counts()[:2])
        else:
            raise ValueError(kind)
    return trace


def urls(host: str, n: int, level: int = 0, start: int = 1) -> list[tuple[str, int]]:
    return [(f"http://{host}/{i}", level) for i in range(start, start + n)]


def drain(now: float, n: int, every: float = 1.5) -> list[Step]:
    return [("next", now + i * every) for i in range(n)]


TABLES: dict[str, tuple[dict, list[Step]]] = {
    "levels across hosts, then their own allowed times": ({}, [
        ("add", [*urls("a.test", 2, 3), *urls("b.test", 2, 0), *urls("c.test", 2, 1)], False),
        ("defer", "a.test", 0.5), ("defer", "b.test", 0.7), ("defer", "c.test", 0.9),
        *drain(10.0, 7),
    ]),
    "within a host: the best level first, in order of arrival": ({}, [
        ("add", [("http://h.test/x", 2), ("http://h.test/y", 0), ("http://h.test/z", 1),
                 ("http://h.test/w", 0), ("http://h.test/v", 3)], False),
        *drain(0.0, 6),
    ]),
    "a host's budget is spent once": ({"budget": HostBudget(3)}, [
        ("add", urls("b.test", 5), False),
        *drain(0.0, 5),
        ("add", urls("b.test", 2, start=6), False),
        ("counts",),
    ]),
    "a demoted host goes last, with its margin": ({"budget": HostBudget(10)}, [
        ("add", [*urls("d.test", 6, 0), *urls("e.test", 3, 2)], False),
        ("defer", "e.test", 0.5),
        ("next", 1.0),
        ("demote", "d.test", 1),
        *drain(3.0, 6),
        ("counts",),
    ]),
    "a forced add queues a done URL again, never a queued one twice": ({}, [
        ("add", urls("f.test", 2), False),
        ("next", 0.0),
        ("add", urls("f.test", 2), True),
        ("add", urls("f.test", 2), False),
        ("counts",),
        *drain(5.0, 3),
    ]),
    "hosts under one politeness key take turns": ({"hold_new_hosts": True}, [
        ("add", [*urls("p.test", 2), *urls("q.test", 2)], False),
        ("key", "p.test", "10.0.0.1"), ("key", "q.test", "10.0.0.1"),
        ("claims", 0.0, 4), ("claims", 0.5, 4), ("claims", 2.0, 4), ("claims", 4.0, 4), ("claims", 6.0, 4),
    ]),
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_backend_answers_as_the_python_rules(make_frontier, name):
    options, steps = TABLES[name]
    if make_frontier.backend in ("redis-sharded", "redis-cluster") and "key" in {s[0] for s in steps}:
        pytest.skip("a politeness key groups the hosts of one shard only")
    options = {"policy": POLICY, "levels": LEVELS, **options}
    reference = EmbeddedFrontier(":memory:", **options)
    expected = run(reference, steps)
    reference.close()
    frontier = make_frontier(**options)
    try:
        assert run(frontier, steps) == expected
    finally:
        frontier.close()


def test_the_tables_say_something(make_frontier):
    """A trace with claims in it: no table passes by claiming nothing on every backend."""
    if make_frontier.backend != "embedded":
        pytest.skip("the tables are checked once")
    def claimed(trace: list[object]) -> int:
        return sum(1 if isinstance(x, str) else len(x) if isinstance(x, list) and x and isinstance(x[0], str)
                   else 0 for x in trace)

    for options, steps in TABLES.values():
        frontier = EmbeddedFrontier(":memory:", **{"policy": POLICY, "levels": LEVELS, **options})
        assert claimed(run(frontier, steps)) >= 2
        frontier.close()
