"""Memory per queued URL: our embedded frontier (SQLite on disk) vs in-memory queues.

Run from the repo root: ``python bench/frontier_memory.py`` (1,000,000 URLs, about two
minutes; ``--urls N`` for another size, ``--help`` for the rest).

What is compared. Each store runs in a fresh child process of this script (so one
cannot inflate the other's RSS), fed the same URLs: ``N`` URLs over ``--hosts`` hosts
(URL ``i`` on host ``i mod hosts``, so every host is known after the first batch and
each gets N / hosts URLs), each a real ``scrapy.Request`` with ``meta={"depth": d}``
(d = 1..3) turned into JSON by ``crawler.scheduling.codec.request_to_json``, exactly
what ``FrontierScheduler`` stores, with the 64-bit ``crawler.urls.url_fingerprint``:

* ``frontier``: ``crawler.frontier.backends.embedded.frontier.EmbeddedFrontier`` on a file in a temp
  dir (default page cache ``FRONTIER_CACHE_KIB`` = 64 MiB), ``add`` of
  ``Entry(fp, host, level, request_json)`` in batches of ``--batch`` with a
  ``commit`` after each. Then a claim loop of ``--claims`` ``next`` + ``fetched`` +
  ``ack`` triples (politeness gap 0, so a host is always due), committed every batch.
* ``deque of JSON``: the same JSON strings appended to a ``collections.deque`` (the
  floor of any in-memory queue); its claim loop is ``popleft``.
* ``deque of Requests``: the ``scrapy.Request`` objects themselves in a deque, which
  is what Scrapy's memory queues (``SCHEDULER_MEMORY_QUEUE``) hold.

How it is measured. RSS is ``VmRSS`` of ``/proc/self/status`` in the child: "before"
is taken after the imports, opening the store and building one throw-away batch (so
the allocator's high-water mark of building a batch is not counted as growth),
"after" once all N URLs are queued (and again after the claim loop). RSS per URL is
(after - before) / N. The frontier's SQLite size per URL is the database file plus
its WAL after the last commit, and again after a WAL checkpoint (TRUNCATE). Add
throughput is entries per second of ``add`` + ``commit`` (deque: ``extend``) alone;
building the Requests and their JSON is timed separately and not counted. The
frontier's RSS is also sampled during the adds, to tell the per-host part (after
the first batch), the bounded SQLite page cache and the part that grows with N.
Output is Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import fmt_table, machine

REPO = Path(__file__).resolve().parent.parent
ROLES = ("frontier", "deque of JSON", "deque of Requests")
MIB = 1024 * 1024


def rss_bytes() -> int:
    """VmRSS of this process, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def url_of(i: int, hosts: int) -> tuple[str, str, int]:
    """(URL, host, depth) of URL number ``i``: ~55 characters, like a real page URL."""
    host = f"www.site{i % hosts:05d}.example.com"
    return f"http://{host}/section-{(i // hosts) % 97}/page-{i}.html", host, 1 + i % 3


def make_requests(start: int, stop: int, hosts: int) -> list[Any]:
    from scrapy import Request

    return [Request(url_of(i, hosts)[0], meta={"depth": url_of(i, hosts)[2]}) for i in range(start, stop)]


def make_entries(start: int, stop: int, hosts: int) -> list[Any]:
    from scrapy import Request

    from crawler.frontier.api import Entry
    from crawler.frontier.policy import PriorityLevels
    from crawler.scheduling.codec import request_to_json
    from crawler.urls.keys import url_fingerprint

    levels = PriorityLevels()
    out = []
    for i in range(start, stop):
        url, host, depth = url_of(i, hosts)
        data, _ = request_to_json(Request(url, meta={"depth": depth}), None)
        out.append(Entry(url_fingerprint(url), host, levels.level(depth, 0), data))
    return out


# --------------------------------------------------------------------------- children


def child_frontier(urls: int, hosts: int, batch: int, claims: int) -> dict[str, Any]:
    from crawler.frontier.api import Claim
    from crawler.frontier.backends.embedded.frontier import EmbeddedFrontier
    from crawler.frontier.policy import PolitenessPolicy

    tmp = tempfile.TemporaryDirectory(prefix="frontier-memory-")
    path = Path(tmp.name) / "frontier.sqlite"
    frontier = EmbeddedFrontier(path, policy=PolitenessPolicy(min_delay=0.0, delay_factor=0.0))
    warm = make_entries(urls, urls + batch, hosts)  # never added: allocator warm-up only
    json_bytes = sum(len(e.request) for e in warm)
    del warm
    before = rss_bytes()
    build = add = 0.0
    samples: list[tuple[int, int]] = []
    marks = sorted({min(urls, batch), urls // 10, urls // 4, urls // 2, urls})
    for start in range(0, urls, batch):
        t0 = time.perf_counter()
        entries = make_entries(start, min(urls, start + batch), hosts)
        t1 = time.perf_counter()
        frontier.add(entries)
        frontier.commit()
        add += time.perf_counter() - t1
        build += t1 - t0
        del entries
        done = min(urls, start + batch)
        if marks and done >= marks[0]:
            samples.append((done, rss_bytes()))
            marks = [m for m in marks if m > done]
    after = rss_bytes()
    db = path.stat().st_size
    wal_path = Path(f"{path}-wal")
    wal = wal_path.stat().st_size if wal_path.exists() else 0

    misses = 0
    claimed = 0
    t0 = time.perf_counter()
    for k in range(claims):
        now = time.time()
        claim = frontier.next(now)
        if not isinstance(claim, Claim):
            misses += 1
            continue
        frontier.fetched(claim.fp, claim.token, now, 0.0, 200)
        frontier.ack(claim.fp, claim.token)
        claimed += 1
        if (k + 1) % batch == 0:
            frontier.commit()
    frontier.commit()
    claim_s = time.perf_counter() - t0
    after_claims = rss_bytes()
    queued_left = frontier.queued
    frontier.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db_checkpointed = path.stat().st_size
    frontier.close()
    tmp.cleanup()
    return {
        "urls": urls, "json_bytes": json_bytes / batch, "before": before, "after": after,
        "after_claims": after_claims, "build_s": build, "add_s": add, "claims": claimed,
        "claim_misses": misses, "claim_s": claim_s, "db": db, "wal": wal,
        "db_checkpointed": db_checkpointed, "samples": samples, "queued_left": queued_left,
    }


def child_deque(urls: int, hosts: int, batch: int, claims: int, requests: bool) -> dict[str, Any]:
    def build_batch(start: int, stop: int) -> list[Any]:
        if requests:
            return make_requests(start, stop, hosts)
        return [e.request for e in make_entries(start, stop, hosts)]

    warm = make_entries(urls, urls + batch, hosts)
    json_bytes = sum(len(e.request) for e in warm)
    del warm
    warm = build_batch(urls, urls + batch)
    del warm
    queue: deque[Any] = deque()
    before = rss_bytes()
    build = add = 0.0
    for start in range(0, urls, batch):
        t0 = time.perf_counter()
        items = build_batch(start, min(urls, start + batch))
        t1 = time.perf_counter()
        queue.extend(items)
        add += time.perf_counter() - t1
        build += t1 - t0
        del items
    after = rss_bytes()
    n = min(claims, len(queue))
    t0 = time.perf_counter()
    for _ in range(n):
        queue.popleft()
    claim_s = time.perf_counter() - t0
    return {
        "urls": urls, "json_bytes": json_bytes / batch, "before": before, "after": after,
        "after_claims": rss_bytes(), "build_s": build, "add_s": add, "claims": n, "claim_misses": 0,
        "claim_s": claim_s, "samples": [],
    }


def run_child(role: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [
        sys.executable, str(Path(__file__).resolve()), "--role", role, "--urls", str(args.urls),
        "--hosts", str(args.hosts), "--batch", str(args.batch), "--claims", str(args.claims),
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{role} child failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=1_000_000, help="URLs queued (default 1,000,000)")
    parser.add_argument("--hosts", type=int, default=10_000, help="hosts they spread over (default 10,000)")
    parser.add_argument("--batch", type=int, default=10_000, help="entries per add + commit (default 10,000)")
    parser.add_argument("--claims", type=int, default=50_000, help="claim loop length (default 50,000)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per child process")
    parser.add_argument("--role", choices=ROLES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.role:
        if args.role == "frontier":
            result = child_frontier(args.urls, args.hosts, args.batch, args.claims)
        else:
            result = child_deque(args.urls, args.hosts, args.batch, args.claims, "Requests" in args.role)
        print(json.dumps(result))
        return 0

    t_start = time.perf_counter()
    results = {role: run_child(role, args) for role in ROLES}
    wall = time.perf_counter() - t_start


    n = args.urls
    print("# Memory per queued URL: embedded frontier vs in-memory queues\n")
    print(f"- {machine()}")
    print(f"- {n:,} URLs over {args.hosts:,} hosts ({n // max(1, args.hosts)} per host), "
          f"request JSON {results['frontier']['json_bytes']:.0f} bytes on average "
          f"(`request_to_json` of a real `scrapy.Request`, URL ~55 chars); adds in batches of "
          f"{args.batch:,}, commit after each; claim loop of {args.claims:,}")
    print("- RSS: VmRSS of a fresh child process per store; growth = after all adds - before the "
          "first add\n")
    rows = []
    for role in ROLES:
        r = results[role]
        growth = r["after"] - r["before"]
        file_per_url = "-"
        if "db" in r:
            file_per_url = f"{(r['db'] + r['wal']) / n:.0f} ({r['db_checkpointed'] / n:.0f})"
        rows.append([
            role, f"{n:,}", f"{r['before'] / MIB:.1f}", f"{r['after'] / MIB:.1f}", f"{growth / n:.1f}",
            file_per_url, f"{n / r['add_s']:,.0f}" if r["add_s"] else "-",
            f"{r['claims'] / r['claim_s']:,.0f}" if r["claim_s"] else "-",
            f"{r['after_claims'] / MIB:.1f}",
        ])
    print(fmt_table(
        ["store", "URLs", "RSS before MiB", "RSS after MiB", "RSS B/URL", "file B/URL (checkpointed)",
         "add entries/s", "claims/s", "RSS after claims MiB"],
        rows,
    ))
    f = results["frontier"]
    print()
    print(f"- frontier file after the adds: database {f['db'] / MIB:.1f} MiB + WAL {f['wal'] / MIB:.1f} MiB; "
          f"after the claim loop and a WAL checkpoint: {f['db_checkpointed'] / MIB:.1f} MiB")
    print(f"- frontier claim loop: {f['claims']:,} next+fetched+ack triples in {f['claim_s']:.2f} s "
          f"({f['claim_misses']} calls without a claim), {f['queued_left']:,} URLs still queued; "
          "deque claims are `popleft`")
    print("- frontier RSS during the adds (growth over 'before'): " + ", ".join(
        f"{done:,} URLs: {(rss - f['before']) / MIB:.1f} MiB" for done, rss in f["samples"]))
    quarter = [(done, rss) for done, rss in f["samples"] if done >= n // 4]
    if len(quarter) >= 2 and quarter[-1][0] > quarter[0][0]:
        (d0, r0), (d1, r1) = quarter[0], quarter[-1]
        print(f"- frontier marginal RSS from {d0:,} to {d1:,} URLs: {(r1 - r0) / (d1 - d0):.1f} B/URL "
              "(the per-host records come with the first batch; SQLite's page cache grows with the "
              "database until it holds FRONTIER_CACHE_KIB = 64 MiB, then stays)")
    print("- time building Requests + JSON + fingerprints (not in add entries/s): " + ", ".join(
        f"{role} {results[role]['build_s']:.1f} s" for role in ROLES))

    def ratio(role: str) -> float:
        return (results[role]["after"] - results[role]["before"]) / max(1, f["after"] - f["before"])

    print(f"- RSS growth relative to the frontier: deque of JSON {ratio('deque of JSON'):.1f}x, "
          f"deque of Requests {ratio('deque of Requests'):.1f}x")
    print(f"- bench wall time: {wall:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
