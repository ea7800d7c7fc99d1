"""The short soak (``bench/soak.py --minutes 2.5`` with two faults): three Redis workers
crawl a changing web continuously while one is killed -9 and restarted and Redis is
frozen for 15 s. A leak or a lost lease that shows only over time fails here: the shared
state stays flat, no page is lost, politeness holds across the workers, and each worker
ends by itself."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from soak import Soak, parse_faults
from soak_report import politeness, report

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(420),
    pytest.mark.skipif(not (shutil.which("redis-server") and Path("/usr/sbin/dnsmasq").exists()),
                       reason="needs redis-server and dnsmasq"),
]


def test_a_short_soak_keeps_state_bounded_and_loses_no_page(tmp_path):
    args = argparse.Namespace(minutes=2.5, workers=3, embedded=False, hosts=8, pages=9, period=10.0,
                              disk="256m", sample=3.0, hostile=False, set=[])
    faults = parse_faults("kill@0.6,freeze@1.3", args.minutes, 1.0)
    outcome = Soak(args, tmp_path).run(faults)
    lines = "\n".join(report(outcome)[0])

    fetches = outcome.web.snapshot()
    expected = set(outcome.web.page_urls()) | {outcome.web.url(h) for h in outcome.web.hosts}
    assert outcome.stored >= expected, lines  # every page stored, the restarted worker's too
    assert not outcome.dead_letters, lines
    assert politeness(fetches, outcome.gap)[:2] == (0, 0), lines  # no overlap, no short gap
    web = outcome.web
    changing = [web.url(h, f"/p/{j}") for h in web.hosts for j in range(web.pages) if web.changing(f"/p/{j}")]
    versions = {u: {outcome.web.version(f.path, f.start) for f in fetches
                    if f.status == 200 and outcome.web.url(f.host, f.path) == u} for u in changing}
    assert all(len(v) > 1 for v in versions.values()), lines  # every changing page refetched

    steady = [s for s in outcome.samples if s.at >= outcome.warm and s.redis_memory is not None]
    first, last = steady[0].families, steady[-1].families
    for family in {f for f in first | last if f.startswith("content")}:
        # one version per URL: about 27 pages change every 10 s, so a kept history
        # would add hundreds of keys over the two minutes
        assert last[family] <= first[family] * 1.05 + 3, (family, first[family], last[family], lines)
    assert steady[-1].redis_memory <= steady[0].redis_memory * 1.15 + 0.2, lines
    for name in ("0", "1", "2"):  # worker 2 was killed and restarted: it ends by itself too
        after_end, code = outcome.exits[name]
        assert code == 0 and after_end <= 60, (name, outcome.exits, lines)
