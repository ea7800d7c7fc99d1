"""bench/freshness.py's core on a tiny web: exact freshness, equal budgets, the optimum on top."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import freshness as bench
import freshness_oracle as oracle

from crawler.freshness.revisit import DATED_SLACK

DAY = bench.DAY


def test_freshness_is_the_time_the_stored_copy_was_current():
    web = bench.Web([1 / DAY], [0], [[0.5 * DAY, 0.7 * DAY, 3.2 * DAY]], 4 * DAY, seed=1)
    result = bench.simulate(web, bench.Fixed(web, budget=2))  # fetches at day 1 and day 3
    # current over [0, 0.5) and [1, 3) and [3, 3.2): 2.7 of 4 days
    assert result.freshness == pytest.approx(2.7 / 4)
    assert (result.changed, result.wasted) == (1, 1)


@pytest.fixture(scope="module")
def tiny():
    web = bench.make_web(300, 10, seed=7)
    budget = round(300 * 10 / 2)  # a visit per page every 2 days
    return web, budget, bench.compare(web, budget, known_rates=True)


def test_every_policy_spends_the_same_budget(tiny):
    _, budget, results = tiny
    assert results["fixed interval"][0].fetches == budget
    for name in ("plain halve/double", "ours", "ours, rates known"):
        assert results[name][0].fetches == pytest.approx(budget, rel=0.01), name
    assert results["optimal (known rates)"][0].fetches == pytest.approx(budget, rel=0.05)


def test_the_optimum_is_freshest_and_freshness_is_a_share(tiny):
    _, _, results = tiny
    for result, _ in results.values():
        assert 0.0 <= result.freshness <= 1.0
    best = results["optimal (known rates)"][0].freshness
    assert best >= max(r.freshness for name, (r, _) in results.items() if not name.startswith("optimal"))


def test_the_optimal_rates_meet_the_budget_and_skip_pages_not_worth_a_fetch():
    rates = np.array([0.0, 1e-7, 1e-6, 1e-5, 1e-3])  # never .. every 17 minutes
    freqs = oracle.allocation(rates, total=2e-6)
    assert freqs.sum() == pytest.approx(2e-6, rel=1e-6)
    assert freqs[0] == 0.0 and freqs[-1] == 0.0  # never changes; changes too fast to keep
    assert oracle.expected(rates, freqs)[0] > oracle.expected(rates, np.full(5, 2e-6 / 5))[0]


def test_weighting_waste_trades_freshness_for_fewer_wasted_fetches_within_the_bounds():
    rates = np.array([0.0, 1e-7, 1e-6, 1e-5, 1e-3])
    free = oracle.allocation(rates, total=2e-6)
    frugal = oracle.allocation(rates, total=2e-6, waste_cost=1e6)
    bounded = oracle.allocation(rates, total=2e-6, waste_cost=1e6, bounds=(DAY, 30 * DAY))
    for freqs in (frugal, bounded):
        assert freqs.sum() == pytest.approx(2e-6, rel=1e-6)
    fresh, waste = oracle.expected(rates, free)
    fresh_frugal, waste_frugal = oracle.expected(rates, frugal)
    assert waste_frugal < waste and fresh_frugal < fresh
    assert np.all((bounded >= 1 / (30 * DAY) - 1e-18) & (bounded <= 1 / DAY + 1e-18))


def test_the_oracle_wastes_at_most_what_it_is_asked_to_on_the_same_budget(tiny):
    web, budget, results = tiny
    allowed = results["fixed interval"][0].wasted // 2
    def run(bounds):
        return oracle.frugal(np.array(web.rates), web.horizon, allowed, budget, bounds,
                             lambda schedule: bench.simulate(web, schedule))[1]

    result = run(None)
    assert result.wasted <= allowed * 1.02
    assert result.fetches == pytest.approx(budget, rel=0.05)
    # a visit at least every 30 days forces waste that no weighting removes on this short web
    bounded = run(bench.SHIPPED[1:])
    assert allowed < bounded.wasted < results["fixed interval"][0].wasted


def test_told_the_rates_the_chooser_is_fresher_than_while_it_learns_them(tiny):
    _, _, results = tiny
    assert results["ours, rates known"][0].freshness > results["ours"][0].freshness


def test_dated_pages_hand_the_policy_the_time_of_their_last_change():
    web = bench.make_web(200, 20, seed=3)
    dated = bench.Adaptive(web, 1.0, weighted=False, hot_share=None, waste_cost=5.0, evidence=2,
                           dated_share=1.0)
    undated = bench.Adaptive(web, 1.0, weighted=False, hot_share=None, waste_cost=5.0, evidence=2)
    bench.simulate(web, dated), bench.simulate(web, undated)
    assert sum(s.dated_changes for s in dated.states) > 0
    assert sum(s.dated_changes for s in undated.states) == 0
    # the first crawl's Last-Modified dates the version then current: at most the page's age
    for state, age in zip(dated.states, web.ages, strict=True):  # none within the slack: dynamic pages
        assert state.first_age == (pytest.approx(age, abs=1) if age > DATED_SLACK else None)
    assert all(s.first_age is None for s in undated.states)
    for state in dated.states:  # every change found is dated: a version's age is at most its gap
        assert state.changed_time == 0.0
        assert state.dated_age <= state.dated_changes * web.horizon


def test_a_learner_keeping_every_gap_believes_what_ours_does_when_the_gaps_are_equal():
    """bench/freshness_learners.py's exact likelihood and the shipped summary agree where the
    summary (changed gaps at their mean) loses nothing."""
    import freshness_learners as learners

    web = bench.make_web(1, 60, seed=3)
    kept = learners.KeptGaps(web, 1.0, waste_cost=5.0)
    kept.start(0)
    kept.last[0] = 0.0
    for n, version in enumerate((1, 2, 2), start=1):  # changed, changed, unchanged, 3 days apart
        kept.fetched(0, 3 * DAY * n, version)
    belief = np.exp(kept.logs[0] - kept.logs[0].max())
    shipped = kept.chooser.belief(bench.Evidence(2, 6 * DAY, 3 * DAY))
    assert belief / belief.sum() == pytest.approx(np.array(shipped), rel=1e-6, abs=1e-12)


def test_the_lookahead_and_thompson_learners_spend_the_budget_within_the_bounds():
    import freshness_learners as learners

    web = bench.make_web(200, 20, seed=5)
    budget = round(200 * 20 / 7)
    for policy in (learners.Lookahead, learners.Thompson):
        scale, result = bench.calibrated(web, budget, policy=policy, waste_cost=8.0)
        assert result.fetches == pytest.approx(budget, rel=0.01), policy.__name__
        schedule = policy(web, scale, waste_cost=8.0)
        gap = schedule.choose(np.full(len(schedule.chooser.rates), 1 / len(schedule.chooser.rates)), 1.0, 0.0)
        assert schedule.policy.min_interval <= gap <= schedule.policy.max_interval
