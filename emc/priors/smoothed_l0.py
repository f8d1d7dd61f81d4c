"""The M-step under the smoothed-L0 prior of Vaswani, Pauls & Chiang (2010).

For each row, maximise  f(p) = sum_o c_o log p_o + alpha * sum_o exp(-p_o / beta)  over the simplex
with p_o >= FLOOR (1e-7), as the paper does: by projected gradient ascent with an Armijo test.

Warm start: each row starts from the previous parameters (those the E-step used), so the M-step
only has to follow the optimum as the counts move, and a few steps a row do (STEPS; a narrow row,
such as a tag's transitions, runs to convergence). A step is taken only when it raises f, so a row
never scores below where it started: MAP-EM is then monotone (a generalised EM). An M-step that
ignores the previous parameters (starting from the normalised counts, as in the paper, or the
per-row global search this module replaced) can end on a lower local maximum than the previous
M-step's, and the objective falls: by up to 5.45 nats an iteration with the replaced search, over
100 iterations of the tag-dictionary setting (bench/README.md).

Scaling: the gradient c / p - (alpha / beta) exp(-p / beta) spans orders of magnitude within a row
(c / p is the row's total at the normalised counts, and 1e7 c at the floor), so a plain Euclidean
step fits few entries at once. The step is scaled by p (gradient projection with the diagonal
metric diag(p), Bertsekas 1999, section 2.3): q = the projection of p + s p * gradient in that
same metric, which is max(p (1 + s gradient - tau), FLOOR) with the one tau that makes q sum to 1.
Without a prior the step s = 1 / (row total) lands exactly on the normalised counts (EM's own
M-step); each row's first trial uses it, and a refused trial halves it.

The projection is exact: tau is the root of a convex, decreasing, piecewise-linear function,
reached from below by Newton steps (Michelot's algorithm: each drops the entries that fell to the
floor), which end on the tau a sort of the breakpoints gives, in 2 or 3 passes over a row of the
CoNLL-2000 emissions (19k entries) where sorting every row once costs 65-100 ms.

All rows go at once, in rounds (one per step or halving): a compiled pass projects every going
row, numpy takes log and exp of the whole table (its vectorised functions are several times
faster than the scalar ones a compiled loop calls; they are most of a round), and a compiled pass
judges every row's trial. No Python loop runs over rows or entries.
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
        out[i] = p[i] * (1.0 + s * direction[i])  # a, kept for the passes below
        free_sum += out[i]
        free_weight += p[i]
    tau = (free_sum - 1.0) / free_weight
    while True:
        free_sum = free_weight = 0.0
        at_floor = 0
        for i in range(n):
            free = out[i] - tau * p[i] > floor  # a select, not a branch: the test is unpredictable
            free_sum += out[i] if free else 0.0
            free_weight += p[i] if free else 0.0
            at_floor += 0 if free else 1
        if free_weight <= 0.0:
            break  # rounding left no entry above the floor (an overflowing step): the caller rejects it
        new_tau = (free_sum + at_floor * floor - 1.0) / free_weight
        if not new_tau > tau:
            break
        tau = new_tau
    for i in range(n):
        out[i] = max(out[i] - tau * p[i], floor)
    return tau


@njit(cache=True, nogil=True)
def _feasible(p, floor, scratch):
    """p moved onto {sum p = 1, p >= floor} (the diag(p) projection, a rescaling that lifts any
    entry below the floor to it); a row of zeros becomes uniform. A previous M-step's row is
    feasible already and is left as it is."""
    total, lowest = 0.0, np.inf
    for i in range(len(p)):
        total += max(p[i], 0.0)
        lowest = min(lowest, p[i])
    if lowest >= floor and abs(total - 1.0) < 1e-12:
        return
    if not total > 0.0:
        p[:] = 1.0 / len(p)
        return
    for i in range(len(p)):
        p[i] = max(p[i], 0.0) / total
        scratch[i] = 0.0
    _project_step(p, scratch, 0.0, floor, p)


@njit(cache=True, nogil=True)
def _start_rows(c, p, bounds, floor, scratch):
    """Every row moved onto its feasible set; returns each row's first step size, 1 / its total
    count (1 for a row of no counts)."""
    s = np.ones(len(bounds) - 1)
    for r in range(len(bounds) - 1):
        a, b = bounds[r], bounds[r + 1]
        if b > a:
            _feasible(p[a:b], floor, scratch[a:b])
            total = c[a:b].sum()
            if total > 0.0:
                s[r] = 1.0 / total
    return s


@njit(cache=True, nogil=True)
def _first_values(c, p, log_p, decay, bounds, alpha, beta, gradient):
    """f of every row at its start, and the gradient there (log p and exp(-p / beta) given)."""
    value = np.zeros(len(bounds) - 1)
    for r in range(len(bounds) - 1):
        total = 0.0
        for i in range(bounds[r], bounds[r + 1]):
            total += c[i] * log_p[i] + alpha * decay[i]
            gradient[i] = c[i] / p[i] - (alpha / beta) * decay[i]
        value[r] = total
    return value


@njit(cache=True, nogil=True)
def _project_rows(p, gradient, s, bounds, going, floor, q):
    """Each going row's trial point for its step size: q = the projection of p + s p gradient."""
    for r in range(len(bounds) - 1):
        if going[r]:
            a, b = bounds[r], bounds[r + 1]
            _project_step(p[a:b], gradient[a:b], s[r], floor, q[a:b])


@njit(cache=True, nogil=True)
def _judge_rows(c, p, q, log_q, decay_q, decay, gradient, bounds, alpha, beta, s, value, taken, failed,
                limit, going):
    """Each going row's trial (log q and exp(-q / beta) given): taken if it passes the Armijo
    test (p, its decay, value and gradient move there), else the step halves. A row stops after
    `limit` steps taken, TRIALS halvings in a row, a step gaining (nearly) nothing, or a trial
    with no first-order gain left. Returns how many rows go on."""
    going_on = 0
    for r in range(len(bounds) - 1):
        if not going[r]:
            continue
        a, b = bounds[r], bounds[r + 1]
        trial = gain = mass = 0.0
        for i in range(a, b):
            trial += c[i] * log_q[i] + alpha * decay_q[i]
            gain += gradient[i] * (q[i] - p[i])
            mass += q[i]
        if not abs(mass - 1.0) < 1e-9 or (gain > 0.0 and trial < value[r] + ARMIJO * gain):
            s[r] *= 0.5  # refused, or a step that overflowed (a row of tiny counts): shorter
            failed[r] += 1
            going[r] = failed[r] < TRIALS
        elif gain <= 0.0:
            going[r] = False  # no ascent left at this step size: converged to the projection's precision
        else:
            improvement, value[r] = trial - value[r], trial
            taken[r] += 1
            failed[r] = 0
            for i in range(a, b):
                p[i] = q[i]
                decay[i] = decay_q[i]
                gradient[i] = c[i] / q[i] - (alpha / beta) * decay_q[i]
            going[r] = taken[r] < limit[r] and improvement > TOLERANCE * abs(trial)
        going_on += going[r]
    return going_on


def objective(p: np.ndarray, counts: np.ndarray, alpha: float, beta: float) -> float:
    """f(p) of one row (the terms with no count contribute no log)."""
    return float(np.dot(counts[counts > 0], np.log(p[counts > 0])) + alpha * np.exp(-p / beta).sum())


def maximize_table(counts: np.ndarray, start: np.ndarray | None, local_rows: np.ndarray | None, rows: int,
                   alpha: float, beta: float, out: np.ndarray, steps: int = STEPS) -> np.ndarray:
    """The M-step of one table: its entries' counts, the previous parameters to start from (None:
    the normalised counts) and the row of each entry (None for a dense, outcome-major table) ->
    the new parameters, in `out` (which may be `counts`: the rows are copied out first)."""
    if start is None:
        start = normalize_table(counts, local_rows, rows)
    if local_rows is None:  # outcome-major: each row's entries made contiguous, rows one after another
        c = np.ascontiguousarray(counts.reshape(-1, rows).T).ravel()
        p = start.reshape(-1, rows).T.copy().ravel()  # a copy even for one row: start is not written
        bounds = np.arange(rows + 1) * (len(counts) // rows)
        _ascend(c, p, bounds, alpha, beta, steps)
        out.reshape(-1, rows)[:] = p.reshape(rows, -1).T
        return out
    order = np.argsort(local_rows, kind="stable")
    bounds = np.searchsorted(local_rows[order], np.arange(rows + 1))
    p = start[order]
    _ascend(counts[order], p, bounds, alpha, beta, steps)
    out[order] = p
    return out


def _ascend(c: np.ndarray, p: np.ndarray, bounds: np.ndarray, alpha: float, beta: float, steps: int) -> None:
    """Every row (entries bounds[r]:bounds[r + 1] of c and p) at once, in place on p, in rounds
    (see the module's docstring)."""
    widths = np.diff(bounds)
    limit = np.maximum(steps, WORK // np.maximum(widths, 1))
    gradient, q = np.zeros(len(p)), np.empty(len(p))
    s = _start_rows(c, p, bounds, FLOOR, q)
    log_q, decay_q = np.log(p), np.exp(p * (-1.0 / beta))
    value = _first_values(c, p, log_q, decay_q, bounds, alpha, beta, gradient)
    decay = decay_q.copy()
    q[:] = p
    going = widths > 0
    taken, failed = np.zeros(len(widths), np.int64), np.zeros(len(widths), np.int64)
    while going.any():
        _project_rows(p, gradient, s, bounds, going, FLOOR, q)
        np.log(q, out=log_q)
        np.multiply(q, -1.0 / beta, out=decay_q)
        np.exp(decay_q, out=decay_q)
        if not _judge_rows(c, p, q, log_q, decay_q, decay, gradient, bounds, alpha, beta, s, value, taken, failed,
                           limit, going):
            break


def maximize_row(counts: np.ndarray, alpha: float, beta: float, steps: int = 1000) -> np.ndarray:
    """One row solved from its normalised counts (up to `steps` steps: to convergence)."""
    out = np.empty(len(counts))
    return maximize_table(counts, None, None, 1, alpha, beta, out, steps)
