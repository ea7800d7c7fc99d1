"""The frontier contract (DESIGN.md), on a fake clock: queueing, leases, retries, revisits
and dead letters. Every backend must pass it (``make_frontier``, in ``frontier_cases``)."""

from __future__ import annotations

import pytest
from frontier_cases import claim, entry, finish

from crawler.frontier.api import Claim, Fetch, Revisit
from crawler.frontier.policy import HostBudget


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
    assert f.has_pending() and f.pending_counts() == (1, 2, 0, 0)


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
    assert f.pending_counts() == (1, 0, 1, 0)  # queued, leased, waiting, revisits at one read
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
    assert f.pending_counts() == (0, 0, 0, 1)
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


def test_a_host_given_up_takes_its_retries_still_waiting_along(make_frontier, tmp_path):
    # Before, only its queued URLs: a retry left waiting was queued later and probed the host again.
    path = tmp_path / "f.sqlite"
    f = make_frontier(path=path)
    f.add([entry("http://dead.test/1"), entry("http://dead.test/2"), entry("http://live.test/")])
    c = claim(f, 0.0)
    if c.host != "dead.test":
        finish(f, c, 0.0)
        c = claim(f, 0.0)
    f.fetched(c.fp, c.token, 0.0, 0.01, None)
    assert f.retry_later(c.fp, c.token, c.request, due=60.0)
    assert f.dead_letter_host("dead.test", "TCPTimedOutError", 5.0) == 2
    assert f.waiting == 0 and f.counters["dead_letters"] == 2
    assert sorted(d.request for d in f.dead_letters() if d.host == "dead.test") == [
        "http://dead.test/1", "http://dead.test/2"]
    assert f.due_retries(60.0) == 0
    if make_frontier.backend == "embedded":  # and after a restart
        f.close()
        f = make_frontier(path=path)
        assert f.waiting == 0 and f.due_retries(60.0) == 0
    for _ in range(3):  # live.test's one URL, and nothing of dead.test
        c = f.next(1000.0)
        if not isinstance(c, Claim):
            break
        assert c.host == "live.test"
        finish(f, c, 1000.0)
    assert not f.has_pending()


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
