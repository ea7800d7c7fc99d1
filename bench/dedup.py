"""Near-duplicate detection: simhash speed, near-copy quality on real pages, the block index at 1M.

Run from the repo root: ``python bench/dedup.py`` (~2.5 minutes; ``--quick`` for a
smoke run of a few seconds). Output is Markdown.

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
import glob
import hashlib
import json
import math
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import numpy as np  # noqa: E402

from crawler.dedup.simhash import (  # noqa: E402
    NearDupIndex,
    shingle_hash,
    shingles,
    text_fingerprint,
)

DOCS_PACKAGE = "postgresql-doc-15"
DOCS_DIR = Path("/usr/share/doc/postgresql-doc-15/html")
NP1_PYTHON = "/tmp/simhash-np1/bin/python"
PAGE_BYTES = 100_000
SEED = 20240601
AD_BLOCK = (
    "sponsored offer get fifty percent off premium cloud hosting today with code "
    "save fifty at checkout limited time only click"
)
DISTANCES = (3, 6)
NEAR_IDENTICAL_JACCARD = 0.5


def best_ms(fn: Callable[[], object], repeats: int) -> float:
    """Best wall time of `repeats` calls, in milliseconds."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def rss_bytes() -> int:
    """VmRSS of this process, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


# --- real pages -------------------------------------------------------------------------------


def ensure_docs(install: bool) -> str | None:
    """Make DOCS_DIR exist if possible; None when it does, else why it does not."""
    if DOCS_DIR.is_dir():
        return None
    if not install:
        return f"{DOCS_DIR} is missing and --no-install was given"
    apt = shutil.which("apt-get")
    if apt is None:
        return f"{DOCS_DIR} is missing and apt-get is unavailable"
    if os.geteuid() != 0:
        return f"{DOCS_DIR} is missing and installing {DOCS_PACKAGE} needs root"
    cmd = [apt, "install", "-y", "--no-install-recommends", DOCS_PACKAGE]
    for attempt in (cmd, [apt, "update"], cmd):
        try:
            done = subprocess.run(attempt, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            return f"`{' '.join(attempt)}` timed out"
        if attempt is cmd and done.returncode == 0 and DOCS_DIR.is_dir():
            return None
    return f"`apt-get install {DOCS_PACKAGE}` failed: {done.stderr.strip()[-200:]}"


def load_pages(limit: int | None) -> list[tuple[str, str]]:
    """(file name, extracted text) of the docs' HTML pages, in file-name order."""
    from crawler.extract.html import extract_text, parse_html

    pages = []
    for path in sorted(glob.glob(str(DOCS_DIR / "*.html")))[:limit]:
        pages.append((Path(path).name, extract_text(parse_html(Path(path).read_bytes()))))
    return pages


def synthetic_text(rng: random.Random, n_bytes: int) -> str:
    """Seeded text of Zipf-distributed pseudo-words in sentences, lines and paragraphs."""
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "te", "vi", "do", "pa", "re", "li", "mo", "su"]
    vocab = sorted({"".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(6000)})
    weights = [1 / (rank + 1) ** 1.05 for rank in range(len(vocab))]
    lines, size = [], 0
    while size < n_bytes:
        line = " ".join(rng.choices(vocab, weights, k=rng.randint(8, 60))) + "."
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def page_of_100kb(pages: list[tuple[str, str]]) -> str:
    text = "\n".join(t for _, t in pages).encode()
    cut = text.rfind(b" ", 0, PAGE_BYTES)
    return text[:cut].decode()


# --- 1. speed ---------------------------------------------------------------------------------

_NP1_WORKER = r"""
import collections, json, sys, time
import numpy, simhash
text = open(sys.argv[1], encoding="utf-8").read()
features = json.load(open(sys.argv[2], encoding="utf-8"))
repeats = int(sys.argv[3])
def best(fn):
    b = float("inf")
    for _ in range(repeats):
        t = time.perf_counter(); fn(); b = min(b, time.perf_counter() - t)
    return b * 1000
out = {"numpy": numpy.__version__}
out["list"] = best(lambda: simhash.Simhash(features))
out["counter"] = best(lambda: simhash.Simhash(collections.Counter(features)))
out["text"] = best(lambda: simhash.Simhash(text))
print(json.dumps(out))
"""


def package_in_process(fn: Callable[[], object], repeats: int) -> str | float:
    try:
        fn()
    except Exception as error:  # the package on NumPy 2
        return f"{type(error).__name__}: {error}"
    return best_ms(fn, repeats)


def measure_speed(text: str, np1_python: str, repeats: int) -> tuple[dict[str, str | float], list[str]]:
    """Timings in ms (or why a contender could not run) and notes for one text."""
    import simhash

    features = shingles(text)
    counts = Counter(features)
    char_grams = Counter(simhash.Simhash(0)._tokenize(text))
    ours = text_fingerprint(text)
    notes = [
        f"{len(text.encode()):,} UTF-8 bytes, {len(text.split()):,} words, {len(features):,} word 3-gram "
        f"shingles ({len(counts):,} distinct, the most frequent {max(counts.values())} times); the "
        f"package's own features for the raw text: {sum(char_grams.values()):,} character 4-grams "
        f"({len(char_grams):,} distinct, the most frequent {max(char_grams.values())} times)",
        f"ours = `{ours:#018x}`, and the package's `Simhash(shingles, hashfunc=shingle_hash).value` "
        + ("equals it" if simhash.Simhash(features, hashfunc=shingle_hash).value == ours else "DIFFERS"),
    ]
    ours_ms = best_ms(lambda: text_fingerprint(text), repeats * 3)
    rows: dict[str, str | float] = {"ours: `text_fingerprint(text)`, shingling included": ours_ms}
    data = text.encode()
    rows["sha256 of the text (the exact-copy hash, for scale)"] = best_ms(lambda: hashlib.sha256(data), 20)
    np2 = f"package, NumPy {np.__version__}"
    rows[f"{np2}: `Simhash(shingles)`"] = package_in_process(lambda: simhash.Simhash(features), repeats)
    rows[f"{np2}: `Simhash(Counter(shingles))`"] = package_in_process(
        lambda: simhash.Simhash(counts), repeats
    )
    rows[f"{np2}: `Simhash(text)`, its char 4-grams"] = package_in_process(
        lambda: simhash.Simhash(text), repeats
    )
    if not Path(np1_python).exists():
        notes.append(
            f"no NumPy 1.x venv at `{np1_python}`, so the package's rows that NumPy 2 cannot run are missing "
            "(make it with `python -m venv /tmp/simhash-np1 && /tmp/simhash-np1/bin/pip install "
            "'numpy<2' simhash==2.1.2`)"
        )
        return rows, notes
    with tempfile.TemporaryDirectory() as tmp:
        text_path, features_path = Path(tmp, "text.txt"), Path(tmp, "features.json")
        text_path.write_text(text, encoding="utf-8")
        features_path.write_text(json.dumps(features), encoding="utf-8")
        done = subprocess.run(
            [np1_python, "-c", _NP1_WORKER, str(text_path), str(features_path), str(repeats)],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    if done.returncode != 0:
        notes.append(f"the NumPy 1.x venv `{np1_python}` failed: {done.stderr.strip()[-300:]}")
        return rows, notes
    np1 = json.loads(done.stdout)
    label = f"package, NumPy {np1['numpy']} venv"
    rows[f"{label}: `Simhash(shingles)`"] = np1["list"]
    rows[f"{label}: `Simhash(Counter(shingles))`"] = np1["counter"]
    rows[f"{label}: `Simhash(text)`, its char 4-grams"] = np1["text"]
    notes.append(f"the NumPy {np1['numpy']} rows ran in `{np1_python}` by subprocess")
    return rows, notes


def section_speed(texts: list[tuple[str, str, str]], np1_python: str, repeats: int) -> None:
    print("## 1. Fingerprint speed, one 100 KB page\n")
    results = [(label, *measure_speed(text, np1_python, repeats)) for label, _, text in texts]
    for (label, about, _), (_, _, notes) in zip(texts, results, strict=True):
        print(f"- Page {label}, {about}: " + "; ".join(notes) + ".")
    print(
        f"\nBest of {repeats * 3} runs for ours, {repeats} for the package, which is handed our shingles "
        "ready-made (a head start). Ratio: package time / ours.\n"
    )
    print(
        "| fingerprint of one page | "
        + " | ".join(f"page {label}: ms | ratio" for label, _, _ in results)
        + " |"
    )
    print("| --- |" + " ---: | ---: |" * len(results))
    for name in results[0][1]:
        cells = []
        for _, rows, _ in results:
            value, ours = rows.get(name, "-"), rows[next(iter(rows))]
            if isinstance(value, str):
                cells += [value, ""]
            else:
                assert isinstance(ours, float)
                cells += [f"{value:.2f}", f"{value / ours:.1f}x" if name.startswith("package") else ""]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()


# --- 2. quality -------------------------------------------------------------------------------


def _timestamp(rng: random.Random) -> str:
    return (
        f"Last updated: {rng.randint(2015, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} UTC"
    )


def near_copies(text: str, rng: random.Random, vocab: list[str]) -> dict[str, tuple[str, str]]:
    """(original, copy) for each kind of near copy of one page's text."""
    lines = text.split("\n")
    stamp_a, stamp_b = _timestamp(rng), _timestamp(rng)
    while stamp_b == stamp_a:
        stamp_b = _timestamp(rng)
    at = rng.randint(0, len(lines))
    line_words = [line.split(" ") for line in lines]
    positions = [(i, j) for i, ws in enumerate(line_words) for j in range(len(ws))]
    for i, j in rng.sample(positions, max(1, round(0.01 * len(positions)))):
        line_words[i][j] = rng.choice(vocab)
    return {
        "timestamp line changed": (
            "\n".join([*lines[:1], stamp_a, *lines[1:]]),
            "\n".join([*lines[:1], stamp_b, *lines[1:]]),
        ),
        "20-word ad block inserted": (text, "\n".join([*lines[:at], AD_BLOCK, *lines[at:]])),
        "1% of words replaced": (text, "\n".join(" ".join(ws) for ws in line_words)),
    }


def predicted_bits(a: str, b: str) -> float:
    """Simhash's expected distance 64 theta / pi, theta the angle of the shingle-count vectors."""
    ca, cb = Counter(shingles(a)), Counter(shingles(b))
    dot = sum(count * cb[s] for s, count in ca.items())
    norms = math.sqrt(sum(c * c for c in ca.values()) * sum(c * c for c in cb.values()))
    return 64 * math.acos(min(1.0, dot / norms)) / math.pi


def jaccard(a: str, b: str) -> float:
    sa, sb = set(shingles(a)), set(shingles(b))
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def section_quality(pages: list[tuple[str, str]], why_not: str | None, sample: int, load_s: float) -> None:
    from crawler.extract.html import normalize_whitespace

    print("## 2. Near-copy quality on real pages\n")
    if why_not is not None:
        print(f"Skipped: {why_not}.\n")
        return

    words = [len(t.split()) for _, t in pages]
    print(
        f"{len(pages):,} pages of Debian's `{DOCS_PACKAGE}` ({DOCS_DIR}), text extracted in "
        f"{load_s:.1f} s: {np.median(words):.0f} words median, "
        f"{np.percentile(words, 10):.0f} to {np.percentile(words, 90):.0f} between the 10th and 90th "
        "percentiles.\n"
    )

    # Near copies of a sample.
    rng = random.Random(SEED)
    vocab = sorted({w for _, t in pages for w in t.split()})
    eligible = [i for i, n in enumerate(words) if n >= 50]
    chosen = rng.sample(eligible, min(sample, len(eligible)))
    bands = [("50-299 words", 50, 300), ("300-1,499", 300, 1500), ("1,500+", 1500, 10**9)]
    results: dict[str, list[tuple[int, int]]] = {}
    predicted: dict[str, list[float]] = {}
    for i in chosen:
        for kind, (original, copy) in near_copies(pages[i][1], rng, vocab).items():
            distance = (text_fingerprint(original) ^ text_fingerprint(copy)).bit_count()
            results.setdefault(kind, []).append((words[i], distance))
            predicted.setdefault(kind, []).append(predicted_bits(original, copy))
    per_band = Counter(next(name for name, lo, hi in bands if lo <= words[i] < hi) for i in chosen)
    print(
        (
            f"Near copies of all {len(chosen):,} pages with 50+ words "
            if len(chosen) == len(eligible)
            else f"Near copies of {len(chosen):,} pages drawn from the {len(eligible):,} with 50+ words "
        )
        + f"({', '.join(f'{per_band[name]} of {name}' for name, _, _ in bands)}). "
        "Recall = share of copies within d bits of their page. Predicted: simhash's expected distance, "
        "64 theta / pi for the angle theta between the two texts' shingle-count vectors.\n"
    )
    header = " | ".join(f"<= {d}, {name}" for d in DISTANCES for name, _, _ in bands)
    print(f"| near copy | mean bits | predicted | <= 3 | <= 6 | {header} |")
    print("| --- | ---: | ---: | ---: | ---: |" + " ---: |" * (len(DISTANCES) * len(bands)))
    for kind, found in results.items():
        cells = [f"{np.mean([d for _, d in found]):.1f}", f"{np.mean(predicted[kind]):.1f}"]
        cells += [f"{np.mean([d <= k for _, d in found]):.0%}" for k in DISTANCES]
        for k in DISTANCES:
            for _, lo, hi in bands:
                band = [d for n, d in found if lo <= n < hi]
                cells.append(f"{np.mean([d <= k for d in band]):.0%}" if band else "-")
        print(f"| {kind} | " + " | ".join(cells) + " |")

    # Distinct pages found within d of each other.
    groups: dict[str, list[int]] = {}
    for i, (_, text) in enumerate(pages):
        groups.setdefault(hashlib.sha256(normalize_whitespace(text).encode()).hexdigest(), []).append(i)
    identical = [g for g in groups.values() if len(g) > 1]
    reps = [g[0] for g in groups.values()]
    fps = np.array([text_fingerprint(pages[i][1]) for i in reps], dtype=np.uint64)
    dist = np.bitwise_count(fps[:, None] ^ fps[None, :])
    upper = np.triu_indices(len(reps), 1)
    n_pairs = len(upper[0])
    close = [(int(a), int(b)) for a, b in zip(*upper, strict=True) if dist[a, b] <= max(DISTANCES)]
    same = (
        f"{len(identical)} groups of pages with identical texts, {sum(map(len, identical))} pages: "
        + ", ".join(" = ".join(pages[i][0] for i in g[:3]) for g in identical[:5])
        if identical
        else "no two pages have identical normalised texts"
    )
    print(
        f"\nDistinct pages: {len(reps):,} distinct texts ({same}); {n_pairs:,} pairs of them, "
        f"{dist[upper].mean():.1f} bits apart on average, {int(dist[upper].min())} at least.\n"
    )
    print("| pairs of distinct pages | within 3 | within 6 |")
    print("| --- | ---: | ---: |")
    near_identical = {
        (a, b) for a, b in close if jaccard(pages[reps[a]][1], pages[reps[b]][1]) >= NEAR_IDENTICAL_JACCARD
    }
    for label, pairs in (
        (f"near-identical (shingle Jaccard >= {NEAR_IDENTICAL_JACCARD})", near_identical),
        ("false positives (the others)", set(close) - near_identical),
    ):
        cells = [sum(dist[a, b] <= d for a, b in pairs) for d in DISTANCES]
        print(f"| {label} | " + " | ".join(str(c) for c in cells) + " |")
    fp_rates = []
    for d in DISTANCES:
        false = [(a, b) for a, b in close if dist[a, b] <= d and (a, b) not in near_identical]
        fp_rates.append(f"{len(false) / max(1, n_pairs - len(near_identical)):.2e}")
    print("| false-positive rate per pair | " + " | ".join(fp_rates) + " |")
    if close:
        print("\nPairs within 6 bits:\n")
        for a, b in sorted(close, key=lambda p: dist[p])[:10]:
            (na, ta), (nb, tb) = pages[reps[a]], pages[reps[b]]
            print(
                f"- {na} ({len(ta.split())} words) ~ {nb} ({len(tb.split())} words): "
                f"{int(dist[a, b])} bits, shingle Jaccard {jaccard(ta, tb):.2f}"
            )
    print()


# --- 3. index ---------------------------------------------------------------------------------


def index_worker(kind: str, n: int, queries: int) -> dict[str, Any]:
    """Fill one index with `n` random fingerprints in this process; rates and RSS growth."""
    rng = random.Random(SEED)
    fps = [rng.getrandbits(64) for _ in range(n)]
    keys = [f"https://docs.example.org/page/{i:09d}" for i in range(n)]
    misses = [rng.getrandbits(64) for _ in range(queries)]
    hits = []
    for _ in range(queries):
        fp = rng.choice(fps)
        for bit in rng.sample(range(64), rng.randint(1, 3)):
            fp ^= 1 << bit
        hits.append(fp)
    before = rss_bytes()
    if kind == "ours":
        index = NearDupIndex()
        start = time.perf_counter()
        for fp, key in zip(fps, keys, strict=True):
            index.add(fp, key)
        add_s = time.perf_counter() - start
        after = rss_bytes()

        def find(fp: int) -> bool:
            return index.find(fp) is not None
    elif kind == "redis":
        return redis_index_worker(fps, keys, misses, hits)
    else:
        import simhash

        start = time.perf_counter()
        pindex = simhash.SimhashIndex([], k=3)
        for fp, key in zip(fps, keys, strict=True):
            pindex.add(key, simhash.Simhash(fp))
        add_s = time.perf_counter() - start
        after = rss_bytes()

        def find(fp: int) -> bool:
            return bool(pindex.get_near_dups(simhash.Simhash(fp)))

    rates = {}
    for name, batch in (("miss", misses), ("hit", hits)):
        start = time.perf_counter()
        found = sum(map(find, batch))
        rates[name] = len(batch) / (time.perf_counter() - start)
        rates[f"{name}_found"] = found
    per_key = sum(map(sys.getsizeof, keys[:1000])) / 1000 + 8  # the str and the list slot
    return {
        "n": n,
        "add_per_s": n / add_s,
        "rss_per_entry": (after - before) / n,
        "key_bytes": per_key,
        **rates,
    }


def redis_index_worker(fps: list[int], keys: list[str], misses: list[int], hits: list[int]) -> dict[str, Any]:
    """``RedisContentIndex`` on a redis-server of its own: the pages are added by the
    check-and-add script in pipelined batches of 1,000; lookups are single calls, one
    round trip each as a worker makes them, and pipelined (the server's own rate).
    Memory is Redis's ``used_memory`` growth per page."""
    import redis
    from redis_server import RedisServer

    from crawler.dedup.index import RedisContentIndex

    def pages(batch: list[int], first: int, tag: str = "") -> list[tuple[bytes, int, str, str, bool]]:
        """Pages of `batch`'s fingerprints, the i-th with text and URL number `first` + i."""
        made = []
        for i, fp in enumerate(batch, first):
            url = keys[i] if not tag else f"https://query.example.org/{tag}/{i:09d}"
            made.append((hashlib.sha256(url.encode()).digest(), fp, url, "docs.example.org", True))
        return made

    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp)).start()
        try:
            client = redis.Redis.from_url(server.url)
            index = RedisContentIndex(client, "bench")
            before = client.info("memory")["used_memory"]
            start = time.perf_counter()
            for first in range(0, len(fps), 1000):
                index.check_and_add_many(pages(fps[first:first + 1000], first))
            add_s = time.perf_counter() - start
            per_entry = (client.info("memory")["used_memory"] - before) / len(fps)
            rates: dict[str, Any] = {}
            for name, batch in (("miss", misses), ("hit", hits)):
                tenth = len(batch) // 10
                start = time.perf_counter()
                single = pages(batch[:tenth], 0, name)
                found = sum(index.check_and_add(*page) is not None for page in single)
                rates[name] = tenth / (time.perf_counter() - start)
                rest = batch[tenth:]
                start = time.perf_counter()
                for first in range(0, len(rest), 1000):
                    many = pages(rest[first:first + 1000], tenth + first, name)
                    found += sum(match is not None for match in index.check_and_add_many(many))
                rates[f"{name}_pipelined"] = len(rest) / (time.perf_counter() - start)
                rates[f"{name}_found"] = found
        finally:
            server.stop()
    return {"n": len(fps), "add_per_s": len(fps) / add_s, "rss_per_entry": per_entry, "key_bytes": 0, **rates}


def run_worker(kind: str, n: int, queries: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--index-worker", kind, str(n), str(queries)],
        capture_output=True, text=True, timeout=900, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)


def section_index(n: int, n_package: int, queries: int) -> None:
    print("## 3. The near-dup index at scale\n")
    ours = run_worker("ours", n, queries)
    shared = run_worker("redis", n, queries)
    package = run_worker("package", n_package, queries // 10)
    print(
        f"Random 64-bit fingerprints under 35-character URL keys; {queries:,} random queries (misses) and "
        f"{queries:,} queries 1-3 bits from a stored fingerprint (hits), a tenth of that for the package; "
        "each index in its own process. The Redis index (a redis-server of its own on loopback) is filled "
        "by its check-and-add script in pipelined batches of 1,000; its lookups are that script too (a miss "
        "adds the page): a tenth as single calls, one round trip each as a worker makes them, the rest "
        "pipelined (the server's rate).\n"
    )
    print("| index | entries | adds/s | miss lookups/s | hit lookups/s | hits found | memory per entry |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, r, q in (
        ("`NearDupIndex()` (k=3), in process", ours, queries),
        ("`RedisContentIndex` (k=3), single calls", shared, queries),
        ("`simhash.SimhashIndex(k=3)`", package, queries // 10),
    ):
        print(
            f"| {label} | {r['n']:,} | {r['add_per_s']:,.0f} | {r['miss']:,.0f} | {r['hit']:,.0f} | "
            f"{r['hit_found']:,}/{q:,} | {r['rss_per_entry']:.0f} B |"
        )
    print(
        f"| `RedisContentIndex`, pipelined | | | {shared['miss_pipelined']:,.0f} | "
        f"{shared['hit_pipelined']:,.0f} | | |"
    )
    print(
        f"\nMemory per entry is RSS growth while adding (in process, with the key strings already made; each "
        f"key is ~{ours['key_bytes']:.0f} B more: str object and list slot), or Redis's `used_memory` growth "
        f"(URL and SHA-256 prefix included). At {ours['n']:,} entries a lookup scans "
        f"~{4 * ours['n'] / 65536:.0f} candidates (4 n / 65,536) with C-level iteration, in the worker for "
        f"Redis too (its script scans only what was appended since the worker read the buckets); "
        f"random queries found {ours['miss_found']} false hits in process, "
        f"{shared['miss_found']} in Redis.\n"
    )


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
