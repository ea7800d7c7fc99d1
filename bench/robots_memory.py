"""Memory per host of the robots.txt cache: parsed rules only, in the bounded LRU.

Run from the repo root: ``python bench/robots_memory.py`` (10,000 hosts, a few
seconds; ``--hosts N`` for another size, ``--help`` for the rest).

What is measured. ``RobotsMiddleware`` keeps one ``RobotsEntry`` per host in a
``RobotsLru`` (``ROBOTSTXT_CACHE_SIZE``): the Protego rules parsed for our product
token, not the robots.txt body. Each host here gets its own robots.txt of the usual
shape (a ``*`` group and two named groups, ``--rules`` Disallow/Allow lines each,
paths made distinct per host so nothing is shared between hosts, a Sitemap line),
parsed as a crawl parses it; the LRU is sized to hold them all. The figure is the
growth of Python's traced memory (``tracemalloc``) from an empty LRU to a full one,
divided by the number of hosts. The bodies' size is printed beside it: that is what
the cache used to keep on top of the rules.
"""

from __future__ import annotations

import argparse
import gc
import tracemalloc

from crawler.robots.cache import RobotsEntry, RobotsLru
from crawler.robots.rules import RobotsRules


def robots_txt(host: int, rules: int) -> bytes:
    lines = []
    for agent in ("*", "Googlebot", "politecrawler"):
        lines.append(f"User-agent: {agent}")
        lines += [f"Disallow: /h{host}/private-{i}/" for i in range(rules - 1)]
        lines.append(f"Allow: /h{host}/public/")
        lines.append("")
    lines.append(f"Sitemap: https://host{host}.example/sitemap.xml")
    return "\n".join(lines).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--rules", type=int, default=8, help="rule lines per group")
    args = parser.parse_args()
    bodies = [robots_txt(h, args.rules) for h in range(args.hosts)]
    cache = RobotsLru(args.hosts)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for h, body in enumerate(bodies):
        cache.put(
            f"https://host{h}.example", RobotsEntry(RobotsRules.parse(body, "politecrawler"), "2xx", 0.0)
        )
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(cache) == args.hosts
    per_host = (after - before) / args.hosts
    body_bytes = sum(map(len, bodies)) / args.hosts
    print(
        "| hosts | rule lines per file | rules cached, bytes/host | robots.txt body, bytes/host (not kept) |"
    )
    print("|---|---|---|---|")
    print(f"| {args.hosts:,} | {3 * args.rules} | {per_host:,.0f} | {body_bytes:,.0f} |")


if __name__ == "__main__":
    main()
