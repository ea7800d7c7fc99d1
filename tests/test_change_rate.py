"""The revisit gap chosen from what a page's visits showed: pure functions, no I/O."""

import math
from email.utils import formatdate

import pytest

from crawler.freshness.change_rate import Evidence, GapChooser
from crawler.freshness.revisit import CHANGED, RevisitPolicy

DAY = 86400.0


def seen_at_rate(rate: float, gap: float = DAY / 2, gaps: int = 10_000) -> Evidence:
    """What ``gaps`` visits ``gap`` apart show of a page changing at ``rate`` on average."""
    changed = round(gaps * -math.expm1(-rate * gap))
    return Evidence(changed, changed * gap, (gaps - changed) * gap)


@pytest.mark.parametrize("waste_cost", [0.0, 2.0, 5.0, 8.0, 10.0])
def test_a_page_known_to_change_once_per_interval_is_revisited_once_per_interval(waste_cost):
    policy = RevisitPolicy(7 * DAY, DAY, 30 * DAY, waste_cost=waste_cost)
    gap = policy.chooser.gap(seen_at_rate(1 / (7 * DAY)))
    assert 7 * DAY / 1.25 <= gap <= 7 * DAY * 1.25


def test_slower_pages_wait_longer_up_to_the_longest_gap():
    chooser = RevisitPolicy(7 * DAY, DAY, 30 * DAY).chooser
    gaps = [chooser.gap(seen_at_rate(1 / (days * DAY))) for days in (3, 7, 14, 60)]
    assert gaps == sorted(gaps) and gaps[0] < gaps[-1]
    assert chooser.gap(Evidence(0, 0.0, 90 * DAY)) == 30 * DAY  # never changed in 90 days


def test_a_page_that_changes_at_every_visit_however_soon_gets_the_longest_gap():
    """No visit keeps it fresh: fetches are worth more on pages they can keep current."""
    chooser = RevisitPolicy(7 * DAY, DAY, 30 * DAY, waste_cost=0.0).chooser
    assert chooser.gap(Evidence(50, 50 * DAY, 0.0)) == 30 * DAY
    assert chooser.gap(seen_at_rate(10 / DAY)) == 30 * DAY


def test_a_more_important_page_is_revisited_sooner_and_every_gap_is_within_the_bounds():
    chooser = GapChooser(DAY, 30 * DAY, fetch_cost=0.2 * DAY, waste_cost=4.0)
    seen = seen_at_rate(1 / (7 * DAY))
    gaps = [chooser.gap(seen, weight) for weight in (0.5, 1.0, 2.0, 4.0)]
    assert gaps == sorted(gaps, reverse=True) and gaps[0] > gaps[-1]
    for evidence in (seen, Evidence(0, 0.0, 0.0), Evidence(3, 1.0, 0.0), Evidence(0, 0.0, 1e12)):
        for weight in (1e-9, 1.0, 1e9):
            assert DAY <= chooser.gap(evidence, weight) <= 30 * DAY


def test_dearer_wasted_fetches_push_a_slow_page_further_out():
    slow = seen_at_rate(1 / (20 * DAY))
    cheap = RevisitPolicy(7 * DAY, DAY, 30 * DAY, waste_cost=0.0).chooser
    dear = GapChooser(DAY, 30 * DAY, cheap.fetch_cost, waste_cost=20.0)
    assert dear.gap(slow) > cheap.gap(slow)


def test_the_belief_is_a_distribution_that_moves_with_the_evidence():
    chooser = GapChooser(DAY, 30 * DAY, fetch_cost=0.2 * DAY, waste_cost=0.0)
    for seen in (Evidence(0, 0.0, 0.0), seen_at_rate(1 / DAY), Evidence(0, 0.0, 1e9)):
        assert sum(chooser.belief(seen)) == pytest.approx(1.0)
    rates = chooser.rates.tolist()

    def mean_log_rate(seen):
        return sum(p * math.log(r) for p, r in zip(chooser.belief(seen), rates, strict=True))

    assert mean_log_rate(seen_at_rate(1 / DAY)) > mean_log_rate(seen_at_rate(1 / (14 * DAY)))


def test_after_its_evidence_the_policy_takes_the_interval_from_the_chooser():
    policy = RevisitPolicy(7 * DAY, DAY, 30 * DAY, waste_cost=4.0, evidence=2)
    state = policy.visit(None, 0.0, 200, "v0", None, None)[1]
    result, state = policy.visit(state, 7 * DAY, 200, "v1", None, None)
    assert (result, state.interval) == (CHANGED, 3.5 * DAY)  # one gap: halved on a change
    assert (state.changes, state.changed_time, state.unchanged_time) == (1, 7 * DAY, 0.0)
    state = policy.visit(state, 10.5 * DAY, 304, None, None, None)[1]
    assert (state.changes, state.changed_time, state.unchanged_time) == (1, 7 * DAY, 3.5 * DAY)
    assert state.interval == policy.chooser.gap(Evidence(1, 7 * DAY, 3.5 * DAY))
    assert state.next_visit == 10.5 * DAY + state.interval


def test_a_dated_first_fetch_counts_as_evidence_and_places_the_first_wait():
    """With evidence 1 the chooser sets the first wait from the version's age alone: a year-old
    version waits the longest gap, a few days old one less; undated, the start interval."""
    policy = RevisitPolicy(7 * DAY, DAY, 30 * DAY, waste_cost=4.0, evidence=1)
    now = 400 * DAY

    def first_wait(age):
        lm = formatdate(now - age, usegmt=True) if age is not None else None
        state = policy.visit(None, now, 200, "v0", None, lm)[1]
        return state.next_visit - now

    assert first_wait(None) == 7 * DAY
    assert first_wait(365 * DAY) == 30 * DAY
    assert first_wait(4 * DAY) < first_wait(40 * DAY) <= 30 * DAY
    state = policy.visit(None, now, 200, "v0", None, formatdate(now - 4 * DAY, usegmt=True))[1]
    assert state.interval == policy.chooser.gap(Evidence(0, 0.0, 0.0, dated=1, age=4 * DAY))


def test_bad_costs_and_evidence_are_refused():
    with pytest.raises(ValueError, match="REVISIT_WASTE_COST"):
        RevisitPolicy(waste_cost=-1.0)
    with pytest.raises(ValueError, match="REVISIT_EVIDENCE"):
        RevisitPolicy(evidence=0)


def test_a_dated_change_makes_the_belief_peak_at_one_over_its_age():
    """One change dated A seconds back, nothing else: the likelihood l e^(-l A) peaks at l = 1/A
    (on a log grid with a log-uniform prior the weights are proportional to it)."""
    chooser = GapChooser(DAY, 30 * DAY, fetch_cost=0.2 * DAY, waste_cost=0.0)
    for age in (6 * 3600.0, 2 * DAY, 10 * DAY):
        belief = chooser.belief(Evidence(0, 0.0, 0.0, dated=1, age=age))
        peak = chooser.rates[belief.index(max(belief))]
        assert abs(math.log(peak * age)) <= math.log(1.25) / 2 + 1e-9


def test_dated_changes_tell_a_fast_page_from_one_worth_revisiting():
    """Both changed at each of 5 weekly visits; their Last-Modified says one changed an hour
    before each fetch, the other three days before: only the second can be kept fresh."""
    chooser = RevisitPolicy(7 * DAY, DAY, 30 * DAY, waste_cost=5.0).chooser
    undated = Evidence(5, 35 * DAY, 0.0)
    hourly = Evidence(0, 0.0, 0.0, dated=5, age=5 * 3600.0)
    every_three_days = Evidence(0, 0.0, 0.0, dated=5, age=15 * DAY)
    assert chooser.gap(hourly) == 30 * DAY
    assert chooser.gap(every_three_days) < chooser.gap(undated) <= 30 * DAY
    ages = [chooser.gap(Evidence(0, 0.0, 0.0, dated=5, age=5 * days * DAY)) for days in (3, 6, 12)]
    assert ages == sorted(ages)  # older versions: a slower page, a longer gap


def test_one_interval_for_every_page_is_a_policy_too():
    """REVISIT_MIN_INTERVAL = REVISIT_MAX_INTERVAL: every gap is that interval."""
    policy = RevisitPolicy(DAY, DAY, DAY, waste_cost=10.0, evidence=1)
    for seen in (Evidence(0, 0.0, 0.0), Evidence(5, 5 * DAY, 0.0), Evidence(0, 0.0, 9 * DAY)):
        assert policy.chooser.gap(seen) == DAY


def test_evidence_out_of_range_waits_the_longest_gap_not_the_shortest():
    """Times that overflow (a corrupted stored state) must not make the crawl impolite."""
    chooser = RevisitPolicy(7 * DAY, DAY, 30 * DAY).chooser
    overflowing = (Evidence(0, 0.0, math.inf), Evidence(0, 0.0, 1.7e308, 1, 1.7e308),
                   Evidence(1, math.nan, 0.0))
    for seen in overflowing:
        assert chooser.gap(seen) == 30 * DAY
    assert chooser.gap(Evidence(0, 0.0, 0.0), weight=math.nan) == 30 * DAY
