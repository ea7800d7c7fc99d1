"""The frontier contract (DESIGN.md), on a fake clock. Every backend must pass it."""

from __future__ import annotations

import uuid

import pytest
import redis
from redis_cluster import RedisClusterNodes
from redis_server import RedisServer

from crawler.frontier.api import Claim, Entry, Fetch, Revisit, fetch_seconds_counts
from crawler.frontier.cluster import ClusterFrontier
from crawler.frontier.embedded import EmbeddedFrontier
from crawler.frontier.embedded_store import read_counts
from crawler.frontier.policy import HostBudget, PolitenessPolicy, PriorityLevels
from crawler.frontier.redis import RedisFrontier
from crawler.frontier.sharded import ShardedRedisFrontier, open_redis_frontier
from crawler.urls.keys import url_fingerprint

POLICY = PolitenessPolicy(min_delay=1.0, delay_factor=10.0, max_delay=30.0, backoff_max=3600.0)


def entry(url: str, host: str | None = None, level: int = 0) -> Entry:
    host = host or url.split("/")[2]
    return Entry(url_fingerprint(url), host, level, url)


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server.url
    server.stop()


@pytest.fixture(scope="module")
def cluster_url(tmp_path_factory):
    nodes = RedisClusterNodes(tmp_path_factory.mktemp("cluster")).start()
    yield nodes.url
    nodes.stop()


@pytest.fixture(params=["embedded", "redis", "redis-bloom", "redis-sharded", "redis-cluster"])
def make_frontier(request, tmp_path):
    """Each contract test runs against both backends."""
    crawl_id = uuid.uuid4().hex

    def make(**kwargs) -> EmbeddedFrontier | RedisFrontier:
        kwargs.setdefault("policy", POLICY)
        if request.param == "embedded":
            return EmbeddedFrontier(kwargs.pop("path", ":memory:"), **kwargs)
        kwargs.pop("path", None)
        if request.param == "redis-bloom":
            kwargs["seen_set"] = "bloom"
        if request.param == "redis-cluster":  # 3 masters, REDIS_SHARDS' default of hash tags
            client = redis.RedisCluster.from_url(request.getfixturevalue("cluster_url"))
            return open_redis_frontier([client], crawl_id, **kwargs)
        url = request.getfixturevalue("redis_url")
        if request.param == "redis-sharded":  # two shards: databases 1 and 2 of one server
            return open_redis_frontier([redis.Redis.from_url(f"{url}/{db}") for db in (1, 2)],
                                       crawl_id, **kwargs)
        return RedisFrontier(redis.Redis.from_url(url), crawl_id, **kwargs)
    make.backend = request.param
    return make


def claim(frontier, now) -> Claim:
    result = frontier.next(now)
    assert isinstance(result, Claim), result
    return result


def finish(frontier, c: Claim, now: float, seconds: float = 0.01, status: int | None = 200,
           retry_after: float | None = None) -> float:
    gap = frontier.fetched(c.fp, c.token, now, seconds, status, retry_after)
    frontier.ack(c.fp, c.token)
    return gap


def test_add_is_idempotent_by_url(make_frontier):
    f = make_frontier()
    assert f.add([entry("http://a.test/1"), entry("http://a.test/1"), entry("http://a.test/2")]) == [
        True, False, True]
    assert f.queued == 2
    assert f.counters["dropped/seen"] == 1


def test_a_host_is_never_leased_twice_at_once(make_frontier):
    f = make_frontier()
    f.add([entry("http://a.test/1"), entry("http://a.test/2"), entry("http://b.test/1")])
    first, second = claim(f, 0.0), claim(f, 0.0)
    assert {first.host, second.host} == {"a.test", "b.test"}
    assert f.next(0.0) is None  # a.test busy, b.test empty: nothing to give, not drained
    assert f.has_pending()


def test_gap_after_a_fetch_follows_the_policy(make_frontier):
    f = make_frontier()
    f.add([entry(f"http://a.test/{i}") for i in range(3)])
    c = claim(f, 100.0)
    assert finish(f, c, 100.5, seconds=0.5) == pytest.approx(5.0)
    assert f.next(101.0) == pytest.approx(4.5)
    assert claim(f, 105.5).host == "a.test"


def test_backoff_doubles_and_honours_retry_after(make_frontier):
    f = make_frontier()
    f.add([entry(f"http://a.test/{i}") for i in range(4)])
    c = claim(f, 0.0)
    assert finish(f, c, 0.0) == 1.0
    c = claim(f, 1.0)
    assert finish(f, c, 1.0, status=503) == 2.0
    c = claim(f, 3.0)
    assert finish(f, c, 3.0, status=429, retry_after=60) == 60.0
    assert f.next(10.0) == pytest.approx(53.0)
    assert f.counters["backoffs"] == 1


def test_unacked_leases_expire_and_are_given_again(make_frontier):
    f = make_frontier(lease_seconds=30)
    f.add([entry("http://a.test/1")])
    c = claim(f, 0.0)
    f.fetched(c.fp, c.token, 1.0, 0.01, 200)
    assert f.reap(20.0) == 0
    assert f.reap(31.0) == 1
    again = claim(f, 31.0)
    assert again.fp == c.fp and again.token != c.token
    assert not f.ack(c.fp, c.token)  # the stale lease cannot ack
    assert f.ack(again.fp, again.token)
    assert not f.has_pending()


def test_requeue_of_a_retry_puts_the_url_back(make_frontier):
    f = make_frontier()
    f.add([entry("http://a.test/1")])
    c = claim(f, 0.0)
    f.fetched(c.fp, c.token, 0.0, 0.01, 503)
    assert f.requeue(c.fp, c.token, c.request)
    assert f.next(0.5) == pytest.approx(1.5)  # still backing off
    assert claim(f, 2.0).fp == c.fp


def test_a_retry_waits_its_delay_durably_and_then_is_queued_again(make_frontier, tmp_path):
    path = tmp_path / "f.sqlite"
    f = make_frontier(path=path)
    f.add([entry("http://a.test/1"), entry("http://a.test/2")])
    c = claim(f, 0.0)
    f.fetched(c.fp, c.token, 0.0, 0.01, None)  # no response
    assert f.retry_later(c.fp, c.token, '{"url": "http://a.test/1", "attempt": 1}', due=60.0)
    assert not f.retry_later(c.fp, c.token, c.request, due=60.0)  # its lease has ended
    assert f.has_pending() and f.waiting == 1 and f.queued == 1
    other = claim(f, 10.0)  # the host is free for its other URLs meanwhile
    finish(f, other, 10.0)
    assert f.due_retries(59.0) == 0 and f.next(59.0) is None
    if make_frontier.backend == "embedded":  # survives a restart
        f.close()
        f = make_frontier(path=path)
    assert f.due_retries(60.0) == 1 and f.waiting == 0
    again = claim(f, 60.0)
    assert again.fp == c.fp and again.request == '{"url": "http://a.test/1", "attempt": 1}'
    finish(f, again, 60.0)
    assert not f.has_pending()


def test_a_revisit_keeps_the_url_done_until_it_is_due_then_queues_it_again(make_frontier, tmp_path):
    from crawler.frontier.api import Revisit

    path = tmp_path / "f.sqlite"
    f = make_frontier(path=path)
    f.add([entry("http://a.test/1"), entry("http://a.test/2", level=2)])
    first, second = claim(f, 0.0), None
    f.fetched(first.fp, first.token, 0.0, 0.01, 200)
    stored = '{"url": "http://a.test/1", "meta": {"revisit": {"etag": "e1"}}}'
    assert f.revisit_many([Revisit(first.fp, first.token, stored, due=100.0, fetched_at=0.0)]) == [True]
    assert f.revisit_many([Revisit(first.fp, first.token, stored, 100.0, 0.0)]) == [False]  # lease over
    second = claim(f, 10.0)
    finish(f, second, 10.0)
    # Only a revisit is left: this pass is finished, and the seen set still says seen.
    assert not f.has_pending() and f.revisits == 1 and f.done_count() == 2
    assert f.add([entry("http://a.test/1")]) == [False]
    assert f.next_revisit() == 100.0 and f.revisit_at(first.fp, "a.test") == (100.0, 0.0)
    assert f.revisit_at(second.fp, "a.test") is None
    if make_frontier.backend == "embedded":  # survives a restart
        f.close()
        f = make_frontier(path=path)
    assert f.due_revisits(99.0) == 0
    assert f.hasten_revisit(first.fp, "a.test", 50.0) and not f.hasten_revisit(second.fp, "a.test", 50.0)
    assert f.hasten_revisit(first.fp, "a.test", 80.0) and f.next_revisit() == 50.0  # never later
    assert f.due_revisits(50.0) == 1 and f.revisits == 0 and f.has_pending()
    again = claim(f, 50.0)
    assert again.fp == first.fp and again.request == stored
    finish(f, again, 50.0)
    assert not f.has_pending() and f.next_revisit() is None


def test_due_revisits_are_queued_a_bounded_batch_at_a_time(make_frontier):
    from crawler.frontier.api import Revisit

    f = make_frontier()
    f.add([entry(f"http://h{i}.test/") for i in range(5)])
    claims, _ = f.claim_many(0.0, 5)
    f.fetched_many([Fetch(c.fp, c.token, 0.0, 0.01, 200) for c in claims])
    assert all(f.revisit_many([Revisit(c.fp, c.token, c.request, float(i), 0.0)
                               for i, c in enumerate(claims)]))
    assert f.due_revisits(10.0, limit=2) == 2 and f.due_revisits(10.0, limit=10) == 3
    assert f.queued == 5


def test_a_dead_letter_is_kept_with_its_error_and_can_be_queued_again(make_frontier):
    f = make_frontier()
    f.add([entry("http://a.test/1"), entry("http://a.test/2")])
    c = claim(f, 0.0)
    f.fetched(c.fp, c.token, 0.0, 0.01, 500)
    assert f.dead_letter(c.fp, c.token, c.request, "HTTP 500", 5.0)
    [letter] = f.dead_letters()
    assert (letter.fp, letter.host, letter.request, letter.error, letter.at) == (
        c.fp, "a.test", c.request, "HTTP 500", 5.0)
    assert f.counters["dead_letters"] == 1
    finish(f, claim(f, 10.0), 10.0)
    assert not f.has_pending()  # a dead letter does not keep the crawl open
    assert f.requeue_dead(letter, c.request) and not f.requeue_dead(letter, c.request)
    assert f.dead_letters() == [] and claim(f, 20.0).fp == c.fp


def test_a_host_given_up_has_its_queued_urls_dead_lettered_and_no_others(make_frontier):
    f = make_frontier()
    f.add([entry(f"http://dead.test/{i}", level=i % 2) for i in range(3)] + [entry("http://live.test/")])
    assert f.host_queued("dead.test") == 3 and f.host_queued("nowhere.test") == 0
    assert f.dead_letter_host("dead.test", "ConnectionRefusedError: refused", 5.0) == 3
    assert f.dead_letter_host("dead.test", "again", 6.0) == 0
    assert f.host_queued("dead.test") == 0 and f.queued == 1
    letters = f.dead_letters()
    assert sorted(d.request for d in letters) == [f"http://dead.test/{i}" for i in range(3)]
    assert {(d.host, d.error, d.at) for d in letters} == {
        ("dead.test", "ConnectionRefusedError: refused", 5.0)}
    assert claim(f, 0.0).host == "live.test"
    assert f.requeue_dead(letters[0], letters[0].request) and f.host_queued("dead.test") == 1


def test_a_forced_add_queues_a_done_url_again_but_never_twice(make_frontier):
    # Scrapy's dont_filter: a URL seen is fetched again, unless it is queued, in flight,
    # waiting for a retry or a dead letter already.
    f = make_frontier()
    done, queued, leased, waiting = (entry(f"http://a{i}.test/") for i in range(4))
    f.add([done, leased, waiting])
    for c in [claim(f, 0.0) for _ in range(3)]:
        if c.fp == done.fp:
            finish(f, c, 0.0)
        elif c.fp == waiting.fp:
            f.fetched(c.fp, c.token, 0.0, 0.01, 503)
            assert f.retry_later(c.fp, c.token, c.request, 100.0)
    f.add([queued])
    assert f.add([done, queued, leased, waiting], force=True) == [True, False, False, False]
    assert f.add([done], force=True) == [False]  # queued now
    assert f.add([done]) == [False]  # without force, seen is seen
    c = claim(f, 10.0)
    assert c.fp in (done.fp, queued.fp)
    assert f.queued == 1 and f.counters["dropped/seen"] == 5


def test_a_forced_add_keeps_the_host_budget(make_frontier):
    f = make_frontier(budget=HostBudget(1))
    page = entry("http://a.test/p")
    f.add([page])
    finish(f, claim(f, 0.0), 0.0)
    assert f.add([page], force=True) == [False]
    assert f.counters["dropped/budget"] == 1 and f.counters.get("dropped/seen", 0) == 0


def test_a_forced_add_brings_a_scheduled_revisit_forward(make_frontier, tmp_path):
    f = make_frontier()
    page = entry("http://a.test/p")
    f.add([page])
    c = claim(f, 0.0)
    f.fetched(c.fp, c.token, 0.0, 0.01, 200)
    assert f.revisit_many([Revisit(c.fp, c.token, c.request, 1000.0, 0.0)]) == [True]
    assert f.revisits == 1 and f.add([page], force=True) == [True]
    assert f.revisits == 0 and claim(f, 10.0).fp == page.fp


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
    f._lock.close()  # ...and its lock on the crawl state goes with it
    again = make_frontier(path=path)
    assert again.queued == 2  # the leased URL and the one never fetched
    assert again.counters["leases/recovered"] == 1
    assert again.add([entry("http://a.test/0")]) == [False]  # done stays seen
    fps = set()
    now = 10.0
    while again.has_pending():
        c = claim(again, now)
        fps.add(c.fp)
        finish(again, c, now)
        now += 2
    assert leased.fp in fps and done.fp not in fps and len(fps) == 2


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


def hosts_on_one_shard(f, count: int) -> list[str]:
    """``count`` host names that one politeness key can group (a sharded frontier groups the
    hosts of one shard only)."""
    names = [f"h{i}.test" for i in range(1000)]
    if not hasattr(f, "shard_of"):
        return names[:count]
    return [n for n in names if f.shard_of(n) == f.shard_of(names[0])][:count]


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


def test_workers_sharing_a_redis_frontier_never_fetch_one_host_at_once(redis_url):
    crawl_id = uuid.uuid4().hex
    one, two = (RedisFrontier(redis.Redis.from_url(redis_url), crawl_id, policy=POLICY) for _ in range(2))
    one.add([entry(f"http://a.test/{i}") for i in range(3)])
    assert two.add([entry("http://a.test/0")]) == [False]  # seen by the whole crawl
    c = claim(one, 0.0)
    assert two.next(0.0) is None  # a.test is in flight at the other worker
    assert one.fetched(c.fp, c.token, 0.5, 0.01, 200) == 1.0
    assert two.next(1.0) == pytest.approx(0.5)  # and its gap holds across workers
    assert claim(two, 1.5).host == "a.test"


def test_workers_count_one_run_of_unanswered_fetches_per_host(redis_url):
    crawl_id = uuid.uuid4().hex
    one, two = (RedisFrontier(redis.Redis.from_url(redis_url), crawl_id, policy=POLICY) for _ in range(2))
    runs = [worker.unanswered("dead.test") for worker in (one, two, one)]
    assert runs == [1, 2, 3]


def test_a_dead_workers_lease_is_given_to_another_after_it_expires(redis_url):
    crawl_id = uuid.uuid4().hex
    dead = RedisFrontier(redis.Redis.from_url(redis_url), crawl_id, policy=POLICY, lease_seconds=30)
    alive = RedisFrontier(redis.Redis.from_url(redis_url), crawl_id, policy=POLICY, lease_seconds=30)
    dead.add([entry("http://a.test/1")])
    lost = claim(dead, 0.0)  # ...and the worker is killed
    assert alive.next(10.0) is None and alive.has_pending()
    assert alive.reap(31.0) == 1
    again = claim(alive, 31.0)
    assert again.fp == lost.fp
    assert alive.ack(again.fp, again.token) and not alive.has_pending()


def test_a_silent_workers_leases_go_back_at_the_next_beat_of_another(redis_url):
    client = redis.Redis.from_url(redis_url)
    alive = RedisFrontier(client, "beats", worker_id="alive", worker_timeout=15)
    dead = RedisFrontier(client, "beats", worker_id="dead", worker_timeout=15)
    alive.add([entry("http://a.test/1"), entry("http://b.test/1")])
    assert dead.heartbeat(100.0) == [] and alive.heartbeat(100.0) == []
    held = claim(dead, 100.0)
    mine = claim(alive, 100.0)
    assert alive.heartbeat(114.0) == [] and alive.reap(114.0) == 0  # 14 s: not yet dead
    assert alive.heartbeat(116.0) == [("dead", 1, 16.0)]
    assert alive.reap(116.0) == 1
    again = claim(alive, 116.0)  # its host is free, its URL queued again
    assert (again.fp, again.host) == (held.fp, held.host)
    assert not dead.ack(held.fp, held.token)  # the dead worker's lease is gone
    assert alive.ack(mine.fp, mine.token) and alive.ack(again.fp, again.token)
    assert not alive.has_pending() and alive.counters["workers/lost"] == 1


def test_leaving_queues_again_what_is_still_leased(make_frontier):
    f = make_frontier()
    f.add([entry("http://a.test/1"), entry("http://b.test/1")])
    held = claim(f, 0.0)
    finish(f, claim(f, 0.0), 0.0)
    assert f.leave(1.0) == 1
    again = claim(f, 1.0)
    assert (again.fp, again.host) == (held.fp, held.host)
    finish(f, again, 1.0)
    assert not f.has_pending()


def test_a_worker_that_leaves_gives_its_leases_back_at_once(redis_url):
    client = redis.Redis.from_url(redis_url)
    going = RedisFrontier(client, "leave", worker_id="going", worker_timeout=15)
    staying = RedisFrontier(client, "leave", worker_id="staying", worker_timeout=15)
    going.add([entry("http://a.test/1")])
    assert going.heartbeat(100.0) == [] and staying.heartbeat(100.0) == []
    held = claim(going, 100.0)
    assert staying.next(101.0) is None
    assert going.leave(101.0) == 1
    again = claim(staying, 101.0)  # not 15 s later: its host free, its URL queued again
    assert (again.fp, again.host) == (held.fp, held.host)
    assert staying.ack(again.fp, again.token) and not staying.has_pending()
    assert staying.heartbeat(200.0) == []  # gone, not dead
    assert "workers/lost" not in staying.counters


def test_two_processes_cannot_share_one_embedded_crawl_state(tmp_path):
    first = EmbeddedFrontier(tmp_path / "frontier.sqlite")
    with pytest.raises(RuntimeError, match="in use by another process"):
        EmbeddedFrontier(tmp_path / "frontier.sqlite")
    first.close()
    EmbeddedFrontier(tmp_path / "frontier.sqlite").close()


def test_fewer_priority_levels_on_resume_keep_every_url(tmp_path):
    f = EmbeddedFrontier(tmp_path / "frontier.sqlite", levels=PriorityLevels(levels=4), policy=POLICY)
    f.add([entry(f"http://a.test/{i}", level=i) for i in range(4)])
    f.close()
    again = EmbeddedFrontier(tmp_path / "frontier.sqlite", levels=PriorityLevels(levels=2), policy=POLICY)
    now, seen = 0.0, 0
    while again.has_pending():
        c = claim(again, now)
        finish(again, c, now)
        now, seen = now + 1.0, seen + 1
    assert seen == 4


def test_consistent_hashing_spreads_hosts_and_moves_few_when_a_shard_is_added():
    from crawler.frontier.sharded import ShardedRedisFrontier

    def ring(n: int) -> ShardedRedisFrontier:  # clients that never connect: only the ring is used
        return ShardedRedisFrontier([RedisFrontier(redis.Redis(port=1), "x") for _ in range(n)])

    hosts = [f"host{i}.example" for i in range(10_000)]
    three, four = ring(3), ring(4)
    before = [three.shard_of(h) for h in hosts]
    after = [four.shard_of(h) for h in hosts]
    assert before == [three.shard_of(h) for h in hosts]  # stable
    for shard in range(3):
        assert 0.2 < before.count(shard) / len(hosts) < 0.47
    moved = sum(b != a for b, a in zip(before, after, strict=True)) / len(hosts)
    assert 0.15 < moved < 0.35  # about 1/4 of the hosts move to the new shard
    assert all(a == 3 for b, a in zip(before, after, strict=True) if b != a)


def test_bloom_seen_set_keeps_its_false_positive_rate(redis_url):
    f = RedisFrontier(redis.Redis.from_url(redis_url), uuid.uuid4().hex, seen_set="bloom",
                      expected_urls=20_000, bloom_error=0.01)
    urls = [f"http://h{i % 50}.test/{i}" for i in range(20_000)]
    added = []
    for start in range(0, len(urls), 1000):
        added += f.add([entry(u) for u in urls[start:start + 1000]])
    lost = added.count(False) / len(urls)  # new URLs taken for seen: the false positives
    assert lost < 0.01
    assert not any(f.add([entry(u) for u in urls[:1000]]))  # seen ones are always seen
    size = sum(f.redis.strlen(key) for key in f.redis.keys(f.prefix + "bloom:*"))
    assert size < 1.3 * len(urls)  # ~1.2 bytes a URL


@pytest.mark.parametrize("backend", [EmbeddedFrontier, RedisFrontier, ShardedRedisFrontier, ClusterFrontier])
def test_every_backend_has_the_contract_with_its_signatures(backend):
    import inspect

    from crawler.frontier.api import Frontier

    for name, member in vars(Frontier).items():
        if name.startswith("_") or not callable(member):
            continue
        ours = getattr(backend, name, None)
        assert callable(ours), f"{backend.__name__} lacks {name}"
        assert list(inspect.signature(ours).parameters) == list(inspect.signature(member).parameters), name


def test_both_backends_are_frontiers(tmp_path, redis_url):
    from crawler.frontier.api import Frontier

    assert isinstance(EmbeddedFrontier(":memory:"), Frontier)
    assert isinstance(RedisFrontier(redis.Redis.from_url(redis_url), "proto"), Frontier)


def test_a_sharded_frontier_claims_and_acks_in_batches_across_its_shards(redis_url):
    base = redis_url.rsplit("/", 1)[0]
    shards = [RedisFrontier(redis.Redis.from_url(f"{base}/{db}"), uuid.uuid4().hex, policy=POLICY)
              for db in (2, 3)]
    f = ShardedRedisFrontier(shards)
    f.add([entry(f"http://h{i}.test/1") for i in range(8)])
    assert {f.shard_of(f"h{i}.test") for i in range(8)} == {0, 1}  # both shards hold hosts
    claims, _ = f.claim_many(0.0, 8)
    assert len(claims) == 8
    assert f.fetched_many([Fetch(c.fp, c.token, 0.0, 0.01, 200) for c in claims]) == [1.0] * 8
    assert f.ack_many([(c.fp, c.token) for c in reversed(claims)]) == [True] * 8
    assert not f.has_pending() and f.done_count() == 8


def test_embedded_counters_are_summed_over_runs_in_the_state_file(tmp_path):
    path = tmp_path / "frontier.sqlite"
    for run in range(2):
        f = EmbeddedFrontier(path, policy=POLICY)
        f.add([entry(f"http://a.test/{run}")])
        c = claim(f, 100.0 * run)
        f.fetched(c.fp, c.token, 100.0 * run, 0.1, 200)
        f.count("stored")
        f.ack(c.fp, c.token)
        f.close()
    counts = read_counts(path)
    assert (counts["fetched"], counts["stored"], counts["done"]) == (2, 2, 2)


def test_fetch_seconds_counts_put_each_fetch_in_one_bucket():
    fetches = [Fetch(1, 1, 0.0, seconds, 200) for seconds in (0.01, 0.05, 0.3, 0.3, 60.0)]
    assert fetch_seconds_counts(fetches) == {
        "fetch_seconds/0.05": 2, "fetch_seconds/0.5": 2, "fetch_seconds/inf": 1,
        "fetch_seconds/sum_ms": 60660}
