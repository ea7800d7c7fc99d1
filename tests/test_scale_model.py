"""bench/scale_sim.py, the model behind bench/scale_model.py: small cases computed by hand."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import scale_sim as sim
from scale_measure import Line, ShardRates, fit

from crawler.frontier.policy import PolitenessPolicy

FIXED = PolitenessPolicy(min_delay=1.0, delay_factor=0)
NO_GAP = PolitenessPolicy(min_delay=0.0, delay_factor=0)
FREE = sim.ShardCosts()


def uniform_web(hosts: int, pages: int, latency: float) -> sim.Web:
    return sim.Web(tuple([pages] * hosts), tuple([latency] * hosts))


def test_one_host_is_fetched_once_a_gap():
    # 5 pages, 0.1 s fetches, 1 s gaps: starts at 0, 1.1, 2.2, 3.3, 4.4; the last ends at 4.5
    result = sim.simulate(uniform_web(1, 5, 0.1), sim.Setup(1, 1, 4, 1000.0, policy=FIXED), FREE, 100)
    assert result.fetches == result.pages_done == 5
    assert result.span_rate == pytest.approx(5 / 4.5)
    assert result.violations == 0


def test_many_slots_leave_politeness_as_the_bound():
    # 20 hosts in parallel, each (n - 1) x (latency + gap) + latency long
    result = sim.simulate(uniform_web(20, 4, 0.2), sim.Setup(3, 2, 50, 1e6, policy=FIXED), FREE, 100)
    assert result.span_rate == pytest.approx(20 * 4 / (3 * 1.2 + 0.2))
    assert result.violations == 0


def test_slots_bound_the_rate_when_hosts_are_many():
    # 2 workers x 2 slots, 0.1 s fetches, no gap, free CPU and shards: 40 fetches/s
    result = sim.simulate(uniform_web(200, 5, 0.1), sim.Setup(2, 2, 2, 1e6, policy=NO_GAP), FREE,
                          duration=10, warmup=1)
    assert result.fetch_rate == pytest.approx(40, rel=0.01)


def test_worker_cpu_bounds_the_rate():
    # no latency, no gap, 100 pages/s of CPU a worker: 3 workers make 300 pages/s, CPUs always busy
    result = sim.simulate(uniform_web(500, 10, 0.0), sim.Setup(2, 3, 8, 100.0, policy=NO_GAP), FREE,
                          duration=10, warmup=1)
    assert result.fetch_rate == pytest.approx(300, rel=0.01)
    assert result.worker_utilisation == pytest.approx(1.0, abs=0.01)


def test_a_shard_saturates_at_one_over_its_cost_per_page():
    # 1 ms of shard CPU for each fetched report: one shard does 1,000 pages/s whatever the workers
    costs = sim.ShardCosts(report_item=0.001)
    result = sim.simulate(uniform_web(2000, 10, 0.0), sim.Setup(1, 4, 16, 1e6, policy=NO_GAP), costs,
                          duration=5, warmup=1)
    assert result.fetch_rate == pytest.approx(1000, rel=0.02)
    assert result.shard_utilisation[0] == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("link_batch", [False, True])
def test_shard_time_is_the_sum_of_the_calls_costs(link_batch):
    costs = sim.ShardCosts(claim_call=1e-4, claim_item=2e-5, report_call=3e-5, report_item=4e-6,
                           ack_call=5e-6, ack_item=6e-6, link_call=7e-5, link_item=8e-6)
    web = uniform_web(30, 3, 0.05)
    setup = sim.Setup(2, 2, 4, 500.0, links=10, link_batch=link_batch, policy=FIXED)
    result = sim.simulate(web, setup, costs, 100)
    calls = 1 if link_batch else 10
    per_page = (costs.claim_item + costs.report_call + costs.report_item + costs.ack_call + costs.ack_item
                + calls * costs.link_call + 10 * costs.link_item)
    busy = sum(result.shard_utilisation) * result.ended
    assert result.pages_done == web.pages == 90
    assert busy == pytest.approx(result.claim_calls * costs.claim_call + 90 * per_page)


def test_politeness_holds_under_slow_shards_and_many_workers():
    web = sim.Web(sim.power_law_sizes(300, 2, 1.2, 40), sim.lognormal_latencies(300, 0.05, 0.8, seed=1))
    costs = sim.ShardCosts(claim_call=2e-4, claim_item=1e-4, report_call=3e-4, link_call=1e-4)
    setup = sim.Setup(3, 6, 8, 200.0, links=5, rtt=0.002, starts=(0, 0.1, 0.2, 0.3, 0.4, 0.5),
                      policy=PolitenessPolicy(min_delay=0.2, delay_factor=3))
    result = sim.simulate(web, setup, costs, 300)
    assert result.pages_done == web.pages
    assert result.overlaps == result.short_gaps == 0


def test_the_politeness_log_counts_overlaps_and_short_gaps():
    log = sim.PolitenessLog(1, FIXED)
    log.start(0, 0.0)
    log.start(0, 0.5)  # the first is still in flight
    log.end(0, 0.0, 1.0)
    log.start(0, 1.5)  # 0.5 s after the end: the gap is 1 s
    log.end(0, 1.5, 2.0)
    log.start(0, 3.0)  # exactly the gap: fine
    assert (log.overlaps, log.short_gaps) == (1, 1)


def test_power_law_sizes_and_lognormal_latencies():
    sizes = sim.power_law_sizes(1000, 5, 1.2, 500)
    assert sizes == tuple(sorted(sizes, reverse=True))
    assert min(sizes) >= 5 and max(sizes) == 500
    latencies = sorted(sim.lognormal_latencies(1001, 0.5, 0.5, seed=3))
    assert latencies[500] == pytest.approx(0.5)
    assert sim.lognormal_latencies(10, 0.5, 0.5, seed=3) == sim.lognormal_latencies(10, 0.5, 0.5, seed=3)


def test_bad_setups_are_refused():
    with pytest.raises(ValueError, match="positive"):
        sim.Simulation(uniform_web(1, 1, 0.1), sim.Setup(0, 1, 1, 1.0), FREE)
    with pytest.raises(ValueError, match="one time per worker"):
        sim.Simulation(uniform_web(1, 1, 0.1), sim.Setup(1, 2, 1, 1.0, starts=(0.0,)), FREE)


def test_costs_are_fitted_from_two_batch_sizes():
    # 10 µs a call and 2 µs an item: 100 calls of 1, 10 calls of 32
    small, large = Line(100, 100, 100 * 12e-6, 1.0), Line(10, 320, 10 * 74e-6, 1.0)
    assert fit(small, large) == pytest.approx((1e-5, 2e-6))
    links_small, links_large = Line(100, 100, 100 * 5e-6, 1.0), Line(10, 600, 10 * 64e-6, 1.0)
    rates = ShardRates(small, large, links_small, links_large, 14.0, 1e-4, Line(1, 1, 1e-5, 1.0),
                       Line(100, 100, 100 * 3e-5, 1.0))
    costs = rates.costs()
    assert costs.content == pytest.approx(3e-5)  # the split index's CPU a page, whatever the shards
    assert costs.claim_call + costs.report_call + costs.ack_call == pytest.approx(1e-5)  # a step's 4 calls
    assert costs.claim_item + costs.report_item + costs.ack_item == pytest.approx(2e-6)
    assert (costs.link_call, costs.link_item) == pytest.approx((4e-6, 1e-6))


def test_content_checks_go_to_the_shards_in_turn_and_the_page_waits_for_them():
    # 3 pages a 1.1 s apart (politeness); each check costs 0.05 s at shard 1, 0, 1 in turn;
    # the thread spends 1 ms on a page and waits 0.05 s on its check (no round trip time)
    costs = sim.ShardCosts(content=0.05)
    result = sim.simulate(uniform_web(1, 3, 0.1), sim.Setup(2, 1, 1, 1000.0, policy=FIXED), costs, 100)
    assert result.pages_done == 3 and result.violations == 0
    busy = [u * result.ended for u in result.shard_utilisation]
    assert busy == pytest.approx([0.05, 0.10])
    assert result.worker_utilisation * result.ended == pytest.approx(3 * 0.051)
