"""A store that runs out of room pauses the crawl: said once, nothing lost, every page
stored once room comes back (a small tmpfs as the store's disk, or an injected ENOSPC
where no tmpfs can be mounted)."""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from crawling import CrawlResult, crawl_command
from testweb import Site, TestWeb

from crawler.store.cdxj import index_warc
from crawler.store.files import LocalStore, iter_records
from crawler.store.wacz import index_lines

PAGES = 120


@contextlib.contextmanager
def small_disk(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path`` (root only), unmounted after."""
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _wait_for(path: Path, text: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:  # bounded in time
        if text in path.read_text(errors="replace"):
            return True
        time.sleep(0.2)
    return False


def _stored_whole(store: LocalStore, web: TestWeb, times: int = 1) -> None:
    """Every page of the site stored once (at most ``times``), every file read to its end,
    and every WARC file's replay index whole."""
    urls = Counter(record["url"] for record in iter_records(store))
    assert sorted(urls) == sorted(web.page_url("full.test", i) for i in range(PAGES))
    assert max(urls.values()) <= times, urls.most_common(3)
    for name in store.list("meta") + store.list("warc"):
        gzip.decompress(store.read(name))  # reads to its end: no torn member left
    # A WACZ replays every page: each WARC file's index is whole, or read from the file again.
    indexed = set(store.list("indexes"))
    for name in store.list("warc"):
        whole = index_warc(io.BytesIO(store.read(name)), name.rsplit("/", 1)[1])
        assert sorted(index_lines(store, name, indexed)) == sorted(whole), name


def _quiet(result: CrawlResult) -> None:
    """No traceback, one ERROR line a pause (at most 20), no attempt spent on the disk."""
    assert "Traceback" not in result.log
    errors = [line for line in result.log.splitlines() if "] ERROR:" in line]
    assert 1 <= len(errors) <= 20, errors
    stats = result.stats
    assert stats["store/full"] >= 1
    assert stats.get("frontier/dead_letters", 0) == 0 and stats.get("frontier/retries", 0) == 0


def _crawl_through_a_pause(command: list[str], env: dict[str, str], tmp_path: Path, web: TestWeb,
                           store: Path, make_room: Callable[[], None],
                           fill: Callable[[], None] | None = None) -> CrawlResult:
    """Run the crawl, ``fill`` the disk once it has fetched a few dozen pages (if given),
    check that it claims nothing while it says the store has no room, ``make_room``, and
    return the crawl's result once it has ended."""
    log = tmp_path / "crawl.log"
    with log.open("w") as out:
        crawl = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            if fill is not None:
                deadline = time.monotonic() + 60
                while len(web.hits()) < PAGES // 4 and time.monotonic() < deadline:  # bounded in time
                    time.sleep(0.05)
                fill()
            assert _wait_for(log, "has no room", 120), log.read_text()[-3000:]
            time.sleep(1)  # the fetches in flight end
            fetched = len(web.hits())
            time.sleep(2)  # paused: probes fail, nothing is claimed
            assert len(web.hits()) == fetched
            make_room()
            returncode = crawl.wait(timeout=180)
        finally:
            crawl.kill()
    return CrawlResult(returncode, log.read_text(), LocalStore(store))


def test_a_full_store_pauses_the_crawl_and_every_page_is_stored_once_room_returns(web_factory, tmp_path):
    web = web_factory([Site("full.test", pages=PAGES)])
    with small_disk(tmp_path / "disk", "4m") as disk:
        filler = disk / "filler"
        filler.write_bytes(b"\0" * (3900 * 1024))  # leaves ~200 KB: room for a few dozen pages
        store = disk / "store"
        command, env = crawl_command(web, tmp_path, f"seeds={web.url('full.test')}", STORE_URI=store,
                                     STORE_FULL_PROBE_INTERVAL=1, STORE_FSYNC_INTERVAL=0.2, STORE_MIN_FREE=0)
        result = _crawl_through_a_pause(command, env, tmp_path, web, store, filler.unlink)
        assert result.returncode == 0, result.log[-3000:]
        _quiet(result)
        _stored_whole(result.store, web)


def test_an_injected_enospc_pauses_the_crawl_and_every_page_is_stored_once_room_returns(web_factory,
                                                                                          tmp_path):
    # Runs where no tmpfs can be mounted: tests/full_disk.py fails the store's writes halfway
    # with ENOSPC while a flag file exists.
    web = web_factory([Site("full.test", pages=PAGES)])
    flag, store = tmp_path / "disk-full", tmp_path / "store"
    command, env = crawl_command(web, tmp_path, f"seeds={web.url('full.test')}", STORE_URI=store,
                                 STORE_FULL_PROBE_INTERVAL=1, STORE_FSYNC_INTERVAL=0.2, STORE_MIN_FREE=0)
    assert command[1:3] == ["-m", "scrapy"]
    command = [sys.executable, str(Path(__file__).with_name("full_disk.py")), str(flag), *command[3:]]
    result = _crawl_through_a_pause(command, env, tmp_path, web, store, flag.unlink, fill=flag.touch)
    assert result.returncode == 0, result.log[-3000:]
    _quiet(result)
    assert "No space left on device" in result.log
    _stored_whole(result.store, web)


def test_a_store_still_full_after_the_timeout_closes_the_crawl_to_be_resumed(web_factory, tmp_path):
    web = web_factory([Site("full.test", pages=PAGES)])
    with small_disk(tmp_path / "disk", "4m") as disk:
        filler = disk / "filler"
        filler.write_bytes(b"\0" * (3900 * 1024))
        store = disk / "store"
        command, env = crawl_command(web, tmp_path, f"seeds={web.url('full.test')}", STORE_URI=store,
                                     STORE_FULL_PROBE_INTERVAL=1, STORE_FULL_TIMEOUT=3,
                                     STORE_FSYNC_INTERVAL=0.2, STORE_MIN_FREE=0)

        def run() -> CrawlResult:
            done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=120, check=False)
            return CrawlResult(done.returncode, done.stdout + done.stderr, LocalStore(store))

        closed = run()
        assert closed.returncode == 0, closed.log[-3000:]
        _quiet(closed)
        assert "'finish_reason': 'store_full'" in closed.log and "run the same command again" in closed.log
        filler.unlink()
        resumed = run()
        assert resumed.returncode == 0, resumed.log[-3000:]
        assert "Traceback" not in resumed.log and "] ERROR:" not in resumed.log
        _stored_whole(resumed.store, web)


def test_a_disk_shared_with_the_crawl_state_pauses_before_it_fills(web_factory, tmp_path):
    # As by default, the frontier's state, the page index and the stats share the store's
    # disk: a commit of theirs that found no room would be rolled back (SQLite).
    web = web_factory([Site("full.test", pages=PAGES)])
    with small_disk(tmp_path / "disk", "8m") as disk:
        filler = disk / "filler"
        filler.write_bytes(b"\0" * (5 * 1024 * 1024))  # leaves ~3 MB, 1 MB over the reserve
        store = disk / "store"
        command, env = crawl_command(web, tmp_path, f"seeds={web.url('full.test')}", STORE_URI=store,
                                     FRONTIER_DIR=disk / "state", STORE_INDEX_DIR=disk / "index",
                                     DATA_DIR=disk, STORE_MIN_FREE=2_000_000, STORE_FULL_PROBE_INTERVAL=1,
                                     STORE_FSYNC_INTERVAL=0.2)
        result = _crawl_through_a_pause(command, env, tmp_path, web, store, filler.unlink)
        assert result.returncode == 0, result.log[-3000:]
        _quiet(result)
        assert "under STORE_MIN_FREE" in result.log
        _stored_whole(result.store, web)


def _fill_to_the_last_byte(path: Path) -> None:
    """Another program fills the disk of ``path``: it writes until no byte is left."""
    with path.open("wb", buffering=0) as filler:
        for _ in range(1 << 20):  # bounded: 4 GiB at most
            try:
                filler.write(b"\0" * 4096)
            except OSError as error:
                assert error.errno == errno.ENOSPC
                return
    raise AssertionError(f"{path}: the disk never filled")


def _state_kept(result: CrawlResult, web: TestWeb) -> None:
    """The frontier's state said its disk was full, once, with no traceback; every page is
    stored, a page whose ack was undone at most twice."""
    assert result.returncode == 0, result.log[-3000:]
    _quiet(result)
    assert "Frontier state has no room" in result.log
    assert result.stats["frontier/state_full"] >= 1
    _stored_whole(result.store, web, times=2)


def test_a_disk_filled_by_another_program_loses_no_frontier_state(web_factory, tmp_path):
    # The frontier's state, the page index and the stats share the store's disk, and another
    # program takes its last byte mid-crawl: commits of the SQLite files fail and are rolled back.
    web = web_factory([Site("full.test", pages=PAGES)])
    with small_disk(tmp_path / "disk", "16m") as disk:
        store, filler = disk / "store", disk / "filler"
        command, env = crawl_command(web, tmp_path, f"seeds={web.url('full.test')}", STORE_URI=store,
                                     FRONTIER_DIR=disk / "state", STORE_INDEX_DIR=disk / "index",
                                     DATA_DIR=disk, STORE_MIN_FREE=2_000_000, STORE_FULL_PROBE_INTERVAL=1,
                                     STORE_FSYNC_INTERVAL=0.2, POLITENESS_MIN_DELAY=0.02)
        result = _crawl_through_a_pause(command, env, tmp_path, web, store, filler.unlink,
                                        fill=lambda: _fill_to_the_last_byte(filler))
        _state_kept(result, web)


def test_injected_sqlite_full_loses_no_frontier_state(web_factory, tmp_path):
    # Where no tmpfs can be mounted: tests/full_disk.py --sqlite fails the store's writes and
    # every SQLite commit (rolled back) while a flag file exists.
    web = web_factory([Site("full.test", pages=PAGES)])
    flag, store = tmp_path / "disk-full", tmp_path / "store"
    command, env = crawl_command(web, tmp_path, f"seeds={web.url('full.test')}", STORE_URI=store,
                                 STORE_FULL_PROBE_INTERVAL=1, STORE_FSYNC_INTERVAL=0.2, STORE_MIN_FREE=0,
                                 POLITENESS_MIN_DELAY=0.02)
    command = [sys.executable, str(Path(__file__).with_name("full_disk.py")), str(flag), "--sqlite",
               *command[3:]]
    result = _crawl_through_a_pause(command, env, tmp_path, web, store, flag.unlink, fill=flag.touch)
    _state_kept(result, web)
    assert "Page index" in result.log and "rows that waited are indexed" in result.log
