"""The M-step under the smoothed-L0 prior of Vaswani, Pauls & Chiang (2010).

For each row, maximise  f(p) = sum_o c_o log p_o + alpha * sum_o exp(-p_o / beta)  over the simplex
with p_o >= FLOOR (1e-7), as the paper does: by projected gradient ascent with an Armijo test,
here compiled (numba) and run over every row of a table in one call.

Warm start: each row starts from the previous parameters (the E-step's), so the M-step only has to
follow the optimum as the counts move, and a few steps a row do (STEPS). Since a step is taken
only when it raises f (the Armijo test), the row never scores below where it started, which is
what makes MAP-EM monotone (a generalised EM: every M-step raises the objective's lower bound).

Scaling: the gradient c / p - (alpha / beta) exp(-p / beta) spans orders of magnitude within a row
(c / p is the row's total at the normalised counts, and 1e7 c at the floor), so a plain Euclidean
step fits few entries at once. The step is scaled by p (the gradient projection method with the
diagonal metric diag(p), Bertsekas 1999, 2.3): q = projection of p + s p * gradient in that same
metric, which is max(p (1 + s gradient - tau), FLOOR) with the one tau that makes q sum to 1.
Without a prior the step s = 1 / (row total) lands exactly on the normalised counts (EM's own
M-step); that is where each row's first trial starts. The projection is exact: tau is the root of
a convex, decreasing, piecewise-linear function, reached from below by Newton steps (Michelot's
algorithm: each step drops the entries that fell to the floor), which end exactly at the same tau
a sort of the breakpoints gives, in a few passes over the row instead of a sort.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from emc.priors.normalize import normalize_table

FLOOR = 1e-7
STEPS = 4  # accepted steps per row and M-step at most (the warm start carries the rest over)...
WORK = 10000  # ...or, in a narrower row, up to WORK / width: a tag's transitions run to convergence
TRIALS = 40  # step sizes tried per step (halving) before the row is called converged
ARMIJO = 1e-4  # a step must gain this fraction of its first-order gain
TOLERANCE = 1e-10  # a step gaining less than this (relative) ends the row


@njit(cache=True, nogil=True)
def _objective(c, p, alpha, beta, decay):
    """f(p), leaving exp(-p / beta) in `decay` (the gradient reuses it)."""
    total = 0.0
    for i in range(len(p)):
        decay[i] = np.exp(-p[i] / beta)
        total += alpha * decay[i]
        if c[i] > 0.0:
            total += c[i] * np.log(p[i])
    return total


@njit(cache=True, nogil=True)
def _project_step(p, direction, s, floor, out):
    """out = max(p (1 + s direction - tau), floor) summing to 1: the projection, in the metric
    diag(p), of p + s p direction onto {q : sum q = 1, q >= floor}. Newton's method on
    phi(tau) = sum max(a - tau p, floor) from tau0 = its root with no entry at the floor (phi is
    convex and decreasing, so every step stays below the root and the set of entries above the
    floor only shrinks: exact after at most n passes, in practice a handful)."""
    n = len(p)
    free_sum = 0.0  # sum of a = p (1 + s direction) over the entries above the floor
    free_weight = 0.0  # sum of p over them
    for i in range(n):
        free_sum += p[i] * (1.0 + s * direction[i])
        free_weight += p[i]
    tau = (free_sum - 1.0) / free_weight
    while True:
        free_sum = free_weight = 0.0
        at_floor = 0
        for i in range(n):
            a = p[i] * (1.0 + s * direction[i])
            if a - tau * p[i] > floor:
                free_sum += a
                free_weight += p[i]
            else:
                at_floor += 1
        if free_weight <= 0.0:
            break  # rounding left no entry above the floor (an overflowing step): the caller rejects it
        new_tau = (free_sum + at_floor * floor - 1.0) / free_weight
        if not new_tau > tau:
            break
        tau = new_tau
    for i in range(n):
        out[i] = max(p[i] * (1.0 + s * direction[i] - tau), floor)
    return tau


@njit(cache=True, nogil=True)
def _feasible(p, floor, scratch):
    """p moved onto {sum p = 1, p >= floor} (the diag(p) projection, a rescaling that lifts any
    entry below the floor to it); a row of zeros becomes uniform."""
    total = 0.0
    for i in range(len(p)):
        total += max(p[i], 0.0)
    if not total > 0.0:
        p[:] = 1.0 / len(p)
        return
    for i in range(len(p)):
        p[i] = max(p[i], 0.0) / total
        scratch[i] = 0.0
    _project_step(p, scratch, 0.0, floor, p)


@njit(cache=True, nogil=True)
def ascend_row(c, p, alpha, beta, steps, floor, q, decay, trial_decay, gradient):
    """At most `steps` accepted steps of scaled projected gradient ascent on one row, in place on
    p (moved onto the feasible set first); returns f(p). q, decay, trial_decay and gradient are
    scratch rows."""
    _feasible(p, floor, gradient)
    value = _objective(c, p, alpha, beta, decay)
    total = 0.0
    for i in range(len(c)):
        total += c[i]
    s = 1.0 / total if total > 0.0 else 1.0
    for _ in range(steps):
        for i in range(len(p)):
            gradient[i] = c[i] / p[i] - (alpha / beta) * decay[i]
        accepted = False
        for _ in range(TRIALS):
            _project_step(p, gradient, s, floor, q)
            gain = mass = 0.0
            for i in range(len(p)):
                gain += gradient[i] * (q[i] - p[i])
                mass += q[i]
            if not abs(mass - 1.0) < 1e-9:
                s *= 0.5  # the step overflowed (a row of tiny counts): no projection to trust
                continue
            if gain <= 0.0:
                break  # no ascent left at this step size: converged to the projection's precision
            trial = _objective(c, q, alpha, beta, trial_decay)
            if trial >= value + ARMIJO * gain:
                accepted = True
                break
            s *= 0.5
        if not accepted:
            break
        improvement = trial - value
        p[:] = q
        decay[:] = trial_decay
        value = trial
        if improvement <= TOLERANCE * abs(value):
            break
    return value


@njit(cache=True, nogil=True)
def _ascend_dense(counts, start, alpha, beta, steps, floor, out):
    """Every row (column j of the outcome-major matrices) of a dense table; out may be counts."""
    n, rows = counts.shape
    c, p = np.empty(n), np.empty(n)
    q, decay, trial_decay, gradient = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    for j in range(rows):
        for i in range(n):
            c[i] = counts[i, j]
            p[i] = start[i, j]
        ascend_row(c, p, alpha, beta, max(steps, WORK // n), floor, q, decay, trial_decay, gradient)
        for i in range(n):
            out[i, j] = p[i]


@njit(cache=True, nogil=True)
def _ascend_sparse(counts, start, order, bounds, alpha, beta, steps, floor, out):
    """Every row of a sparse table: row r's entries are order[bounds[r]:bounds[r + 1]]."""
    widest = 0
    for r in range(len(bounds) - 1):
        widest = max(widest, bounds[r + 1] - bounds[r])
    c, p = np.empty(widest), np.empty(widest)
    q, decay, trial_decay, gradient = np.empty(widest), np.empty(widest), np.empty(widest), np.empty(widest)
    for r in range(len(bounds) - 1):
        n = bounds[r + 1] - bounds[r]
        if n == 0:
            continue
        for k in range(n):
            c[k] = counts[order[bounds[r] + k]]
            p[k] = start[order[bounds[r] + k]]
        ascend_row(c[:n], p[:n], alpha, beta, max(steps, WORK // n), floor, q[:n], decay[:n], trial_decay[:n],
                   gradient[:n])
        for k in range(n):
            out[order[bounds[r] + k]] = p[k]


def objective(p: np.ndarray, counts: np.ndarray, alpha: float, beta: float) -> float:
    """f(p) of one row (the terms with no count contribute no log)."""
    return float(np.dot(counts[counts > 0], np.log(p[counts > 0])) + alpha * np.exp(-p / beta).sum())


def maximize_table(counts: np.ndarray, start: np.ndarray | None, local_rows: np.ndarray | None, rows: int,
                   alpha: float, beta: float, out: np.ndarray, steps: int = STEPS) -> np.ndarray:
    """The M-step of one table: its entries' counts, the previous parameters to start from (None:
    the normalised counts) and the row of each entry (None for a dense, outcome-major table) ->
    the new parameters, in `out` (which may be `counts`: each row is read before it is written)."""
    if start is None:
        start = normalize_table(counts, local_rows, rows)
    if local_rows is None:
        _ascend_dense(counts.reshape(-1, rows), start.reshape(-1, rows), alpha, beta, steps, FLOOR,
                      out.reshape(-1, rows))
        return out
    order = np.argsort(local_rows, kind="stable")
    bounds = np.searchsorted(local_rows[order], np.arange(rows + 1))
    _ascend_sparse(counts, start, order, bounds, alpha, beta, steps, FLOOR, out)
    return out


def maximize_row(counts: np.ndarray, alpha: float, beta: float, steps: int = 1000) -> np.ndarray:
    """One row solved from its normalised counts (up to `steps` steps: to convergence)."""
    out = np.empty(len(counts))
    return maximize_table(counts, None, None, 1, alpha, beta, out, steps)
