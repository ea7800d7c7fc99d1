"""The oracle bound of bench/freshness.py: what a policy told every page's true change rate
from day 0 can reach, freshness against wasted fetches, under the same fetch budget.

Cho and Garcia-Molina's optimum ("Synchronizing a database to improve freshness", SIGMOD
2000) maximises summed freshness F(l, f) = (f/l)(1 - e^(-l/f)) for a page changing at
Poisson rate l fetched every 1/f. A fetch finds no change with probability e^(-l/f), so a
page wastes W(l, f) = f e^(-l/f) fetches per second. Maximising sum F - c sum W under
sum f = B (Lagrange multiplier mu) traces the oracle's Pareto front of freshness against
waste as c grows: with x = l/f, dF/df = g(x)/l and dW/df = 1 - g(x), g(x) = 1 - (1 + x)e^-x,
so every page revisited has g(x) = l (mu + c) / (1 + c l). Both F and -W are concave in f,
so bounds on the interval (the policy's [min, max]) clip f. Periodic visits from a seeded
random phase are optimal for a Poisson page at a given frequency.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def _g_inverse(target: np.ndarray) -> np.ndarray:
    """x with 1 - (1 + x) e^-x = target, for targets in (0, 1), by vectorised bisection."""
    lo, hi = np.zeros_like(target), np.full_like(target, 60.0)
    for _ in range(60):  # to ~1e-16 relative
        mid = (lo + hi) / 2
        low = 1.0 - (1.0 + mid) * np.exp(-mid) < target
        lo, hi = np.where(low, mid, lo), np.where(low, hi, mid)
    return (lo + hi) / 2


def allocation(rates: np.ndarray, total: float, waste_cost: float = 0.0,
               bounds: tuple[float, float] | None = None) -> np.ndarray:
    """Revisit frequencies f_i (per second), sum f_i = ``total``, maximising
    sum F(l_i, f_i) - ``waste_cost`` sum W(l_i, f_i) (``waste_cost`` in seconds of
    freshness per wasted fetch); ``bounds``: (shortest, longest) interval in seconds, else
    a page may get any frequency, none at all included. With ``waste_cost`` 0 and no bounds
    this is Cho and Garcia-Molina's optimal allocation.

    Where mu l >= 1 no fetch is worth its cost (f = 0: the page changes too fast to keep,
    or never changes); else f = l / g^-1(l (mu + c) / (1 + c l)). Sum f falls as mu grows
    from -c (every page wanted infinitely often) to 1 / min l: bisection on mu."""
    c = waste_cost
    live = rates > 0
    lam = rates[live]
    low_f, high_f = (0.0, math.inf) if bounds is None else (1.0 / bounds[1], 1.0 / bounds[0])

    def frequencies(mu: float) -> np.ndarray:
        target = lam * (mu + c) / (1.0 + c * lam)
        out = np.full_like(lam, math.inf)
        ok = (target > 0) & (target < 1.0)
        out[target >= 1.0] = 0.0
        out[ok] = lam[ok] / _g_inverse(target[ok])
        return np.clip(out, low_f, high_f)

    def spent(mu: float) -> float:
        return float(frequencies(mu).sum()) + (~live).sum() * low_f

    lo_mu, hi_mu = -c, 1.0 / lam.min()  # spent(lo) = inf (or every page at its shortest)
    if spent(hi_mu) >= total:
        lo_mu = hi_mu
    for _ in range(100):
        mid = (lo_mu + hi_mu) / 2
        if spent(mid) > total:
            lo_mu = mid
        else:
            hi_mu = mid
    f = np.full_like(rates, low_f)
    f[live] = frequencies((lo_mu + hi_mu) / 2)
    return f


def expected(rates: np.ndarray, freqs: np.ndarray) -> tuple[float, float]:
    """(mean F, total W per second) of an allocation in the long run: never-changing pages
    count as fresh, unvisited changing ones as stale."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = rates / freqs
        fresh = np.where(rates == 0, 1.0, np.where(freqs > 0, -np.expm1(-x) / x, 0.0))
        waste = np.where(freqs > 0, freqs * np.exp(-x), 0.0)
    return float(fresh.mean()), float(waste.sum())


class Periodic:
    """Page i every 1/f_i seconds from a seeded random phase (f_i = 0: never revisited);
    ``start`` and ``fetched`` as bench/freshness.py's ``simulate`` calls them."""

    def __init__(self, freqs: np.ndarray, seed: int) -> None:
        self.freqs = freqs
        self.phase = np.random.default_rng(seed).uniform(size=len(freqs)).tolist()
        self.periods = [1.0 / f if f > 0 else None for f in freqs.tolist()]

    def start(self, i: int) -> float | None:
        period = self.periods[i]
        return None if period is None else self.phase[i] * period

    def fetched(self, i: int, t: float, version: int) -> float | None:
        return t + self.periods[i]


def frugal(rates: np.ndarray, horizon: float, wasted: int, budget: int, bounds: tuple[float, float] | None,
           run: Callable[[Periodic], object], seed: int = 0) -> tuple[float, object]:
    """(waste cost, ``run``'s result) of the oracle spending ``budget`` fetches over
    ``horizon`` seconds that wastes at most ``wasted``: bisection on log(waste cost) for
    that expected waste, then at most twice more with the target corrected by how far the
    run (which starts with every copy current) is from the expectation."""
    total, target = budget / horizon, wasted / horizon
    for _ in range(3):
        lo, hi = 1.0, 1e9  # seconds of freshness per wasted fetch; waste falls as it grows
        for _ in range(30):
            mid = math.sqrt(lo * hi)
            if expected(rates, allocation(rates, total, mid, bounds))[1] > target:
                lo = mid
            else:
                hi = mid
        result = run(Periodic(allocation(rates, total, hi, bounds), seed))
        if result.wasted <= wasted:
            break
        target *= wasted / result.wasted
    return hi, result
