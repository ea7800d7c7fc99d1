"""Freshness of revisit policies on a simulated web under one fetch budget.

Run from the repo root: ``python bench/freshness.py`` (10,000 pages, 60 days, ~12 s;
``--quick`` for 3,000 pages in ~4 s). No network: a simulated clock, seeded.

**The web.** Each page changes as a Poisson process (Brewington and Cybenko 2000 found
the time between changes of a page exponential), at a mean change interval drawn from
a skewed mixture: 23% of pages between 1 hour and 1 day (Cho and Garcia-Molina, "The
evolution of the web and implications for an incremental crawler", VLDB 2000: 23% of
720,000 pages crawled daily for 4 months changed every day, over 40% of the .com
ones), 17% between 1 and 7 days (so that 40% change within a week, their figure),
15% from 1 week to 1 month, 15% from 1 to 4 months, 15% from 4 months to 2 years and
15% never (Fetterly et al., "A large-scale study of the evolution of web pages", WWW
2003: most of 151M pages crawled weekly for 11 weeks did not change, or only in their
markup; Ntoulas et al. 2004: half the pages that persist do not change in a year).
Log-uniform within each band. Each page has a depth 0-5 for ``importance()``, drawn
independently of its change rate (no published correlation to base one on; this
does not flatter the importance weight). A page "changed" at a fetch when it had at
least one change event since the last fetch (the crawler's text hash, here a version
number passed as the hash, judged by the policy's own ``outcome()``).

**The policies.** *fixed*: every page at one interval (a round robin). *plain*:
``RevisitPolicy.visit`` with weight 1, no stretch and halve/double at every visit
(the halve/double rule alone). *ours*: ``RevisitPolicy.visit`` as the crawler runs it, with
``importance(depth)``, the ``HotShare`` stretch (cap ``--hot-share``, default
``REVISIT_HOT_SHARE``) and, after ``--evidence`` gaps, the gap chosen from the page's
evidence at ``--waste-cost`` (defaults ``REVISIT_EVIDENCE``, ``REVISIT_WASTE_COST``).
With ``--last-modified S`` a share S of
the pages (seeded) date their versions: the first crawl sees the Last-Modified of the
version then current (its age from the same Poisson process, at most PAGE_AGE) and a
changed fetch the Last-Modified of the last change (sim seconds as Unix time), which
ours' estimator uses; by default none do.
*ours, rates known* (``--known-rates``): that chooser told each page's true rate.
*optimal*: Cho and Garcia-Molina's allocation for known rates ("Synchronizing a
database to improve freshness", SIGMOD 2000), see :func:`freshness_oracle.allocation`;
with ``--oracle``, the same told a waste cost, at half the fixed interval's waste
(:func:`freshness_oracle.frugal`): whether the waste target is reachable at all. Every copy
is current at t=0 (a first crawl spread over one interval before it), so each policy's
first revisits spread over its first interval.

**One budget.** ``B = pages * days / --budget-days`` revisits (default: a weekly
visit per page, the policy's start interval). The fixed interval is ``days * pages /
B``: exactly B fetches. Optimal spends B in expectation. The adaptive policies keep
the shipped shape (start 7 d, bounds [1 d, 30 d]) scaled by one time factor found by
bisection until they spend B within 0.2%: the same policy on a faster or slower clock.

**Figures.** Average freshness is exact: per page, the time its stored copy was
current (from each fetch to the next change event), over pages x days.
"""

from __future__ import annotations

import argparse
import heapq
import math
import sys
import time
from bisect import bisect_right
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]

from freshness_oracle import Periodic, allocation, expected, frugal  # noqa: E402

from crawler import defaults  # noqa: E402
from crawler.freshness.change_rate import Evidence  # noqa: E402
from crawler.freshness.revisit import HotShare, RevisitPolicy, importance  # noqa: E402

HOUR, DAY = 3600.0, 86400.0
# (share of pages, shortest, longest mean change interval); None: never changes.
BANDS = [(0.23, HOUR, DAY), (0.17, DAY, 7 * DAY), (0.15, 7 * DAY, 30 * DAY),
         (0.15, 30 * DAY, 120 * DAY), (0.15, 120 * DAY, 730 * DAY), (0.15, None, None)]
DEPTHS = [0.01, 0.04, 0.15, 0.30, 0.30, 0.20]  # share of pages at depth 0..5
SEED = 20001
#: Age of the oldest pages at time 0 (Ntoulas et al., "What's new on the web?", WWW 2004:
#: only 20% of the pages of a crawl are still there a year later).
PAGE_AGE = 365 * DAY
SHIPPED = (defaults.REVISIT_INTERVAL, defaults.REVISIT_MIN_INTERVAL, defaults.REVISIT_MAX_INTERVAL)


@dataclass
class Web:
    """Pages' change rates (per second), depths, change times within [0, horizon] and the
    age at time 0 of the version then current (seconds since its last change, at most
    PAGE_AGE: the page's creation)."""

    rates: list[float]
    depths: list[int]
    changes: list[list[float]]
    horizon: float
    seed: int
    ages: list[float] | None = None

    def __len__(self) -> int:
        return len(self.rates)


def make_web(pages: int, days: float, seed: int = SEED) -> Web:
    """A seeded web: rates from BANDS, depths from DEPTHS, Poisson change times."""
    rng = np.random.default_rng(seed)
    horizon = days * DAY
    band = rng.choice(len(BANDS), size=pages, p=[b[0] for b in BANDS])
    rates = np.zeros(pages)
    for k, (_, shortest, longest) in enumerate(BANDS):
        chosen = band == k
        if shortest is not None:
            logs = rng.uniform(math.log(shortest), math.log(longest), chosen.sum())
            rates[chosen] = np.exp(-logs)
    depths = rng.choice(len(DEPTHS), size=pages, p=DEPTHS)
    counts = rng.poisson(rates * horizon)
    changes = [np.sort(rng.uniform(0.0, horizon, n)).tolist() for n in counts]
    with np.errstate(divide="ignore"):  # a separate stream: the changes above stay as they were
        ages = np.random.default_rng(seed + 5).exponential(1.0 / rates)
    return Web(rates.tolist(), depths.tolist(), changes, horizon, seed, np.minimum(ages, PAGE_AGE).tolist())


@dataclass
class Result:
    freshness: float  # share of page-time with a current copy
    changed: int  # fetches that found a new version
    wasted: int  # fetches that found none

    @property
    def fetches(self) -> int:
        return self.changed + self.wasted


def simulate(web: Web, schedule) -> Result:
    """Run one policy over the web's horizon. ``schedule.start(i)`` gives page i's first
    fetch time, ``schedule.fetched(i, t, version)`` the next (None: never again); a
    fetch at ``t`` sees ``version`` = the number of changes up to t."""
    horizon, changes = web.horizon, web.changes
    stored = [0] * len(web)  # version of the stored copy
    since = [0.0] * len(web)  # when it was fetched
    heap = [(t, i) for i in range(len(web)) if (t := schedule.start(i)) is not None and t <= horizon]
    heapq.heapify(heap)
    fresh = 0.0
    changed = wasted = 0
    while heap:  # bounded: every policy waits at least a positive interval between fetches
        t, i = heapq.heappop(heap)
        events, v = changes[i], stored[i]
        fresh += min(events[v], t) - since[i] if v < len(events) else t - since[i]
        version = bisect_right(events, t, lo=v)
        if version != v:
            changed += 1
        else:
            wasted += 1
        stored[i], since[i] = version, t
        nxt = schedule.fetched(i, t, version)
        if nxt is not None and nxt <= horizon:
            heapq.heappush(heap, (nxt, i))
    for i, events in enumerate(changes):
        v = stored[i]
        fresh += (min(events[v], horizon) if v < len(events) else horizon) - since[i]
    return Result(fresh / (len(web) * horizon), changed, wasted)


class Fixed:
    """Every page every ``horizon * pages / budget`` seconds, in a seeded round robin:
    exactly ``budget`` fetches."""

    def __init__(self, web: Web, budget: int) -> None:
        self.gap = web.horizon / budget
        self.interval = self.gap * len(web)
        self.rank = np.random.default_rng(web.seed + 1).permutation(len(web)).tolist()

    def start(self, i: int) -> float:
        return (self.rank[i] + 0.5) * self.gap

    def fetched(self, i: int, t: float, version: int) -> float:
        return t + self.interval


class Adaptive:
    """``RevisitPolicy.visit`` on the intervals ``shape`` (start, min, max) times ``scale``;
    with ``weighted``, importance by depth; with ``hot_share``, the HotShare stretch."""

    def __init__(self, web: Web, scale: float, weighted: bool, hot_share: float | None,
                 shape: tuple[float, float, float] = SHIPPED, waste_cost: float = 0.0,
                 evidence: int = 10**9, dated_share: float = 0.0, jitter: float = 0.0) -> None:
        self.policy = RevisitPolicy(*(seconds * scale for seconds in shape), waste_cost, evidence, jitter)
        self.jitter_phase = np.random.default_rng(web.seed + 5).uniform(size=len(web)).tolist()
        self.changes, self.ages = web.changes, web.ages
        self.dated = (np.random.default_rng(web.seed + 4).uniform(size=len(web)) < dated_share).tolist()
        self.weights = [importance(d) if weighted else 1.0 for d in web.depths]
        self.hot = HotShare(hot_share) if hot_share is not None else None
        self.phase = np.random.default_rng(web.seed + 3).uniform(size=len(web)).tolist()
        self.states: list = [None] * len(web)

    def start(self, i: int) -> float:
        """The first crawl, at a seeded phase of the first wait before time 0; a dated page's
        Last-Modified there says how old its version is."""
        def first(at: float) -> float:
            dated = self.dated[i] and self.ages is not None
            last_modified = formatdate(at - self.ages[i], usegmt=True) if dated else None
            self.states[i] = self.policy.visit(None, at, 200, "0", None, last_modified, self.weights[i],
                                               phase=self.jitter_phase[i])[1]
            return self.states[i].next_visit - at

        at = -self.phase[i] * first(0.0)
        return at + first(at)

    def fetched(self, i: int, t: float, version: int) -> float:
        previous, stretch = self.states[i], 1.0
        if self.hot is not None:
            stretch = self.hot.stretch()
            self.hot.record(self.policy.is_hot(previous.interval))
        dated = self.dated[i] and version > 0
        last_modified = formatdate(self.changes[i][version - 1], usegmt=True) if dated else None
        self.states[i] = self.policy.visit(previous, t, 200, str(version), None, last_modified,
                                           self.weights[i], stretch, self.jitter_phase[i])[1]
        return self.states[i].next_visit


def known_gap(policy: RevisitPolicy, rate: float, weight: float) -> float:
    """The gap ours' chooser gives a page told its true change rate: the evidence of 10,000
    gaps of a tenth of the minimum interval."""
    step = policy.min_interval / 10
    changed = round(10_000 * -math.expm1(-rate * step))
    return policy.chooser.gap(Evidence(changed, changed * step, (10_000 - changed) * step), weight)


class KnownRates(Adaptive):
    """Ours' gap chooser told each page's true change rate (:func:`known_gap`): ours
    without the cost of learning the rates."""

    def __init__(self, web: Web, scale: float, **adaptive) -> None:
        super().__init__(web, scale, **adaptive)
        self.gaps = [known_gap(self.policy, rate, weight)
                     for rate, weight in zip(web.rates, self.weights, strict=True)]

    def start(self, i: int) -> float:
        return self.phase[i] * self.gaps[i]

    def fetched(self, i: int, t: float, version: int) -> float:
        return t + self.gaps[i]


def calibrated(web: Web, budget: int, tolerance: float = 0.002, policy: type = Adaptive,
               **adaptive) -> tuple[float, Result]:
    """(scale, result) of ``policy`` (``adaptive``: its arguments) whose intervals, times
    ``scale``, spend ``budget`` fetches within ``tolerance``: bisection on log(scale), at
    most 30 runs."""
    def run(scale: float) -> Result:
        return simulate(web, policy(web, scale, **adaptive))

    first = run(1.0)
    guess = first.fetches / budget  # fetches fall roughly as 1/scale
    lo, hi = guess / 4, guess * 4  # fetches(lo) > budget > fetches(hi) for any sane web
    best = (1.0, first)
    for _ in range(30):
        mid = math.sqrt(lo * hi)
        result = run(mid)
        if abs(result.fetches - budget) < abs(best[1].fetches - budget):
            best = (mid, result)
        if abs(result.fetches - budget) <= tolerance * budget:
            break
        if result.fetches > budget:
            lo = mid
        else:
            hi = mid
    return best


def compare(web: Web, budget: int, hot_share: float = defaults.REVISIT_HOT_SHARE, weighted: bool = True,
            shape: tuple[float, float, float] = SHIPPED, waste_cost: float = defaults.REVISIT_WASTE_COST,
            evidence: int = defaults.REVISIT_EVIDENCE, known_rates: bool = False,
            dated_share: float = 0.0, oracles: bool = False, jitter: float = defaults.REVISIT_JITTER) -> dict:
    """Every policy on one web and budget: name -> (Result, note). ``hot_share``,
    ``weighted``, ``shape``, ``waste_cost``, ``evidence`` and ``dated_share`` are ours
    (plain keeps the shipped shape); ``known_rates`` adds :class:`KnownRates` with ours' arguments;
    ``oracles`` the :func:`~freshness_oracle.frugal` oracle at half the fixed interval's
    waste, free and within the shipped [min, max] intervals."""
    fixed = Fixed(web, budget)
    fixed_result = simulate(web, fixed)
    optimal = Periodic(allocation(np.array(web.rates), budget / web.horizon), web.seed + 2)
    plain_scale, plain = calibrated(web, budget, weighted=False, hot_share=None)
    ours_scale, ours = calibrated(web, budget, weighted=weighted, hot_share=hot_share, shape=shape,
                                  waste_cost=waste_cost, evidence=evidence, dated_share=dated_share,
                                  jitter=jitter)
    days = "/".join(f"{seconds * ours_scale / DAY:.2f}" for seconds in shape)
    theory = expected(np.array(web.rates), optimal.freqs)[0]
    known = {}
    if known_rates:
        known_scale, known_result = calibrated(web, budget, policy=KnownRates, weighted=weighted,
                                               hot_share=None, shape=shape, waste_cost=waste_cost)
        known = {"ours, rates known": (known_result, f"shipped intervals x{known_scale:.3f}")}
    for name, bounds in (("oracle at half fixed's waste", None),
                         ("oracle in [min, max], same", SHIPPED[1:])) if oracles else ():
        cost, result = frugal(np.array(web.rates), web.horizon, fixed_result.wasted // 2, budget, bounds,
                              lambda schedule: simulate(web, schedule), web.seed + 2)
        known[name] = (result, f"known rates, waste cost {cost:,.0f} s")
    return {
        "fixed interval": (fixed_result, f"every {fixed.interval / DAY:.2f} d"),
        "plain halve/double": (plain, f"shipped intervals x{plain_scale:.3f}"),
        "ours": (ours, f"start/min/max {days} d, hot share {hot_share:g}"
                       + ("" if weighted else ", no importance")
                       + (f", {dated_share:.0%} dated" if dated_share else "")
                       + (f", jitter {jitter:g}" if jitter else "")),
        **known,
        "optimal (known rates)": (simulate(web, optimal), f"{theory:.4f} in theory"),
    }


def report(results: dict) -> list[str]:
    """The table and the target checks, as lines of Markdown."""
    from common import fmt_table

    rows = [[name, f"{r.freshness:.4f}", f"{r.changed:,}", f"{r.wasted:,}", f"{r.fetches:,}", note]
            for name, (r, note) in results.items()]
    lines = [fmt_table(["policy", "avg freshness", "changes captured", "wasted (no change)",
                        "fetches", "calibration"], rows), ""]
    fixed, ours, best = (results[k][0] for k in ("fixed interval", "ours", "optimal (known rates)"))
    checks = [
        ("ours at least as fresh as the fixed interval", ours.freshness >= fixed.freshness,
         f"{ours.freshness:.4f} vs {fixed.freshness:.4f}"),
        ("ours at least 90% of the optimum's freshness", ours.freshness >= 0.9 * best.freshness,
         f"{ours.freshness / best.freshness:.1%} of {best.freshness:.4f}"),
        ("ours wastes at most half the fixed interval's fetches", ours.wasted <= 0.5 * fixed.wasted,
         f"{ours.wasted:,} = {ours.wasted / fixed.wasted:.1%} of {fixed.wasted:,}"),
    ]
    lines += [f"- {'MET' if ok else 'MISSED'}: {what} ({figures})" for what, ok, figures in checks]
    for name in ("oracle at half fixed's waste", "oracle in [min, max], same"):
        if name in results:
            r = results[name][0]
            both = r.freshness >= max(fixed.freshness, 0.9 * best.freshness)
            lines.append(f"- bound: {name} {r.freshness:.4f} at {r.wasted / fixed.wasted:.1%} of fixed's "
                         f"waste: the targets are {'' if both else 'NOT '}reachable with every rate known")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--days", type=float, default=60.0)
    parser.add_argument("--budget-days", type=float, default=7.0,
                        help="budget: one revisit per page per this many days on average (default 7)")
    parser.add_argument("--hot-share", type=float, default=defaults.REVISIT_HOT_SHARE,
                        help=f"ours' HotShare cap (default REVISIT_HOT_SHARE = {defaults.REVISIT_HOT_SHARE})")
    parser.add_argument("--shape", default="7,1,30", help="ours: start,min,max interval in days before "
                        "calibration scales them (default 7,1,30: the shipped defaults)")
    parser.add_argument("--waste-cost", type=float, default=defaults.REVISIT_WASTE_COST,
                        help=f"ours' REVISIT_WASTE_COST (default {defaults.REVISIT_WASTE_COST:g})")
    parser.add_argument("--evidence", type=int, default=defaults.REVISIT_EVIDENCE,
                        help=f"ours' REVISIT_EVIDENCE (default {defaults.REVISIT_EVIDENCE})")
    parser.add_argument("--no-importance", action="store_true", help="ours without the depth weight")
    parser.add_argument("--known-rates", action="store_true",
                        help="add ours' gap chooser told each page's true rate: the cost of learning")
    parser.add_argument("--last-modified", type=float, default=0.0, metavar="SHARE",
                        help="share of pages whose Last-Modified dates their changes (default 0)")
    parser.add_argument("--oracle", action="store_true",
                        help="add the oracle told every rate from day 0, at half the fixed interval's waste")
    parser.add_argument("--jitter", type=float, default=defaults.REVISIT_JITTER,
                        help="ours: each wait up to this fraction longer, fixed per page (REVISIT_JITTER)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--quick", action="store_true", help="3,000 pages: ~4 s")
    args = parser.parse_args()
    pages = 3_000 if args.quick else args.pages
    began = time.perf_counter()
    web = make_web(pages, args.days, args.seed)
    budget = round(pages * args.days / args.budget_days)
    print(f"{pages:,} pages, {args.days:g} days, budget {budget:,} revisits (one per page per "
          f"{args.budget_days:g} days), {sum(map(len, web.changes)):,} change events, seed {args.seed}\n")
    shape = tuple(float(days) * DAY for days in args.shape.split(","))
    print("\n".join(report(compare(web, budget, args.hot_share, not args.no_importance, shape,
                                    args.waste_cost, args.evidence, args.known_rates,
                                    args.last_modified, args.oracle, args.jitter))))
    print(f"\n({time.perf_counter() - began:.1f} s)")


if __name__ == "__main__":
    main()
