"""How long to wait before the next visit of a page, from what its visits showed: pure code.

A page changes as a Poisson process at an unknown rate (Brewington and Cybenko 2000;
Cho and Garcia-Molina 2003). Its visits tell how long each gap between two fetches was
and whether the page changed in it; where the server dates its versions (Last-Modified),
a changed visit also tells how long ago the page last changed, which the gap alone
cannot (Cho and Garcia-Molina, "Estimating frequency of change", TOIT 2003, section 5).
:class:`GapChooser` keeps a belief over the rate (a log-uniform prior, the uninformed prior
for a scale, on a geometric grid) and picks, from a geometric grid of gaps within the
policy's bounds, the gap that maximises the expected freshness the page keeps minus what
its fetches cost:

- freshness of a page changing at rate l fetched every g: F = (1 - e^-x) / x, x = l g
  (Cho and Garcia-Molina, "Synchronizing a database to improve freshness", SIGMOD 2000);
- cost, per unit of time: (u / g) (1 + c e^-x): u per fetch, c times more for a fetch
  that finds no change (a wasted fetch costs the site and the crawl for nothing).

With the rate known and c = 0 this is their optimal allocation: a page changing too fast
for any visit to keep it fresh gets the longest gap, not the shortest. Unlike a point
estimate, the belief keeps the difference between "changed at every visit" (the rate may
be far above 1/gap) and "changed about every gap"; halving and doubling the interval
cannot see it, which is why it spends its fetches on the pages that stay stale anyway.

Written by hand: no library chooses revisit gaps; the grids make it one table lookup and
about a thousand multiply-adds per visit, since l_k g_j = l_0 g_0 r^(k+j) depends on k+j only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: Ratio between neighbouring grid points of both rates and gaps.
STEP = 1.25
#: The rate grid spans this factor beyond the gap bounds on each side.
REACH = 100.0


@dataclass(frozen=True)
class Evidence:
    """What a page's visits showed: gaps that ended in a change with no usable date (how
    many and their total seconds), the total seconds of gaps that ended in none, and the
    changes dated by a Last-Modified (how many, and the summed seconds from each version's
    Last-Modified to the fetch that found it: its age)."""

    changes: int
    changed_time: float
    unchanged_time: float
    dated: int = 0
    age: float = 0.0


@dataclass(frozen=True)
class GapChooser:
    """Gaps in [``shortest``, ``longest``] seconds; ``fetch_cost`` the u above, in seconds
    of freshness; ``waste_cost`` the c above."""

    shortest: float
    longest: float
    fetch_cost: float
    waste_cost: float
    _gaps: list[float] = field(init=False, repr=False, compare=False)
    _rates: list[float] = field(init=False, repr=False, compare=False)
    _fresh: list[float] = field(init=False, repr=False, compare=False)
    _stale: list[float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        gaps = max(1, math.ceil(math.log(self.longest / self.shortest) / math.log(STEP)))
        ratio = (self.longest / self.shortest) ** (1 / gaps)
        low, high = 1 / (REACH * self.longest), REACH / self.shortest
        rates = math.ceil(math.log(high / low) / math.log(ratio)) + 1
        x0 = low * self.shortest  # x of the lowest rate at the shortest gap
        xs = [x0 * ratio ** n for n in range(rates + gaps + 1)]
        put = object.__setattr__  # frozen: the tables are computed once, here
        put(self, "_gaps", [min(self.longest, self.shortest * ratio ** j) for j in range(gaps + 1)])
        put(self, "_rates", [low * ratio ** k for k in range(rates)])
        put(self, "_fresh", [-math.expm1(-x) / x for x in xs])
        put(self, "_stale", [math.exp(-x) for x in xs])

    def belief(self, seen: Evidence) -> list[float]:
        """Posterior weights over the rate grid: the prior times the likelihood
        (1 - e^(-l t))^X e^(-l T_unchanged) l^D e^(-l A), with the X undated changed gaps
        taken at their mean t, and D dated changes of summed age A (a Poisson page's last
        change before a fetch lies a ~ Exp(l) back: density l e^(-l a))."""
        mean = seen.changed_time / seen.changes if seen.changes else 0.0
        logs = []
        for rate in self._rates:
            log = -rate * (seen.unchanged_time + seen.age) + seen.dated * math.log(rate)
            if seen.changes:
                log += seen.changes * math.log(-math.expm1(-rate * mean) or 1e-300)
            logs.append(log)
        top = max(logs)
        weights = [math.exp(log - top) for log in logs]
        total = sum(weights)
        return [w / total for w in weights]

    def gap(self, seen: Evidence, weight: float = 1.0) -> float:
        """The gap of most expected value for a page whose freshness is worth ``weight``."""
        likely = [(k, p) for k, p in enumerate(self.belief(seen)) if p > 1e-9]
        cost, waste, fresh, stale = self.fetch_cost, self.waste_cost, self._fresh, self._stale
        best, best_value = self.longest, -math.inf
        for j, gap in enumerate(self._gaps):
            kept = wasted = 0.0
            for k, p in likely:
                kept += p * fresh[k + j]
                wasted += p * stale[k + j]
            value = weight * kept - cost / gap * (1 + waste * wasted)
            if value > best_value:
                best, best_value = gap, value
        return best
