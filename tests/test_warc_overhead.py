"""bench/warc_overhead.py's records on four real pages: the request records' share of the
WARC bytes stays under the 10% the storage docs promise for a first visit and a revisit."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import warc_overhead as bench

PAGES = sorted((Path(__file__).parent / "data" / "syndication").glob("*.html.gz"))


def test_request_records_are_under_a_tenth_of_the_warc_bytes(tmp_path):
    sizes = bench.ours(bench.exchanges(PAGES), tmp_path)
    first_visits = sizes["request"] + sizes["response"] + sizes["conversion"]
    assert len(PAGES) == 4 and sizes["response"] > 4 * 5000  # real pages, gzip-encoded
    assert sizes["request"] < 0.05 * first_visits
    with_revisits = first_visits + sizes["revisit"] + sizes["revisit request"]
    assert sizes["request"] + sizes["revisit request"] < 0.10 * with_revisits
