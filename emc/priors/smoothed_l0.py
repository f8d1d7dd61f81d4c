"""The M-step under the smoothed-L0 prior of Vaswani, Pauls & Chiang (2010).

For each row, maximise  f(p) = sum_o c_o log p_o + alpha * sum_o exp(-p_o / beta)  over the simplex
with p_o >= FLOOR (1e-7). The prior rewards parameters near 0, so f is not concave, and projected
gradient ascent from the normalised counts (the paper's method) stalls on the barrier between a
small count's share and 0: on rows like a tag's transitions it ends tens of nats below the optimum.

So we solve the row through its Lagrangian. For a multiplier lam, f - lam * sum(p) separates into
one-dimensional problems, c log p + alpha exp(-p / beta) - lam p on [FLOOR, 1], each solved globally
(a geometric grid, then golden-section refinement around the best grid point); the sum of the
maximisers falls as lam grows, so bisection finds the lam where the row sums to 1. That point is
projected onto the feasible set and polished by projected gradient ascent with backtracking (the
paper's gradient), and the result is kept only if it beats the warm start: the returned row is
always feasible and never scores below the plainly normalised counts.
"""
from __future__ import annotations

import numpy as np

FLOOR = 1e-7
GRID = np.geomspace(FLOOR, 1.0, 160)
BISECTIONS = 50
GOLDEN_STEPS = 30
POLISH_STEPS = 100


def objective(p: np.ndarray, counts: np.ndarray, alpha: float, beta: float) -> float:
    return float(np.dot(counts, np.log(p)) + alpha * np.exp(-p / beta).sum())


def project(v: np.ndarray, floor: float = FLOOR) -> np.ndarray:
    """The closest point (Euclidean) of {p : sum p = 1, p >= floor} to v."""
    n = len(v)
    mass = 1.0 - n * floor
    u = v - floor
    s = np.sort(u)[::-1]
    cumulative = np.cumsum(s) - mass
    k = np.nonzero(s - cumulative / np.arange(1, n + 1) > 0)[0][-1]
    tau = cumulative[k] / (k + 1)
    return np.maximum(u - tau, 0.0) + floor


def _coordinate_maximisers(counts: np.ndarray, alpha: float, beta: float, lam: float,
                           on_grid: np.ndarray) -> np.ndarray:
    """on_grid: c log p + alpha exp(-p / beta) at every GRID point (it does not depend on lam)."""
    def h(p):
        return counts[:, None] * np.log(p) + alpha * np.exp(-p / beta) - lam * p

    best = (on_grid - lam * GRID[None, :]).argmax(axis=1)
    lo = GRID[np.maximum(best - 1, 0)][:, None]
    hi = GRID[np.minimum(best + 1, len(GRID) - 1)][:, None]
    for _ in range(GOLDEN_STEPS):
        a, b = lo + 0.382 * (hi - lo), lo + 0.618 * (hi - lo)
        left = h(a) > h(b)
        lo, hi = np.where(left, lo, a), np.where(left, b, hi)
    return (0.5 * (lo + hi))[:, 0]


def _lagrangian_solution(counts: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    on_grid = counts[:, None] * np.log(GRID)[None, :] + alpha * np.exp(-GRID / beta)[None, :]
    lo, hi = -1.0, counts.sum() + alpha / beta + 1.0
    while _coordinate_maximisers(counts, alpha, beta, lo, on_grid).sum() < 1.0:
        lo *= 2.0
    for _ in range(BISECTIONS):
        mid = 0.5 * (lo + hi)
        if _coordinate_maximisers(counts, alpha, beta, mid, on_grid).sum() > 1.0:
            lo = mid
        else:
            hi = mid
    p = _coordinate_maximisers(counts, alpha, beta, hi, on_grid)
    return project(p / p.sum())


def _polish(p: np.ndarray, counts: np.ndarray, alpha: float, beta: float) -> tuple[np.ndarray, float]:
    best = objective(p, counts, alpha, beta)
    step = 1e-3
    for _ in range(POLISH_STEPS):
        gradient = counts / p - (alpha / beta) * np.exp(-p / beta)
        improved = False
        while step > 1e-16:
            candidate = project(p + step * gradient)
            value = objective(candidate, counts, alpha, beta)
            if value > best + 1e-12 * abs(best):
                p, best, improved = candidate, value, True
                step *= 2.0
                break
            step *= 0.5
        if not improved:
            break
    return p, best


def maximize_row(counts: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    total = counts.sum()
    warm = project(counts / total if total > 0 else np.full(len(counts), 1.0 / len(counts)))
    warm_value = objective(warm, counts, alpha, beta)
    p, value = _polish(_lagrangian_solution(counts, alpha, beta), counts, alpha, beta)
    return p if value >= warm_value else warm
