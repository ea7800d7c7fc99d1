"""The revisit policy as pure functions: intervals, outcomes, importance, the hot cap."""

from email.utils import formatdate

import pytest

from crawler.freshness.revisit import (
    CHANGED,
    FIRST,
    NOT_MODIFIED,
    UNCHANGED,
    HotShare,
    RevisitPolicy,
    RevisitState,
    change_age,
    importance,
    lastmod_time,
    revisit_phase,
)

DAY = 86400.0
# Halve/double at every visit: evidence past any test's visits keeps the rate estimate off
# (tests/test_change_rate.py covers it).
POLICY = RevisitPolicy(7 * DAY, DAY, 30 * DAY, evidence=10**6)


def first(now=0.0, sha="a", etag='"e1"', lm=None):
    return POLICY.visit(None, now, 200, sha, etag, lm)[1]


def test_a_first_visit_starts_at_the_initial_interval():
    result, state = POLICY.visit(None, 100.0, 200, "a", '"e"', "Mon, 01 Jan 2024 00:00:00 GMT")
    assert result == FIRST
    assert state.interval == 7 * DAY
    assert state.next_visit == 100.0 + 7 * DAY / 1.0
    assert (state.sha, state.etag, state.visits, state.changes) == ("a", '"e"', 1, 0)


def test_a_change_halves_and_no_change_doubles_within_bounds():
    state = first()
    result, changed = POLICY.visit(state, 10.0, 200, "b", None, None)
    assert (result, changed.interval, changed.changes) == (CHANGED, 3.5 * DAY, 1)
    result, same = POLICY.visit(state, 10.0, 200, "a", None, None)
    assert (result, same.interval) == (UNCHANGED, 14 * DAY)
    for _ in range(10):
        state = POLICY.visit(state, 10.0, 200, state.sha + "x", None, None)[1]
    assert state.interval == DAY
    for _ in range(10):
        state = POLICY.visit(state, 10.0, 304, None, None, None)[1]
    assert state.interval == 30 * DAY


def test_a_304_is_unchanged_and_keeps_the_hash_and_validators():
    state = first(sha="a", etag='"e1"', lm="Mon, 01 Jan 2024 00:00:00 GMT")
    result, after = POLICY.visit(state, 50.0, 304, None, None, None)
    assert result == NOT_MODIFIED
    assert (after.sha, after.etag, after.last_modified) == ("a", '"e1"', state.last_modified)
    assert after.interval == 14 * DAY and after.fetched_at == 50.0


def test_importance_brings_the_visit_closer_but_never_below_the_minimum():
    state = first()
    _, hub = POLICY.visit(state, 0.0, 200, "a", None, None, weight=importance(0))
    _, deep = POLICY.visit(state, 0.0, 200, "a", None, None, weight=importance(9))
    assert hub.next_visit < deep.next_visit
    assert hub.next_visit == 14 * DAY / 2.0
    fast = RevisitState(DAY, "a", None, None, 0.0, DAY)
    _, hot = POLICY.visit(fast, 0.0, 200, "b", None, None, weight=100.0)
    assert hot.next_visit == DAY  # at least the minimum interval apart


def test_importance_falls_with_depth_and_follows_sitemap_priority():
    assert importance(0) == 2.0
    assert importance(1) > importance(5) > 1.0
    assert importance(1, 1.0) > importance(1) > importance(1, 0.0)
    assert importance(1, 7.0) == importance(1)  # out of range: ignored


def test_the_hot_share_stretches_hot_pages_only_past_the_cap():
    hot = HotShare(cap=0.2, window=100)
    for i in range(100):
        hot.record(i % 10 == 0)  # 10% hot
    assert hot.stretch() == 1.0
    for _ in range(100):
        hot.record(True)
    assert hot.share == 1.0 and hot.stretch() == pytest.approx(5.0)
    fast = RevisitState(DAY, "a", None, None, 0.0, DAY)
    _, stretched = POLICY.visit(fast, 0.0, 200, "b", None, None, stretch=5.0)
    assert stretched.next_visit == 5 * DAY
    slow = first()
    _, unstretched = POLICY.visit(slow, 0.0, 200, "a", None, None, stretch=5.0)
    assert unstretched.next_visit == 14 * DAY


def test_a_sitemap_lastmod_after_the_last_fetch_makes_a_url_due():
    state = first(now=lastmod_time("2024-01-02T00:00:00Z"))
    assert POLICY.due_by_lastmod(state.fetched_at, lastmod_time("2024-01-03"))
    assert not POLICY.due_by_lastmod(state.fetched_at, lastmod_time("2024-01-01"))
    assert not POLICY.due_by_lastmod(state.fetched_at, lastmod_time("yesterday"))
    assert lastmod_time("2024-01-01T10:00:00+02:00") == lastmod_time("2024-01-01T08:00:00Z")


def test_state_round_trips_through_json_and_bad_state_is_none():
    state = first()
    assert RevisitState.from_dict(state.as_dict()) == state
    assert RevisitState.from_dict({"interval": 1}) is None
    assert RevisitState.from_dict("nonsense") is None


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError, match="REVISIT_MIN_INTERVAL"):
        RevisitPolicy(10.0, 20.0, 30.0)
    with pytest.raises(ValueError, match="REVISIT_HOT_SHARE"):
        HotShare(cap=0)


def test_a_last_modified_dates_a_change_only_when_it_falls_between_the_fetches():
    lm = "Mon, 01 Jan 2024 00:00:00 GMT"
    at = lastmod_time("2024-01-01T00:00:00Z")
    assert change_age(at - DAY, at + 3600, lm) == 3600.0
    assert change_age(at - DAY, at + 3600, "Mon, 01 Jan 2024 00:00:00 -0000") == 3600.0
    assert change_age(at + 1, at + 3600, lm) is None  # older than the last fetch: not this change
    assert change_age(at - DAY, at + 30, lm) is None  # the response's own time: tells nothing
    assert change_age(at - DAY, at + 3600, "last tuesday") is None
    assert change_age(at - DAY, at + 3600, None) is None


def test_a_dated_change_is_kept_as_its_age_and_an_undated_one_as_its_gap():
    policy = RevisitPolicy(7 * DAY, DAY, 30 * DAY, evidence=10**6)
    start = lastmod_time("2024-01-01T00:00:00Z")
    state = policy.visit(None, start, 200, "a", None, None)[1]
    dated_at = start + 7 * DAY - 2 * 3600  # changed two hours before the next fetch
    _, state = policy.visit(state, start + 7 * DAY, 200, "b", None, formatdate(dated_at, usegmt=True))
    seen = (state.changes, state.dated_changes, state.dated_age, state.changed_time)
    assert seen == (1, 1, 7200.0, 0.0)
    stale_lm = formatdate(start - DAY, usegmt=True)  # the server does not date its text
    _, state = policy.visit(state, start + 10 * DAY, 200, "c", None, stale_lm)
    seen = (state.changes, state.dated_changes, state.dated_age, state.changed_time)
    assert seen == (2, 1, 7200.0, 3 * DAY)


def test_the_first_fetchs_last_modified_is_kept_as_the_age_of_its_version():
    now = lastmod_time("2024-06-01T00:00:00Z")
    state = first(now=now, lm=formatdate(now - 100 * DAY, usegmt=True))
    assert state.first_age == 100 * DAY
    _, later = POLICY.visit(state, now + 7 * DAY, 304, None, None, None)
    assert later.first_age == 100 * DAY  # kept for every later choice of gap
    assert first(now=now, lm=formatdate(now - 30, usegmt=True)).first_age is None  # the response's time
    assert first(now=now, lm="last tuesday").first_age is None
    assert first(now=now).first_age is None


def test_a_state_stored_before_dated_changes_existed_still_loads():
    gone = ("dated_changes", "dated_age", "first_age")
    old = {k: v for k, v in first().as_dict().items() if k not in gone}
    state = RevisitState.from_dict(old)
    assert (state.dated_changes, state.dated_age, state.first_age) == (0, 0.0, None)


def test_the_revisit_phase_is_fixed_per_url_and_spread():
    phases = [revisit_phase(f"http://h{n % 7}.test/p/{n}") for n in range(2000)]
    assert phases[:5] == [revisit_phase(f"http://h{n % 7}.test/p/{n}") for n in range(5)]
    assert all(0 <= p < 1 for p in phases)
    assert sum(p < 0.5 for p in phases) == pytest.approx(1000, abs=100)


def test_jitter_moves_a_wait_by_at_most_its_share_and_never_below_the_minimum():
    policy = RevisitPolicy(7 * DAY, DAY, 30 * DAY, evidence=10**6, jitter=0.1)
    waits = {phase: policy.visit(None, 0.0, 200, "a", None, None, phase=phase)[1].next_visit
             for phase in (0.0, 0.5, 0.999)}
    assert waits[0.5] == 7 * DAY
    assert waits[0.0] == pytest.approx(0.9 * 7 * DAY)
    assert waits[0.999] == pytest.approx(1.1 * 7 * DAY, rel=1e-3)
    hot = policy.visit(None, 0.0, 200, "a", None, None, weight=7.0, phase=0.0)[1]
    assert hot.next_visit == DAY  # 7 d / 7 is the minimum: no earlier
    with pytest.raises(ValueError, match="REVISIT_JITTER"):
        RevisitPolicy(jitter=1.5)


def revisit_times(jitter: float, pages: int = 400, until: float = 3600.0) -> list[float]:
    """Fetch times of ``pages`` unchanging pages first crawled together at 0, revisited at
    a 60 s maximum interval."""
    policy = RevisitPolicy(60.0, 30.0, 60.0, evidence=10**6, jitter=jitter)
    times = []
    for n in range(pages):
        phase = revisit_phase(f"http://h{n % 20}.test/p/{n}")
        state = policy.visit(None, 0.0, 200, "a", None, None, phase=phase)[1]
        while state.next_visit < until:
            times.append(state.next_visit)
            state = policy.visit(state, state.next_visit, 304, None, None, None, phase=phase)[1]
    return times


@pytest.mark.parametrize("jitter, spread", [(0.0, False), (0.1, True)])
def test_pages_crawled_together_drift_apart_into_a_steady_rate(jitter, spread):
    """Without jitter the 400 pages fall due in one wave a minute; with it, after ten
    minutes every 20 s has between 100 and 170 of them (400 x 20 / 60 = 133 on average)."""
    times = revisit_times(jitter)
    counts = [sum(start <= t < start + 20 for t in times) for start in range(600, 3600, 20)]
    assert (min(counts) >= 100 and max(counts) <= 170) == spread, (min(counts), max(counts))
