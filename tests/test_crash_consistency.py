"""A crawl killed with kill -9 mid-crawl, then run again: every page acked is stored
whole, every output file is a valid gzip stream, and nothing is missing."""

from __future__ import annotations

import gzip
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from crawling import crawl_command
from testweb import Site, TestWeb

from crawler.frontier.backends.embedded.store import DONE, REVISIT, read_counts
from crawler.store.files import LocalStore, iter_records, torn_tails
from crawler.store.repair import WRITING_DIR
from crawler.store.warc import read_page
from crawler.urls.keys import url_fingerprint

SETTINGS = {"CRAWL_ID": "crash", "ROBOTSTXT_OBEY": False, "CONCURRENT_REQUESTS": 16,
            "POLITENESS_MIN_DELAY": 0.1, "POLITENESS_DELAY_FACTOR": 0}


def acked_fingerprints(state: Path) -> set[int]:
    """The URLs the frontier holds as done (signed 64-bit fingerprints)."""
    db = sqlite3.connect(f"file:{state}?mode=ro", uri=True)
    try:
        return {fp for (fp,) in db.execute("SELECT fp FROM urls WHERE state IN (?, ?)", (DONE, REVISIT))}
    finally:
        db.close()


def acks_committed(state: Path) -> int:
    """URLs done as of the running crawl's last commit (0 before its state file is made)."""
    try:
        return read_counts(state)["done"]
    except sqlite3.OperationalError:  # not there yet, or its tables not yet made
        return 0


def signed(fp: int) -> int:
    return fp - (1 << 64) if fp >= 1 << 63 else fp


def stored_whole(store: LocalStore) -> dict[int, str]:
    """The pages whose metadata, HTML and text records all read back whole, by fingerprint."""
    pages = {}
    for record in iter_records(store):
        html, text = read_page(store, record)
        assert html and text, record["url"]
        pages[signed(url_fingerprint(record["url"]))] = record["url"]
    return pages


def tear(path: Path) -> None:
    """Append the first half of a gzip member, as a writer killed mid-record leaves it."""
    member = gzip.compress(b'{"url": "http://torn.test/"}\n' * 20, mtime=0)
    with path.open("ab") as f:
        f.write(member[: len(member) // 2])


def test_a_crawl_killed_mid_crawl_resumes_with_whole_files_and_no_acked_page_lost(tmp_path):
    sites = [Site(f"c{i}.test", pages=60, fanout=4, page_bytes=8000) for i in range(2)]
    store_dir, state = tmp_path / "store", tmp_path / "state" / "crash" / "frontier.sqlite"
    with TestWeb(sites) as web:
        seeds = [web.url(s.host) for s in sites]
        command, env = crawl_command(web, tmp_path, "seeds=" + ",".join(seeds), **SETTINGS)
        first = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and first.poll() is None:
            if acks_committed(state) >= 20:
                break
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        expected = web.reachable(seeds)
        acked = acked_fingerprints(state)
        assert 20 <= len(acked) < len(expected), "the first run must be killed mid-way"

        # What the kill left: every page the frontier acked is stored in whole records.
        store = LocalStore(store_dir)
        stored = stored_whole(store)
        assert acked <= set(stored), "pages acked but not stored"
        # A kill lands mid-record by chance only: tear the files the dead run left open,
        # as a kill in the middle of a write does. The readers skip the torn tails.
        left_open = sorted(p.relative_to(store_dir / WRITING_DIR) for p in
                           (store_dir / WRITING_DIR).rglob("*") if p.is_file())
        assert {p.parts[0] for p in left_open} == {"meta", "warc"}
        for name in left_open:
            tear(store_dir / name)
        assert set(stored_whole(store)) == set(stored)
        assert all(torn_tails[name.as_posix()] for name in left_open if name.parts[0] == "meta")
        url = stored[next(iter(acked))]
        page = subprocess.run([sys.executable, "-m", "scrapy", "page", "--text", url,
                               "-s", f"STORE_URI={store_dir}"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60, check=False)
        assert page.returncode == 0 and page.stdout.strip(), page.stderr
        assert "ends in an incomplete record (torn by a crash, or still being written)" in page.stderr

        second = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=120, check=False)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "Resuming the crawl" in second.stderr
    for name in left_open:  # the repair at start said what it cut
        assert f"off the end of {name.as_posix()} at offset" in second.stderr
    assert not [p for p in (store_dir / WRITING_DIR).rglob("*") if p.is_file()]
    files = sorted(p for kind in ("meta", "warc") for p in (store_dir / kind).iterdir())
    assert len(files) >= 4  # both runs' WARC and metadata files
    for path in files:  # each a valid gzip stream, as stock tools see it
        gzip.decompress(path.read_bytes())
        if shutil.which("gzip"):
            subprocess.run(["gzip", "-t", str(path)], check=True)
    stored = stored_whole(LocalStore(store_dir))
    assert set(stored.values()) == expected
    assert acked_fingerprints(state) == set(stored)
    assert read_counts(state)["leased"] == 0
