"""How ``bench/soak_report.py`` judges a worker's threads and descriptors: flat in steady
state, so a dip while a fault pauses the crawl is no miss, and a leak is one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from soak import Fault
from soak_report import Outcome, report
from soak_watch import Sample
from soak_web import SoakWeb


def descriptors_row(fds_at) -> str:
    web = SoakWeb(hosts=1, pages=3)
    web.server.server_close()
    samples = [Sample(at, workers={"0": (100.0, 6, fds_at(at))}, redis_memory=3.0)
               for at in range(5, 1200, 5)]
    outcome = Outcome(web, samples, [Fault("disk", 400.0, 60.0)], {"0": (5.0, 0)}, set(), set(), ["0"],
                      [], set(), None, 1200.0, 0.3, False)
    return next(line for line in report(outcome)[0] if "threads, descriptors" in line)


@pytest.mark.parametrize(("fds_at", "met"), [
    (lambda at: 28 if 405 <= at < 470 else 40, True),  # idle connections closed while the disk is full
    (lambda at: 40 + at // 60, False),  # one more every minute: a leak
])
def test_descriptors_are_judged_flat_in_steady_state(fds_at, met):
    assert descriptors_row(fds_at).endswith("MET" if met else "MISSED")
