"""A page on a local disk is safe (acked, indexed) only once its records are fsync'd."""

from __future__ import annotations

import asyncio
import os

import pytest
from scrapy.signalmanager import SignalManager
from scrapy.utils.test import get_crawler

from crawler import signals as crawler_signals
from crawler.context.outcomes import PageOutcomes
from crawler.items import Page
from crawler.pipelines.store import PageStorePipeline
from crawler.store.durable import FsyncBatches
from crawler.store.files import LocalStore, SegmentWriter
from crawler.store.index import PageIndex


@pytest.fixture
def fsyncs(monkeypatch) -> list:
    """Every fsync of a file (not a directory), in order, with the file it made durable."""
    calls, real = [], os.fsync

    def fsync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if os.path.isfile(path):
            calls.append(("fsync", path))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def test_a_batch_is_said_safe_only_after_its_files_are_fsynced(tmp_path, fsyncs):
    store = LocalStore(tmp_path)
    files = [SegmentWriter(store, kind, "seg", "gz", roll_bytes=0, level=1) for kind in ("warc", "meta")]
    batches = FsyncBatches(files, 1.0, lambda name: fsyncs.append(("safe", name)))
    for file in files:
        file.append(b"page one")
    assert batches.written() == "fsync:0"
    assert batches.written() == "fsync:0"  # the same batch until it is fsync'd
    assert fsyncs == []
    batches.sync()
    assert fsyncs == [("fsync", str(tmp_path / "warc/seg-00000.gz")),
                      ("fsync", str(tmp_path / "meta/seg-00000.gz")), ("safe", "fsync:0")]
    batches.sync()  # nothing written since: no fsync, no batch
    assert len(fsyncs) == 3
    assert batches.written() == "fsync:1"


def test_with_no_interval_each_page_is_fsynced_as_it_is_written(tmp_path, fsyncs):
    store = LocalStore(tmp_path)
    file = SegmentWriter(store, "meta", "seg", "gz", roll_bytes=0, level=1)
    file.append(b"page")
    assert FsyncBatches([file], 0, lambda name: fsyncs.append(("safe", name))).written() is None
    assert fsyncs == [("fsync", str(tmp_path / "meta/seg-00000.gz"))]


def test_the_pipeline_acks_and_indexes_a_page_only_after_its_fsync(tmp_path, fsyncs):
    crawler = get_crawler()
    crawler.stats.open_spider()
    signals = SignalManager()
    signals.connect(lambda name: fsyncs.append(("safe", name)), signal=crawler_signals.store_safe,
                    weak=False)
    index = PageIndex(tmp_path / "index")
    outcomes = PageOutcomes()
    outcomes.attach(signals)
    pipeline = PageStorePipeline(LocalStore(tmp_path / "store"), crawler.stats, roll_bytes=0,
                                 signals=signals, index=index, fsync_interval=3600, outcomes=outcomes)
    pipeline.open_spider()
    page = Page(url="http://a.test/", status=200, fetched_at=0.0, depth=0, html=b"<p>hi</p>", text="hi")
    pipeline.process_item(page)
    outcome = outcomes.take(page)
    assert outcome is not None and outcome.stored and outcome.awaiting == ("fsync:0",)
    assert index.find("http://a.test/") is None  # not safe yet: not findable
    assert not any(kind == "safe" for kind, _ in fsyncs)
    pipeline._batches.sync()
    fsynced = [i for i, (kind, _) in enumerate(fsyncs) if kind == "fsync"]
    assert {fsyncs[i][1].rsplit("/", 2)[1] for i in fsynced} == {"warc", "meta"}
    assert fsyncs[-1] == ("safe", "fsync:0") and max(fsynced) < len(fsyncs) - 1
    assert index.find("http://a.test/") is not None
    assert crawler.stats.get_value("store/fsync_batches") == 1
    asyncio.run(pipeline.close_spider())
