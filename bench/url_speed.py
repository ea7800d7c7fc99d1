"""URL normalisation speed: ours against w3lib's ``canonicalize_url``, same run, same URLs.

Run from the repo root: ``python bench/url_speed.py``. Builds a deterministic
(seeded) mix of ~20,000 realistic links, then times several repetitions of each
contender and reports the best, in URLs per second, plus the ratio to w3lib.

The mix: absolute links with and without queries, some with tracking
parameters, fragments, default ports, upper-case hosts, percent-escapes and
non-ASCII paths or hosts, and about 12% relative links with their page's URL as
the base. w3lib has no base argument, so it is given those links already
resolved (``urljoin`` outside the timed loop): a head start, not a handicap.
Our normaliser's host cache is cleared before every repetition, so no run
profits from the one before it.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urljoin

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from w3lib.url import canonicalize_url

from crawler.urls import authority
from crawler.urls.keys import fingerprint
from crawler.urls.normalize import normalize_url

SEED = 20240601
N_URLS = 20_000
REPEATS = 5

_WORD_TEXT = (
    "news sport world article blog post category tag page archive product item shop cart search user "
    "profile docs guide help about contact 2023 2024 01 02 12 index main en de fr static img video "
    "story review list top best new old"
)
WORDS = _WORD_TEXT.split()
TLDS = ["com", "org", "net", "de", "co.uk", "io", "fr", "com.au"]
NON_ASCII = ["café", "über", "straße", "niño", "中文", "ñandú", "résumé"]
TRACKING = ["utm_source", "utm_medium", "utm_campaign", "fbclid", "gclid", "sessionid"]
PARAMS = ["id", "page", "q", "sort", "lang", "ref", "p", "offset", "limit", "cat"]


def _host(rng: random.Random) -> str:
    name = rng.choice(WORDS) + rng.choice(WORDS) + str(rng.randint(0, 99))
    sub = rng.choice(["www.", "www.", "", "blog.", "shop.", "m."])
    host = f"{sub}{name}.{rng.choice(TLDS)}"
    if rng.random() < 0.03:
        host = host.replace(name, name[:3] + "ü" + name[3:])  # an IDN host
    return host


def _path(rng: random.Random) -> str:
    segments = [rng.choice(WORDS) for _ in range(rng.randint(0, 4))]
    if segments and rng.random() < 0.04:
        segments[-1] = rng.choice(NON_ASCII)
    if segments and rng.random() < 0.03:
        segments[0] = "%7e" + segments[0]
    path = "/" + "/".join(segments)
    roll = rng.random()
    if roll < 0.35:
        path += ("/" if segments else "") + f"{rng.choice(WORDS)}-{rng.randint(1, 99999)}.html"
    elif roll < 0.55 and segments:
        path += "/"
    return path


def _query(rng: random.Random) -> str:
    params = [
        f"{rng.choice(PARAMS)}={rng.choice(WORDS)}{rng.randint(0, 999)}" for _ in range(rng.randint(1, 4))
    ]
    if rng.random() < 0.35:
        params.insert(rng.randrange(len(params) + 1), f"{rng.choice(TRACKING)}=x{rng.randint(0, 99)}")
    if rng.random() < 0.05:
        params.append("q=two+words%20here")
    return "?" + "&".join(params)


def build_mix(seed: int = SEED, n: int = N_URLS) -> list[tuple[str, str | None]]:
    """(link, base or None) pairs, deterministic for a seed."""
    rng = random.Random(seed)
    hosts = [_host(rng) for _ in range(400)]
    mix: list[tuple[str, str | None]] = []
    for _ in range(n):
        host = rng.choice(hosts)
        scheme = "https" if rng.random() < 0.7 else "http"
        query = _query(rng) if rng.random() < 0.45 else ""
        fragment = "#" + rng.choice(WORDS) if rng.random() < 0.05 else ""
        if rng.random() < 0.12:
            base = f"{scheme}://{host}{_path(rng)}"
            form = rng.random()
            if form < 0.3:
                link = "../" + rng.choice(WORDS) + "/" + rng.choice(WORDS) + ".html"
            elif form < 0.6:
                link = _path(rng)
            elif form < 0.8:
                link = rng.choice(WORDS) + ".html"
            elif form < 0.9:
                link = "?page=" + str(rng.randint(1, 50))
            else:
                link = "//" + rng.choice(hosts) + _path(rng)
            mix.append((link + (query if form < 0.8 else "") + fragment, base))
            continue
        if rng.random() < 0.03:
            scheme = scheme.upper()
        if rng.random() < 0.05:
            host = host.upper()
        port = ""
        if rng.random() < 0.03:
            port = ":80" if scheme.lower() == "http" else ":443"
        mix.append((f"{scheme}://{host}{port}{_path(rng)}{query}{fragment}", None))
    return mix


def best_rate(func: Callable[[], object], count: int, repeats: int = REPEATS) -> float:
    """Best of ``repeats`` runs of ``func`` (which handles ``count`` URLs), in URLs/s."""
    best = float("inf")
    for _ in range(repeats):
        authority._AUTHORITY_CACHE.clear()
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return count / best


def main() -> None:
    mix = build_mix()
    absolute = [urljoin(base, link) if base else link for link, base in mix]
    count = len(mix)
    relative = sum(1 for _, base in mix if base)
    rejected = sum(1 for link, base in mix if normalize_url(link, base) is None)

    def run_w3lib() -> None:
        for url in absolute:
            canonicalize_url(url)

    def run_ours() -> None:
        for link, base in mix:
            normalize_url(link, base)

    def run_ours_fp() -> None:
        for link, base in mix:
            normal = normalize_url(link, base)
            if normal is not None:
                fingerprint(normal)

    w3lib_rate = best_rate(run_w3lib, count)
    ours_rate = best_rate(run_ours, count)
    ours_fp_rate = best_rate(run_ours_fp, count)

    print(f"{count} URLs ({relative} relative with a base, {rejected} rejected), best of {REPEATS}")
    print(f"w3lib canonicalize_url          {w3lib_rate:>10,.0f} URLs/s")
    print(f"normalize_url                   {ours_rate:>10,.0f} URLs/s  x{ours_rate / w3lib_rate:.2f}")
    print(f"normalize_url + fingerprint     {ours_fp_rate:>10,.0f} URLs/s  x{ours_fp_rate / w3lib_rate:.2f}")


if __name__ == "__main__":
    main()
