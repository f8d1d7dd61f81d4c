"""The M-step under the smoothed-L0 prior of Vaswani, Pauls & Chiang (2010).

For each row, maximise  f(p) = sum_o c_o log p_o + alpha * sum_o exp(-p_o / beta)  over the simplex
with p_o >= FLOOR (1e-7). The prior rewards parameters near 0, so f is not concave; we use projected
gradient ascent with a backtracking line search (the paper's gradient: c_o / p_o - (alpha / beta)
exp(-p_o / beta)), warm-started from the plain normalised counts, and accept only steps that
increase f: the result is feasible and never scores below the warm start.
"""
from __future__ import annotations

import numpy as np

FLOOR = 1e-7
MAX_STEPS = 100


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


def maximize_row(counts: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    total = counts.sum()
    p = project(counts / total if total > 0 else np.full(len(counts), 1.0 / len(counts)))
    best = objective(p, counts, alpha, beta)
    step = 1.0
    for _ in range(MAX_STEPS):
        gradient = counts / p - (alpha / beta) * np.exp(-p / beta)
        improved = False
        while step > 1e-12:
            candidate = project(p + step * gradient / max(np.abs(gradient).max(), 1e-300))
            value = objective(candidate, counts, alpha, beta)
            if value > best + 1e-12 * abs(best):
                p, best, improved = candidate, value, True
                step *= 2.0
                break
            step *= 0.5
        if not improved:
            break
    return p

