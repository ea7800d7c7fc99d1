"""The frontier's rules, without I/O: gaps, backoff, Retry-After, budgets, priorities."""

from __future__ import annotations

from email.utils import formatdate

import pytest

from crawler.frontier.failure import FailureKind
from crawler.frontier.policy import (
    HostBudget,
    HostTimes,
    PolitenessPolicy,
    PriorityLevels,
    RetryPolicy,
    allowed_after_leave,
    parse_retry_after,
)

POLICY = PolitenessPolicy(min_delay=1.0, delay_factor=10.0, max_delay=30.0, backoff_max=3600.0)


def test_gap_is_the_min_delay_for_fast_fetches():
    assert POLICY.after_fetch(HostTimes(), 0.05, 200, None) == 1.0


def test_gap_is_factor_times_fetch_duration_for_slow_hosts():
    assert POLICY.after_fetch(HostTimes(), 0.5, 200, None) == pytest.approx(5.0)


def test_adaptive_gap_is_capped_at_max_delay():
    assert POLICY.after_fetch(HostTimes(), 12.0, 200, None) == 30.0


def test_crawl_delay_is_a_floor_above_the_cap():
    assert POLICY.after_fetch(HostTimes(crawl_delay=45.0), 0.01, 200, None) == 45.0


def test_429_and_503_double_the_backoff_starting_from_twice_the_gap():
    host = HostTimes()
    assert POLICY.after_fetch(host, 0.2, 200, None) == pytest.approx(2.0)
    assert POLICY.after_fetch(host, 0.2, 503, None) == pytest.approx(4.0)
    assert POLICY.after_fetch(host, 0.2, 429, None) == pytest.approx(8.0)
    assert POLICY.after_fetch(host, 0.2, 503, None) == pytest.approx(16.0)


def test_a_success_resets_the_backoff():
    host = HostTimes()
    POLICY.after_fetch(host, 0.05, 503, None)
    assert host.backoff > 0
    assert POLICY.after_fetch(host, 0.05, 200, None) == 1.0
    assert host.backoff == 0


def test_retry_after_is_honoured_when_longer_than_the_doubled_backoff():
    host = HostTimes()
    assert POLICY.after_fetch(host, 0.05, 429, 120.0) == 120.0


def test_backoff_is_capped():
    host = HostTimes()
    assert POLICY.after_fetch(host, 0.05, 503, 1e9) == 3600.0


def test_a_fetch_without_response_backs_off_like_503():
    host = HostTimes()
    assert POLICY.after_fetch(host, 0.05, None, None) == 2.0


def test_retry_after_seconds_and_http_date():
    now = 1_700_000_000.0
    assert parse_retry_after(b"120", now) == 120.0
    assert parse_retry_after(formatdate(now + 300, usegmt=True), now) == pytest.approx(300.0)
    assert parse_retry_after(formatdate(now - 300, usegmt=True), now) == 0.0
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after(None, now) is None


def test_host_budget_is_pages_left():
    assert HostBudget(0).left(10**9) is None
    assert HostBudget(5).left(4) == 1
    assert HostBudget(5).left(7) == 0


def test_levels_follow_depth_and_priority():
    levels = PriorityLevels(levels=4, priority_step=10)
    assert [levels.level(d, 0) for d in range(6)] == [0, 1, 2, 3, 3, 3]
    assert levels.level(3, 20) == 1
    assert levels.level(0, -15) == 2


def test_biased_choice_favours_high_priority_and_still_moves_low():
    levels = PriorityLevels(levels=4)
    queued, cursor, picks = [1, 1, 1, 1], 0, []
    for _ in range(150):
        level, cursor = levels.next_level(queued, cursor)
        picks.append(level)
    assert [picks.count(i) for i in range(4)] == [80, 40, 20, 10]
    assert picks[0] == 0 and picks[:4] == [0, 1, 0, 2]  # spread out, not 8 zeros first
    cursor, picks = 0, []
    for _ in range(30):  # empty levels skipped: the others keep their shares
        level, cursor = levels.next_level([0, 0, 5, 5], cursor)
        picks.append(level)
    assert [picks.count(i) for i in range(4)] == [0, 0, 20, 10]


def test_across_hosts_the_cycles_level_goes_else_the_most_urgent_due_one():
    levels = PriorityLevels(levels=4)
    assert levels.cycle == (0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0)
    only_low = [False, False, False, True]
    assert levels.host_level(0, only_low) == 3
    both = [True, False, False, True]
    picks = [levels.host_level(cursor, both) for cursor in range(30)]
    assert picks[0] == 0 and picks.count(3) == 2  # 1 of 15 positions: low levels still move
    assert levels.host_level(7, [False] * 4) is None
    with pytest.raises(ValueError, match="FRONTIER_PRIORITY_LEVELS"):
        PriorityLevels(levels=9)


def test_an_odd_retry_after_is_ignored_not_fatal():
    assert parse_retry_after("²", 0.0) is None
    assert parse_retry_after("Mon, 99 Foo 99999 99:99:99 GMT", 0.0) is None


def test_the_retry_chain_waits_each_delay_in_turn_then_gives_up():
    from crawler.frontier.policy import RetryPolicy

    chain = RetryPolicy.parse("1,2,4")
    delays = [chain.delay_after(n, FailureKind.UNREACHABLE) for n in (1, 2, 3, 4)]
    assert delays == [1.0, 2.0, 4.0, None]


def test_a_name_that_does_not_exist_is_confirmed_once_past_the_negative_cache_then_dead():
    from crawler.frontier.policy import RetryPolicy

    chain = RetryPolicy.parse("1,2,4", confirm_after=60.0)
    kind = FailureKind.PERMANENT  # DNSLookupError: DNS lookup failed: gone.test: NXDOMAIN
    assert chain.delay_after(1, kind) == 60.0  # the resolver asks again, not its cache
    assert chain.delay_after(2, kind) is None
    assert RetryPolicy.parse("90", confirm_after=60.0).delay_after(1, kind) == 90.0


def test_a_failure_already_retried_by_its_reporter_is_a_dead_letter_at_once():
    from crawler.frontier.policy import RetryPolicy

    assert RetryPolicy.parse("1,2,4").delay_after(1, FailureKind.EXHAUSTED) is None
    assert RetryPolicy.parse("1,2,4").delay_after(1, FailureKind.TRANSIENT) == 1.0


def test_a_demoted_host_keeps_what_it_fetched_plus_a_margin_under_the_crawl_budget():
    assert HostBudget(0).demoted_left(40, 10) == 10  # no crawl budget
    assert HostBudget(45).demoted_left(40, 10) == 5
    assert HostBudget(0).demoted_left(3, 0) == 1  # never less than one more
    assert HostBudget(45).demoted_left(20, 10) == 10  # demoted again later: the margin again


def test_a_fetch_given_back_unreported_holds_its_host_as_after_a_fetch_and_never_sooner():
    retry = RetryPolicy((5.0, 20.0))
    assert [retry.hold_again(n) for n in (0, 1, 2, 3)] == [0.0, 5.0, 20.0, 20.0]
    assert allowed_after_leave(30.0, 10.0, False, 2.0, 5.0) == 30.0  # reported: its hold stands
    assert allowed_after_leave(0.0, 10.0, True, 2.0, 5.0) == 15.0  # the probe may have gone out
    assert allowed_after_leave(40.0, 10.0, True, 2.0, 5.0) == 40.0  # never brought forward
