"""``bench/soak.py``'s figures, each against its target, and its plots."""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RECOVERY = 60.0  # seconds after a fault's end that do not count as steady state


@dataclass
class Outcome:
    web: Any  # SoakWeb
    samples: list  # soak_watch.Sample
    faults: list  # soak.Fault
    exits: dict[str, tuple[float, int]]
    killed: set[str]  # killed by the schedule (restarted or not): their RSS is no long-lived series
    left: set[str]  # killed for good
    names: list[str]
    dead_letters: list[dict]
    stored: set  # URLs in the store
    family_bytes: Counter | None  # Redis bytes per key family at the end
    length: float
    gap: float
    embedded: bool

    @property
    def warm(self) -> float:
        """Seconds before steady state: 5 minutes, or a sixth of a shorter soak."""
        return min(300.0, self.length / 6)

    def quiet(self, start: float, end: float) -> bool:
        """[start, end) is in steady state: past the warm-up, away from every fault."""
        return start >= self.warm and not any(
            start < f.end + RECOVERY and end > f.at for f in self.faults if not _skipped(f))


def _skipped(fault: Any) -> bool:
    return bool(fault.skipped) and not fault.skipped.startswith("worker")


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (x, y) points; 0 with fewer than 2."""
    if len(points) < 2:
        return 0.0
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    var = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / var if var else 0.0


def bins(times: list[float], width: float, length: float) -> list[int]:
    counts = Counter(int(t // width) for t in times if 0 <= t < length)
    return [counts[b] for b in range(int(length // width))]


def politeness(fetches: list, gap: float) -> tuple[int, int, float]:
    """(overlapping pairs, gaps shorter than ``gap``, the shortest gap) over every host."""
    by_host = defaultdict(list)
    for fetch in fetches:
        by_host[fetch.host].append(fetch)
    overlaps = short = 0
    shortest = math.inf
    for records in by_host.values():
        records.sort(key=lambda f: f.start)
        for a, b in itertools.pairwise(records):
            between = b.start - a.end
            shortest = min(shortest, between)
            overlaps += between < 0
            short += 0 <= between < gap - 0.01
    return overlaps, short, shortest


def report(o: Outcome) -> tuple[list[str], bool]:
    began = o.web.started
    fetches = o.web.snapshot()
    times = [f.start - began for f in fetches]
    rows: list[tuple[str, str, str, bool]] = []

    def row(name: str, value: str, target: str, met: bool) -> None:
        rows.append((name, value, target, met))

    overlaps, short, shortest = politeness(fetches, o.gap)
    row("overlapping fetches to a host", f"{overlaps}", "0", overlaps == 0)
    row(f"gaps under the policy ({o.gap:g} s)", f"{short} (shortest {shortest:.3f} s)", "0", short == 0)

    expected = set(o.web.page_urls()) | {o.web.url(h) for h in o.web.hosts}
    stored = o.stored & expected
    row("reachable pages stored", f"{len(stored)} of {len(expected)}", "all", stored == expected)
    hostile = [letter for letter in o.dead_letters if ".test:" in letter.get("url", "")]
    row("dead letters", f"{len(o.dead_letters)} ({len(hostile)} of hostile hosts)",
        "only hostile hosts' URLs", len(hostile) == len(o.dead_letters))

    changing = [o.web.url(h, f"/p/{j}") for h in o.web.hosts for j in range(o.web.pages)
                if o.web.changing(f"/p/{j}")]
    fetched_versions: dict[str, set[int]] = defaultdict(set)
    for f in fetches:
        if f.status == 200:
            fetched_versions[o.web.url(f.host, f.path)].add(o.web.version(f.path, f.start))
    refetched = sum(1 for u in changing if len(fetched_versions[u]) > 1)
    row("changed pages fetched again after a change", f"{refetched} of {len(changing)}", "all",
        refetched == len(changing))
    seen: set[str] = set()
    unchanged_refetches = not_modified = 0
    for f in sorted(fetches, key=lambda f: f.start):
        url = o.web.url(f.host, f.path)
        if url in seen and not o.web.changing(f.path) and f.path != "/":
            unchanged_refetches += 1
            not_modified += f.status == 304
        seen.add(url)
    share = not_modified / unchanged_refetches if unchanged_refetches else math.nan
    row("unchanged refetches answered 304", f"{not_modified} of {unchanged_refetches} ({share:.1%})",
        "all", not_modified == unchanged_refetches)

    steady = [s for s in o.samples if s.at >= o.warm]
    if o.embedded:
        points = [(s.at, s.state_mb) for s in steady if s.state_mb is not None]
        what = "embedded databases"
        wal = [s.wal_mb for s in steady if getattr(s, "wal_mb", None) is not None]
        if wal:
            row("their write-ahead logs", f"at most {max(wal):.2f} MB", "bounded (info)", True)
    else:
        points = [(s.at, s.redis_memory) for s in steady if s.redis_memory is not None]
        what = "Redis used_memory"
    if points:
        mean = sum(y for _, y in points) / len(points)
        growth = slope(points) * 600 / mean * 100
        row(f"{what} growth after {o.warm / 60:.1f} min", f"{growth:+.2f}% per 10 min "
            f"({points[0][1]:.2f} -> {points[-1][1]:.2f} MB)", "< 1% per 10 min", growth < 1.0)
    for name in o.names:
        if name in o.killed:
            continue
        series = [(s.at, s.workers[name]) for s in steady if name in s.workers]
        if len(series) < 2:
            continue
        rss = slope([(t, w[0]) for t, w in series]) * 600
        row(f"worker {name} RSS growth", f"{rss:+.2f} MB per 10 min ({series[0][1][0]:.0f} -> "
            f"{series[-1][1][0]:.0f} MB)", "< 2 MB per 10 min", rss < 2.0)
        # Away from the faults: a paused crawl lets its idle connections close and opens
        # them again after, while a leak a fault caused stays and shows after it.
        quiet = [w for t, w in series if o.quiet(t, t)]
        if quiet:
            threads, fds = [w[1] for w in quiet], [w[2] for w in quiet]
            row(f"worker {name} threads, descriptors (steady)",
                f"{min(threads)}-{max(threads)}, {min(fds)}-{max(fds)}", "flat",
                max(threads) - min(threads) <= 2 and max(fds) - min(fds) <= 10)

    minutes = [(m, c) for m, c in enumerate(bins(times, 60, o.length)) if o.quiet(m * 60, m * 60 + 60)]
    if len(minutes) >= 2:
        busiest, quietest = max(c for _, c in minutes), min(c for _, c in minutes)
        ratio = busiest / quietest if quietest else math.inf
        row("busiest / quietest steady minute", f"{ratio:.2f} ({busiest} / {quietest} fetches, "
            f"{len(minutes)} minutes)", "<= 1.5", ratio <= 1.5)
    tens = bins(times, 10, o.length + 120)
    steady_tens = [c for b, c in enumerate(tens[:int(o.length // 10)]) if o.quiet(b * 10, b * 10 + 10)]
    if steady_tens:
        row("steady fetches per 10 s", f"{min(steady_tens)} to {max(steady_tens)}", "(info)", True)
    for fault in o.faults:
        if _skipped(fault):
            row(f"fault {fault.name} at {fault.at:.0f} s", "skipped", fault.skipped, True)
            continue
        if fault.end > o.length - 10:
            row(f"fault {fault.name} at {fault.at:.0f} s", "ends with the soak", "(not judged)", True)
            continue
        before = tens[max(0, int(fault.at // 10) - 6):int(fault.at // 10)]
        level = sum(before) / len(before) if before else 0
        after = range(math.ceil(fault.end / 10), len(tens))
        back = next((b * 10 - fault.end for b in after if tens[b] >= level / 2), math.inf)
        row(f"{fault.name} at {fault.at:.0f} s ({fault.skipped or 'all'}): rate back to half",
            f"{max(0.0, back):.0f} s (level {level:.0f} / 10 s)", "<= 60 s", back <= 60)
    for name in o.names:
        if name in o.left:
            continue
        if name in o.exits:
            after_end, code = o.exits[name]
            row(f"worker {name} exits by itself", f"{after_end:+.0f} s from the end, code {code}",
                "within 60 s, code 0", -5 <= after_end <= 60 and code == 0)
        else:
            row(f"worker {name} exits by itself", "did not exit within 120 s", "within 60 s", False)
    for name in o.names:
        counts = [(s.at, s.log_lines.get(name, 0)) for s in o.samples]
        per_minute = [b - a for (t, a), (_, b) in zip(counts, counts[12:], strict=False)
                      if o.quiet(t, t + 60) and b >= a]
        if per_minute and name not in o.killed:
            row(f"worker {name} log lines a minute (steady)", f"max {max(per_minute)}", "<= 30",
                max(per_minute) <= 30)
    if not o.embedded and steady:
        first, last = steady[0].families, steady[-1].families
        sizes = o.family_bytes or Counter()
        for family in sorted(set(first) | set(last)):
            per_url = sizes[family] / len(expected)
            row(f"keys {family}", f"{first[family]} -> {last[family]}, {per_url:.0f} B/URL", "flat (info)",
                True)
    width = max(len(r[0]) for r in rows)
    lines = [f"{'figure':<{width}} | {'value':<46} | target", "-" * (width + 70)]
    lines += [f"{n:<{width}} | {v:<46} | {t}  {'MET' if m else 'MISSED'}" for n, v, t, m in rows]
    return lines, all(m for *_, m in rows)


def plot(o: Outcome, path: Path) -> None:
    """Memory, key counts and the fetch rate over time, each fault shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 1, figsize=(12, 11), sharex=True)
    minutes = [s.at / 60 for s in o.samples]
    shared = axes[0]
    if o.embedded:
        shared.plot(minutes, [s.state_mb for s in o.samples], label="embedded database (MB)")
    else:
        shared.plot(minutes, [s.redis_memory for s in o.samples], label="Redis used_memory (MB)")
    shared.set_ylabel("MB")
    shared.set_title("shared state", fontsize=9)
    shared.set_ylim(bottom=0)
    shared.legend(fontsize=7, loc="lower right")
    memory = axes[1]
    for name in o.names:
        rss = [s.workers.get(name, (math.nan,))[0] for s in o.samples]
        memory.plot(minutes, rss, label=f"worker {name} RSS")
    memory.set_ylabel("MB")
    memory.set_title("each worker's RSS (a gap: killed)", fontsize=9)
    memory.legend(fontsize=7, loc="lower right")
    keys = axes[2]
    families = sorted({f for s in o.samples for f in s.families})
    for family in families:
        keys.plot(minutes, [s.families.get(family, math.nan) if s.redis_memory is not None else math.nan
                            for s in o.samples], label=family)
    keys.set_ylabel("Redis keys")
    keys.set_title("Redis keys per family", fontsize=9)
    keys.set_yscale("symlog")
    if families:
        keys.legend(fontsize=6, ncol=2, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    rate = axes[3]
    times = [f.start - o.web.started for f in o.web.snapshot()]
    tens = bins(times, 10, o.length)
    rate.plot([(i * 10 + 5) / 60 for i in range(len(tens))], tens, label="fetches per 10 s (server side)")
    rate.set_ylabel("fetches / 10 s")
    rate.set_title("fetch rate, server side (faults shaded)", fontsize=9)
    rate.set_xlabel("minutes")
    rate.legend(fontsize=7, loc="upper left")
    for ax in axes:
        for fault in o.faults:
            if _skipped(fault):
                continue
            ax.axvspan(fault.at / 60, max(fault.end, fault.at + 3) / 60, color="red", alpha=0.15)
    for fault in o.faults:
        axes[0].annotate(fault.name, (fault.at / 60, 1.0), xycoords=("data", "axes fraction"), fontsize=7,
                         va="top", color="darkred")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
