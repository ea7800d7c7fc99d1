"""The dedup bench's pages: PostgreSQL's HTML documentation as text, installed when it can be,
and the seeded synthetic text that stands in when it cannot."""

from __future__ import annotations

import glob
import os
import random
import shutil
import subprocess
from pathlib import Path

DOCS_PACKAGE = "postgresql-doc-15"
DOCS_DIR = Path("/usr/share/doc/postgresql-doc-15/html")
PAGE_BYTES = 100_000
SEED = 20240601


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
