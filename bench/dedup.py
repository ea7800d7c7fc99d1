"""Near-duplicate detection: simhash speed, near-copy quality on real pages, the block index at 1M.

Run from the repo root: ``python bench/dedup.py`` (~2.5 minutes; ``--quick`` for a
smoke run of a few seconds). Output is Markdown. The pages are ``dedup_pages``'s; each
part below is a module of its own: ``dedup_speed``, ``dedup_quality``, ``dedup_index``.

1. **Speed.** Two 100 KB pages of real text (the extracted text of PostgreSQL's HTML
   documentation, pages concatenated in file-name order from the first page and from
   the middle one, cut at a word before 100,000 UTF-8 bytes; one seeded synthetic text
   if the docs are missing), fingerprinted by ``crawler.dedup.simhash.text_fingerprint`` and
   by the ``simhash`` package 2.1.2, best of several runs each. The package is given
   our shingles ready-made (its list form, and a Counter of it), a head start: our
   time includes shingling. It is also timed on the raw text, its own default
   (character 4-grams of the text with non-word characters removed: other features,
   so another value). Under NumPy 2 the package raises OverflowError for a feature
   weight above 255, so it is run again in a NumPy 1.x virtualenv by subprocess when
   that exists (``--np1-python``, default ``/tmp/simhash-np1/bin/python``; make it with
   ``python -m venv /tmp/simhash-np1 && /tmp/simhash-np1/bin/pip install 'numpy<2'
   simhash==2.1.2``). The package rows use its default hash (MD5 of each feature):
   the same features as ours, other values; with ``hashfunc=shingle_hash`` it gives ours.
2. **Quality.** Every page of ``/usr/share/doc/postgresql-doc-15/html`` (installed
   with apt-get when missing and this runs as root, unless ``--no-install``; skipped,
   saying why, when that fails): text by ``crawler.extract.html.extract_text``.
   Near copies of every page of 50+ words (``--quick``: 30 of the first 200 pages),
   three kinds: a changed timestamp line (a "last updated" line under the first line,
   whose date and time differ), a 20-word ad block inserted at
   a random line break, and 1% of the words (at least one) replaced by random words
   of the corpus. Recall at distance d: copies within d bits of their page, next to
   simhash's prediction. False positives: pairs of distinct real pages within d bits.
   Pages with identical normalised texts are counted apart, and so are pairs whose
   shingle sets overlap (Jaccard >= 0.5: the same text in the main, which a near-dup
   check should find).
3. **Index.** ``NearDupIndex`` and the package's ``SimhashIndex(k=3)``, each filled
   with 1,000,000 random fingerprints under 35-character URL keys in a child process
   of its own (so RSS is its own): add rate, lookups/s for random queries (misses)
   and for queries 1-3 bits from stored fingerprints (hits), RSS growth per entry
   (the keys are made before; a key's own size is given apart). And
   ``RedisContentIndex`` on a redis-server the bench starts on loopback: its
   lookups as single calls and pipelined, and Redis's memory growth per page.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import numpy as np  # noqa: E402
from dedup_index import index_worker, section_index  # noqa: E402
from dedup_pages import (  # noqa: E402
    DOCS_PACKAGE,
    PAGE_BYTES,
    SEED,
    ensure_docs,
    load_pages,
    page_of_100kb,
    synthetic_text,
)
from dedup_quality import section_quality  # noqa: E402
from dedup_speed import section_speed  # noqa: E402

NP1_PYTHON = "/tmp/simhash-np1/bin/python"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run (a few seconds)")
    parser.add_argument("--no-install", action="store_true", help=f"never apt-get install {DOCS_PACKAGE}")
    parser.add_argument("--np1-python", default=os.environ.get("SIMHASH_NP1_PYTHON", NP1_PYTHON))
    parser.add_argument("--index-worker", nargs=3, metavar=("KIND", "N", "QUERIES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.index_worker:
        kind, n, queries = args.index_worker
        print(json.dumps(index_worker(kind, int(n), int(queries))))
        return

    import simhash

    started = time.perf_counter()
    print("# Near-duplicate detection bench\n")
    print(
        f"Python {platform.python_version()}, NumPy {np.__version__}, simhash package "
        f"{getattr(simhash, '__version__', '2.1.2')}, {os.cpu_count()} CPUs, "
        f"{'quick run' if args.quick else 'full run'}.\n"
    )
    why_not = ensure_docs(not args.no_install)
    pages: list[tuple[str, str]] = []
    load_s = 0.0
    if why_not is None:
        start = time.perf_counter()
        pages = load_pages(200 if args.quick else None)
        load_s = time.perf_counter() - start
    if len(page_of_100kb(pages).encode()) > PAGE_BYTES * 0.9:
        middle = len(pages) // 2
        texts = [
            ("A", f"the docs' pages from {pages[0][0]} on", page_of_100kb(pages)),
            ("B", f"the docs' pages from {pages[middle][0]} on", page_of_100kb(pages[middle:])),
        ]
    else:
        synthetic = synthetic_text(random.Random(SEED), PAGE_BYTES)
        texts = [
            ("S", f"seeded synthetic text ({why_not})", synthetic[: synthetic.rfind(" ", 0, PAGE_BYTES)])
        ]
    section_speed(texts, args.np1_python, repeats=3 if args.quick else 15)
    section_quality(pages, why_not, sample=30 if args.quick else 10**9, load_s=load_s)
    if args.quick:
        section_index(50_000, 50_000, 5_000)
    else:
        section_index(1_000_000, 1_000_000, 100_000)
    print(f"Total bench time {time.perf_counter() - started:.0f} s.")


if __name__ == "__main__":
    main()
