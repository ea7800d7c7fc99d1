"""Part 2 of the dedup bench: how near copies of real pages, and distinct pages, come out in bits."""

from __future__ import annotations

import hashlib
import math
import random
from collections import Counter

import numpy as np
from dedup_pages import DOCS_DIR, DOCS_PACKAGE, SEED

from crawler.dedup.simhash import shingles, text_fingerprint

AD_BLOCK = (
    "sponsored offer get fifty percent off premium cloud hosting today with code "
    "save fifty at checkout limited time only click"
)
DISTANCES = (3, 6)
NEAR_IDENTICAL_JACCARD = 0.5


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
