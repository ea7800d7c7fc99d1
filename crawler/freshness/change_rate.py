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

Written by hand: no library chooses revisit gaps; the grids make freshness and cost one
table each per rate and gap, built once, and a choice one vector-matrix product.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

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
    of freshness; ``waste_cost`` the c above. ``gaps`` and ``rates`` are the two grids (per
    second), and ``unchanged[k, j]`` = e^(-l_k g_j) the chance that a page changing at rate
    k shows no change after gap j."""

    shortest: float
    longest: float
    fetch_cost: float
    waste_cost: float
    gaps: np.ndarray = field(init=False, repr=False, compare=False)
    rates: np.ndarray = field(init=False, repr=False, compare=False)
    unchanged: np.ndarray = field(init=False, repr=False, compare=False)
    _fresh: np.ndarray = field(init=False, repr=False, compare=False)
    _cost: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        steps = math.ceil(math.log(self.longest / self.shortest) / math.log(STEP))
        ratio = (self.longest / self.shortest) ** (1 / steps) if steps else STEP  # one gap: any ratio
        low, high = 1 / (REACH * self.longest), REACH / self.shortest
        count = math.ceil(math.log(high / low) / math.log(ratio)) + 1
        # x = l_k g_j = l_0 g_0 r^(k+j): one row of x per rate, one column per gap
        xs = low * self.shortest * ratio ** np.add.outer(np.arange(count), np.arange(steps + 1))
        gaps = np.minimum(self.longest, self.shortest * ratio ** np.arange(steps + 1))
        unchanged = np.exp(-xs)
        put = object.__setattr__  # frozen: the grids and tables are computed once, here
        put(self, "gaps", gaps)
        put(self, "rates", low * ratio ** np.arange(count))
        put(self, "unchanged", unchanged)
        put(self, "_fresh", -np.expm1(-xs) / xs)
        put(self, "_cost", self.fetch_cost / gaps * (1 + self.waste_cost * unchanged))

    def belief(self, seen: Evidence) -> list[float]:
        """Posterior weights over the rate grid: the prior times the likelihood
        (1 - e^(-l t))^X e^(-l T_unchanged) l^D e^(-l A), with the X undated changed gaps
        taken at their mean t, and D dated changes of summed age A (a Poisson page's last
        change before a fetch lies a ~ Exp(l) back: density l e^(-l a))."""
        mean = seen.changed_time / seen.changes if seen.changes else 0.0
        logs = []
        for rate in self.rates.tolist():
            log = -rate * (seen.unchanged_time + seen.age) + seen.dated * math.log(rate)
            if seen.changes:
                log += seen.changes * math.log(-math.expm1(-rate * mean) or 1e-300)
            logs.append(log)
        top = max(logs)
        weights = [math.exp(log - top) for log in logs]
        total = sum(weights)
        return [w / total for w in weights]

    def values(self, belief: Sequence[float] | np.ndarray, weight: float = 1.0) -> np.ndarray:
        """Expected value per unit of time of each gap, weight x freshness kept minus what
        the fetches cost, for a page whose rate has the weights ``belief`` over
        :attr:`rates` (a matrix of beliefs, one a row, gives one row of values each)."""
        values: np.ndarray = np.asarray(belief) @ (weight * self._fresh - self._cost)
        return values

    def best_gap(self, belief: Sequence[float] | np.ndarray, weight: float = 1.0) -> float:
        """The gap of most expected value for a page whose rate has the weights ``belief``
        over :attr:`rates` and whose freshness is worth ``weight``; the longest when the
        values are not numbers (a stored state out of range): never the impolite end."""
        values = self.values(belief, weight)
        if not np.isfinite(values).all():
            return self.longest
        return float(self.gaps[int(np.argmax(values))])

    def gap(self, seen: Evidence, weight: float = 1.0) -> float:
        """The gap of most expected value for what a page's visits showed."""
        return self.best_gap(self.belief(seen), weight)
