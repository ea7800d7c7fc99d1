"""Part 1 of the dedup bench: the fingerprint of one 100 KB page, ours against the simhash package."""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from crawler.dedup.simhash import shingle_hash, shingles, text_fingerprint


def best_ms(fn: Callable[[], object], repeats: int) -> float:
    """Best wall time of `repeats` calls, in milliseconds."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000


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
