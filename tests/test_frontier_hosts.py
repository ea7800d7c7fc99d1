"""The frontier contract, on a fake clock: host state (politeness keys, holds, Crawl-delay,
budgets, demotion) and priorities. Every backend must pass it."""

from __future__ import annotations

import sqlite3

import pytest
from frontier_cases import claim, entry, finish, hosts_on_one_shard

from crawler.frontier.api import Claim, Fetch, FrontierFull
from crawler.frontier.policy import HostBudget, PriorityLevels


def fetch_all(frontier, now: float, step: float) -> set[int]:
    """Claim and finish every URL the frontier holds, ``step`` seconds apart: their fingerprints."""
    fps = set()
    for _ in range(100):  # bounded: a few URLs each test
        if not frontier.has_pending():
            return fps
        c = claim(frontier, now)
        fps.add(c.fp)
        finish(frontier, c, now)
        now += step
    raise AssertionError("the frontier still has URLs after 100 claims")


def test_a_hosts_run_of_unanswered_fetches_is_counted_until_it_answers(make_frontier):
    f = make_frontier()
    f.add([entry(f"http://dead.test/{i}") for i in range(2)])
    assert [f.unanswered("dead.test") for _ in range(3)] == [1, 2, 3]
    finish(f, claim(f, 0.0), 0.0, status=None)  # a fetch with no answer leaves the run going
    assert f.unanswered("dead.test") == 4 and f.unanswered("other.test") == 1
    finish(f, claim(f, 1000.0), 1000.0, status=503)  # any answer, an error page too, ends it
    assert f.unanswered("dead.test") == 1


def test_a_hold_reported_with_the_fetch_keeps_the_host_until_then(make_frontier):
    f = make_frontier()
    f.add([entry("http://down.test/1"), entry("http://down.test/2")])
    c = claim(f, 0.0)
    assert f.fetched_many([Fetch(c.fp, c.token, 0.0, 0.01, None, hold_until=60.0)]) == [pytest.approx(2.0)]
    assert f.retry_later(c.fp, c.token, c.request, 60.0)
    assert f.next(59.0) == pytest.approx(1.0)  # held past the policy's 2 s backoff
    assert claim(f, 60.0).host == "down.test"


def test_crawl_delay_floors_the_gap_after_the_next_fetch(make_frontier):
    f = make_frontier()
    f.add([entry("http://a.test/1"), entry("http://a.test/2")])
    finish(f, claim(f, 0.0), 0.0, seconds=0.2)  # last gap 2 s (10 x 0.2)
    c = claim(f, 2.0)
    f.set_crawl_delay("a.test", 7.0)  # robots.txt, read while the page was leased
    assert f.fetched(c.fp, c.token, 2.0, 0.01, 200) == 7.0


def test_claims_and_acks_in_batches_keep_one_lease_per_host(make_frontier):
    f = make_frontier()
    f.add([entry(f"http://h{i}.test/{j}") for i in range(5) for j in range(2)])
    claims, wait = f.claim_many(0.0, 3)
    assert len(claims) == 3 and wait is None and len({c.host for c in claims}) == 3
    more, wait = f.claim_many(0.0, 10)  # two hosts left free; the rest are busy
    assert len(more) == 2 and wait is None
    assert {c.host for c in claims + more} == {f"h{i}.test" for i in range(5)}
    gaps = f.fetched_many([Fetch(c.fp, c.token, 0.0, 0.01, 200) for c in claims + more])
    assert gaps == [1.0] * 5
    assert f.fetched_many([Fetch(claims[0].fp, claims[0].token, 0.0, 0.01, 200)]) == [None]  # reported
    assert f.ack_many([(c.fp, c.token) for c in claims + more]) == [True] * 5
    assert f.ack_many([(claims[0].fp, claims[0].token)]) == [False]
    none, wait = f.claim_many(0.5, 10)
    assert none == [] and wait == pytest.approx(0.5)  # every host waits out its gap
    assert len(f.claim_many(1.0, 10)[0]) == 5
    assert f.claim_many(1.0, 10) == ([], None)  # all busy


def test_ack_without_fetch_frees_the_host(make_frontier):
    f = make_frontier()
    f.add([entry("http://a.test/1"), entry("http://a.test/2")])
    c = claim(f, 0.0)
    assert f.ack(c.fp, c.token)  # e.g. refused by a middleware before any fetch
    assert claim(f, 0.0).host == "a.test"


def test_host_budget_drops_the_rest_of_a_host(make_frontier):
    f = make_frontier(budget=HostBudget(2))
    f.add([entry(f"http://a.test/{i}") for i in range(5)])
    now = 0.0
    for _ in range(2):
        c = claim(f, now)
        finish(f, c, now)
        now += 1.0
    assert f.next(now + 10) is None
    assert not f.has_pending()
    assert f.counters["dropped/budget"] == 3
    assert f.add([entry("http://a.test/9")]) == [False]


def test_a_demoted_host_goes_last_and_keeps_only_its_own_budget(make_frontier):
    f = make_frontier(levels=PriorityLevels(levels=2))
    f.add([entry(f"http://a.test/{i}", level=0) for i in range(4)] + [entry("http://b.test/1", level=1)])
    c = claim(f, 0.0)
    finish(f, c, 0.0)
    assert f.demote("a.test", 2) == 3  # its 3 queued URLs moved to level 1; 1 + 2 fetches in all
    f.add([entry("http://a.test/9", level=0)])
    assert f.queued == 5
    hosts, now = [], 10.0
    while (c := f.next(now)) is not None:
        assert isinstance(c, Claim), c
        hosts.append(c.request)
        finish(f, c, now)
        now += 10.0
    assert sorted(hosts) == ["http://a.test/1", "http://a.test/2", "http://b.test/1"]
    assert f.counters["dropped/budget"] == 2  # a.test/3 and a.test/9: past its 3 fetches
    assert f.add([entry("http://a.test/10")]) == [False]


def test_a_host_demoted_again_gets_its_margin_again_within_the_crawl_budget(make_frontier):
    # Demoted, a host that still gives new pages is demoted again: the margin counts from
    # its claims then (a trap's real pages are not lost), never past the crawl's budget.
    f = make_frontier(budget=HostBudget(6))
    f.add([entry(f"http://a.test/{i}") for i in range(10)])
    now = 0.0
    for _ in range(2):
        finish(f, claim(f, now), now)
        now += 10.0
    f.demote("a.test", 2)
    finish(f, claim(f, now), now)  # 3 claims: one of its 2 more left
    f.demote("a.test", 2)  # 2 more from here: 5 in all
    fetched = 3
    while (c := f.next(now + 10.0 * fetched)) is not None:
        assert isinstance(c, Claim), c
        finish(f, c, now + 10.0 * fetched)
        fetched += 1
    assert fetched == 5
    assert f.counters["dropped/budget"] == 5
    f.demote("a.test", 4)  # again: 4 more would pass the crawl's 6 pages, so 1
    assert f.add([entry("http://a.test/98"), entry("http://a.test/99")]) == [True, True]
    finish(f, claim(f, now + 100.0), now + 100.0)
    assert f.next(now + 200.0) is None and f.counters["dropped/budget"] == 6


def test_priorities_order_a_host_queue(make_frontier):
    f = make_frontier(levels=PriorityLevels(levels=2))
    f.add([entry(f"http://a.test/low{i}", level=1) for i in range(4)])
    f.add([entry(f"http://a.test/high{i}", level=0) for i in range(4)])
    order, now = [], 0.0
    while f.has_pending():
        c = claim(f, now)
        order.append(c.request.rsplit("/", 1)[1])
        finish(f, c, now)
        now += 1.0
    position = {name: i for i, name in enumerate(order)}
    assert order[0] == "high0"
    assert sum(position[f"high{i}"] for i in range(4)) < sum(position[f"low{i}"] for i in range(4))
    assert position["low0"] < position["high3"]  # low priority still moves
    assert sorted(order) == sorted([f"high{i}" for i in range(4)] + [f"low{i}" for i in range(4)])


def test_among_due_hosts_the_one_with_the_most_urgent_url_goes_first(make_frontier):
    f = make_frontier()
    f.add([entry(f"http://a.test/{i}", level=3) for i in range(3)])  # first, by name too: ties go by it
    f.add([entry("http://b.test/1", level=0), entry("http://b.test/2", level=3)])
    assert claim(f, 0.0).host == "b.test"


def test_many_due_hosts_of_a_low_level_still_get_a_biased_share(make_frontier):
    f = make_frontier()
    f.add([entry(f"http://a{i}.test/", level=3) for i in range(20)])  # first, by name too
    f.add([entry(f"http://b{i}.test/", level=0) for i in range(20)])
    claims, _ = f.claim_many(0.0, 15)
    low = sum(c.host.startswith("a") for c in claims)
    assert len(claims) == 15
    assert claims[0].host.startswith("b") or make_frontier.backend in ("redis-sharded", "redis-cluster")
    assert 1 <= low <= 3  # 1 of the cycle's 15 positions is level 3's (2 where shards plan apart)


def test_hosts_come_in_order_of_earliest_allowed_time(make_frontier):
    f = make_frontier()
    f.add([entry(f"http://{h}.test/{i}") for h in "abc" for i in range(2)])
    claims = [claim(f, 0.0) for _ in range(3)]
    for c, seconds in zip(claims, (0.3, 0.1, 0.2), strict=True):
        f.fetched(c.fp, c.token, 1.0, seconds, 200)
    assert [claim(f, 10.0).host for _ in range(3)] == ["b.test", "c.test", "a.test"]


def test_state_survives_a_crash_and_leases_are_requeued(make_frontier, tmp_path):
    if make_frontier.backend != "embedded":
        pytest.skip("the embedded backend's own file; Redis state is shared by design")
    path = tmp_path / "frontier.sqlite"
    f = make_frontier(path=path)
    f.add([entry(f"http://a.test/{i}") for i in range(3)])
    done = claim(f, 0.0)
    finish(f, done, 0.0)
    leased = claim(f, 5.0)
    f.commit()
    f.add([entry("http://a.test/lost")])  # not committed: lost with the process
    f.db.close()  # the process dies: the open transaction is lost, as in a kill -9,
    f.store.lock.close()  # ...and its lock on the crawl state goes with it
    again = make_frontier(path=path)
    assert again.queued == 2  # the leased URL and the one never fetched
    assert again.counters["leases/recovered"] == 1
    assert again.add([entry("http://a.test/0")]) == [False]  # done stays seen
    fps = fetch_all(again, 10.0, 2)
    assert leased.fp in fps and done.fp not in fps and len(fps) == 2


def test_a_commit_without_room_leaves_memory_as_a_restart_finds_the_file(make_frontier, tmp_path,
                                                                          monkeypatch):
    if make_frontier.backend != "embedded":
        pytest.skip("the embedded backend's own file; Redis has no disk of its own here")
    full = [False]

    class FullDisk(sqlite3.Connection):
        def commit(self) -> None:
            if full[0] and self.in_transaction:
                self.rollback()  # as SQLite does when its commit finds no room
                error = sqlite3.OperationalError("database or disk is full")
                error.sqlite_errorcode = sqlite3.SQLITE_FULL
                raise error
            super().commit()

    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect",
                        lambda *args, **kwargs: connect(*args, factory=FullDisk, **kwargs))
    f = make_frontier(path=tmp_path / "frontier.sqlite")
    f.add([entry(f"http://a.test/{i}") for i in range(3)])
    f.set_crawl_delay("a.test", 4.0)
    done = claim(f, 0.0)
    finish(f, done, 0.0)
    f.commit()
    leased = claim(f, 10.0)
    f.add([entry("http://b.test/new"), entry("http://a.test/more")])
    full[0] = True
    with pytest.raises(FrontierFull):
        f.commit()
    full[0] = False
    assert f.add([entry("http://a.test/0")]) == [False]  # done before stays seen
    assert (f.queued, f.leased, "b.test" in f.hosts.hosts) == (2, 0, False)  # as in the file
    assert not f.ack(leased.fp, leased.token)  # its lease is gone: the URL is fetched again
    fps = fetch_all(f, 20.0, 5)
    assert leased.fp in fps and done.fp not in fps and len(fps) == 2
    assert f.hosts.hosts["a.test"].group.times.crawl_delay == 4.0  # what only memory knew, kept
    f.commit()


def test_hosts_with_one_politeness_key_share_one_fetch_and_one_gap(make_frontier):
    if make_frontier.backend == "redis-cluster":
        pytest.skip("a politeness key groups the hosts of one shard; a.test and b.test are on two")
    f = make_frontier(hold_new_hosts=True)
    f.add([entry("http://a.test/1"), entry("http://b.test/1"), entry("http://c.test/1")])
    assert sorted(f.new_hosts) == ["a.test", "b.test", "c.test"]
    assert f.next(0.0) is None  # held until their keys are known
    f.set_politeness_key("a.test", "10.0.0.1")
    f.set_politeness_key("b.test", "10.0.0.1")
    f.set_politeness_key("c.test", "10.0.0.2")
    first, second = claim(f, 0.0), claim(f, 0.0)
    assert {first.host, second.host} in ({"a.test", "c.test"}, {"b.test", "c.test"})
    assert f.next(0.0) is None  # the other host on 10.0.0.1 waits for the fetch in flight
    shared = first if first.host != "c.test" else second
    assert f.fetched(shared.fp, shared.token, 1.0, 0.01, 200) == 1.0
    assert f.next(1.5) == pytest.approx(0.5)  # and for the gap after it
    assert claim(f, 2.0).host in {"a.test", "b.test"} - {shared.host}


def test_a_host_named_by_an_address_shares_the_key_of_that_address(make_frontier):
    # a.test's key is 10.0.0.1, also the name of a host that joins the crawl later.
    if make_frontier.backend == "redis-cluster":
        pytest.skip("a politeness key groups the hosts of one shard; the two names are on two")
    f = make_frontier(hold_new_hosts=True)
    f.add([entry("http://a.test/1"), entry("http://a.test/2")])
    f.set_politeness_key("a.test", "10.0.0.1")
    first = claim(f, 0.0)
    f.add([entry("http://10.0.0.1/1")])
    assert "10.0.0.1" in f.new_hosts  # a new host, though its key was known before it
    f.set_politeness_key("10.0.0.1", "10.0.0.1")
    assert f.next(0.0) is None  # a.test's fetch holds the address
    assert f.fetched(first.fp, first.token, 1.0, 0.01, 200) == 1.0
    assert f.next(1.5) == pytest.approx(0.5)
    assert claim(f, 2.0).host in {"a.test", "10.0.0.1"}
    assert f.next(2.0) is None  # still one fetch at a time on the address


def test_a_host_keeps_the_first_politeness_key_it_is_given(make_frontier):
    # Round-robin DNS gives workers different addresses: the crawl keeps the first.
    f = make_frontier(hold_new_hosts=True)
    a, b = hosts_on_one_shard(f, 2)
    f.add([entry(f"http://{a}/1"), entry(f"http://{b}/1")])
    f.set_politeness_key(a, "10.0.0.1")
    f.set_politeness_key(b, "10.0.0.1")
    f.set_politeness_key(a, "10.0.0.9")  # another worker's answer: ignored
    claim(f, 0.0)
    assert f.next(0.0) is None  # both hosts still share one fetch at a time


def test_a_host_keyed_while_its_fetch_is_in_flight_is_not_fetched_twice(make_frontier):
    f = make_frontier()
    a, b = hosts_on_one_shard(f, 2)
    f.add([entry(f"http://{a}/1"), entry(f"http://{a}/2"), entry(f"http://{b}/1")])
    first = claim(f, 0.0)
    f.set_politeness_key(first.host, "10.0.0.1")
    other = claim(f, 0.0)
    assert other.host != first.host and f.next(0.0) is None  # the fetch in flight moved with it
    f.set_politeness_key(other.host, "10.0.0.1")
    finish(f, first, 0.5)
    assert f.next(0.5) is None  # other's fetch is still in flight under the shared key...
    finish(f, other, 0.5)
    assert claim(f, 100.0).host == first.host  # ...and the last URL goes once both are done


def test_the_dashboards_host_details_read_in_flight_next_allowed_and_backoff(make_frontier):
    if make_frontier.backend == "embedded":
        pytest.skip("the embedded backend's rows are read by SQL (crawler.service.counts)")
    f = make_frontier()
    f.add([entry("http://a.test/1"), entry("http://a.test/2"), entry("http://b.test/1")])
    now = 1000.0
    first = claim(f, now)
    idle_host = "b.test" if first.host == "a.test" else "a.test"
    busy, idle = f.host_details([first.host, idle_host])
    assert (busy[0], busy[2], busy[3]) == (1, 0.0, 0) and idle[0] == 0
    f.fetched(first.fp, first.token, now, 0.5, 503, 120.0)  # 503 with Retry-After: backed off
    in_flight, next_allowed, backoff, _ = f.host_details([first.host])[0]
    assert in_flight == 0 and backoff >= 120 and next_allowed >= now + 120
