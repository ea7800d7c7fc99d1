"""``scrapy plan``: a worked sizing example (a billion pages kept fresh), reproduced from its inputs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from crawler.plan.sizing import Target, parse_classes, plan, report

BILLION_PAGES = Target()  # the defaults are the worked example's inputs


def test_the_worked_example_figures_are_reproduced():
    result = plan(BILLION_PAGES)
    assert round(result.fetches_per_day) == 162_857_143
    assert round(result.fetch_rate) == 1_885
    assert round(result.connections) == 942  # Little's law: 1,885 x 0.5 s
    assert result.gap == 5.0  # 10 x 0.5 s
    assert round(result.back_queues) == 9_425  # 1,885 x 5 s
    assert round(result.bandwidth / 1e6, 1) == 188.5  # MB/s
    assert round(result.bandwidth * 8 / 1e9, 2) == 1.51  # Gbit/s
    assert round(result.seen_strings / 1e9) == 800
    assert round(result.seen_exact / 1e9) == 80
    assert round(result.bloom_bits_per_url, 2) == 9.59
    assert round(result.seen_bloom / 1e9, 1) == 12.0


def test_mercator_rule_of_thumb_is_short_of_the_rate_x_gap_queues():
    # The sizing trap: 3 queues per connection sustain 2,826 / 5 s = 565 pages/s, 30% of the target.
    result = plan(BILLION_PAGES)
    assert round(3 * result.connections / result.gap) == 565
    assert round(3 * result.connections / result.gap / result.fetch_rate, 2) == 0.30


def test_a_fixed_one_second_gap_needs_one_queue_per_page_per_second():
    result = plan(Target(gap_factor=0))
    assert result.gap == 1.0 and round(result.back_queues) == 1_885


def test_workers_are_the_rate_over_a_measured_worker_rate():
    assert plan(Target(worker_rate=100)).workers == 19
    assert plan(Target()).workers is None


def test_dns_lookups_are_one_per_ttl_and_cycle_per_host_and_cache():
    # 1,885 pages/s, a host every 5.5 s (5 s gap + 0.5 s): 10,367 hosts in cycle
    result = plan(Target(worker_rate=100))
    assert round(result.dns_shared, 1) == round(1_885.0 * 5.5 / (300 + 5.5), 1)  # one cache: ~34/s
    assert round(result.dns_per_worker) == round(1_885.0 * 5.5 * 19 / (300 + 19 * 5.5))  # 19 caches
    assert plan(Target(dns_ttl=1)).dns_shared == plan(Target(dns_ttl=60)).dns_shared  # DNS_MIN_TTL


@pytest.mark.parametrize(
    "text, classes",
    [
        ("10%:1,30%:7,60%:30", ((0.1, 1.0), (0.3, 7.0), (0.6, 30.0))),
        ("1:2", ((1.0, 2.0),)),
    ],
)
def test_change_classes_are_parsed(text, classes):
    parsed = parse_classes(text)
    assert [share for share, _ in parsed] == pytest.approx([share for share, _ in classes])
    assert [days for _, days in parsed] == [days for _, days in classes]


@pytest.mark.parametrize("text", ["10%:1", "10%", "100%:0", "x:1", "150%:1", "100%:x", "nan%:1", "100%:nan"])
def test_bad_change_classes_are_refused(text):
    with pytest.raises(ValueError):
        parse_classes(text)


def test_scrapy_plan_prints_seed_000s_figures():
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", "plan", "--worker-rate", "228.3"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = {line.split("  ")[0]: line for line in done.stdout.splitlines()}
    assert "1,885 pages/s" in lines["fetch rate"]
    assert " 942 " in lines["connections in flight"]
    assert " 9,425 " in lines["back queues"]
    assert "12.0 GB" in lines["seen set, Bloom"]
    assert " 9 " in lines["workers"]
    assert done.stdout.splitlines() == report(Target(worker_rate=228.3), plan(Target(worker_rate=228.3)))


def test_scrapy_plan_refuses_shares_that_do_not_add_up():
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", "plan", "--change", "50%:2"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "add up to 50%" in done.stderr


@pytest.mark.parametrize(("change", "said"), [
    # float()'s own words came out alone: "could not convert string to float: 'x'".
    ("10%:x", "--change '10%:x': class '10%:x': want SHARE:DAYS, e.g. 10%:1"),
    ("10%:1,90%:7x", "--change '10%:1,90%:7x': class '90%:7x': want SHARE:DAYS"),
    ("50%:2", "--change '50%:2': shares add up to 50%, not 100%"),
])
def test_scrapy_plan_names_change_and_its_bad_value(change, said):
    done = subprocess.run([sys.executable, "-m", "scrapy", "plan", "--change", change],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("option", "value", "said"), [
    # Before: "out of range: pages" without the option's dashes or value, and NaN passed.
    ("--pages", "0", "--pages 0: must be above 0"),
    ("--latency", "nan", "--latency nan: must be above 0"),
    ("--workers", "-1", "--workers -1: must be 0 or more"),
    ("--fp-rate", "1.5", "--fp-rate 1.5: must be between 0 and 1"),
])
def test_scrapy_plan_names_each_option_out_of_range_and_its_value(option, value, said):
    done = subprocess.run([sys.executable, "-m", "scrapy", "plan", option, value],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
