"""The M-step of a featured block, compiled: a softmax over sparse features per context row, its
regularised expected log-likelihood, and limited-memory BFGS (Nocedal & Wright 2006, algorithms
7.4-7.5) on each row's weights.

Why row by row: the features are conjoined with the row and the l2 penalty is a sum over
entries, so the objective is a sum of independent problems, one per row. A row's weights (40k
for a 45-state HMM over 19k words) and its L-BFGS memory fit in the cache, where the joint
problem over all 1.8M weights streams every memory vector from RAM on each iteration (scipy's
L-BFGS-B took 60 ms per iteration there, twice the objective). Rows also get their own line
search and stop when they have converged, and they run in parallel.

The line search only accepts a step with Armijo's sufficient decrease, so every iterate lowers
the row's objective: the M-step never lowers the objective it maximises (a generalised EM step).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

ARMIJO = 1e-4          # sufficient decrease: f(x + a d) <= f(x) + ARMIJO * a * g.d
MAX_BACKTRACKS = 30    # then the row keeps the best point found so far


def feature_rows(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray) -> tuple:
    """The kernels' form of an (outcome x feature) CSR matrix: (indices, values, spill_ptr,
    spill_indices, spill_values). Each outcome's first `width` entries form a row of a dense
    (outcomes x width) pair of arrays, padded with value 0 (at feature 0, which then adds
    nothing); the entries past `width` spill into CSR arrays. `width` is the entry count 90% of
    the outcomes stay within, so a few outcomes with many entries (word vectors for some words
    only) cost no padding. Why: a loop of fixed length over a row unrolls, where a CSR row's
    bounds are read per outcome: one objective evaluation on CoNLL-2000 (45 states, 19k words, 8
    features each) takes 15.6 ms instead of 20.9."""
    counts = np.diff(indptr)
    width = int(np.sort(counts)[int(0.9 * (len(counts) - 1))]) if len(counts) else 0
    kept = np.minimum(counts, width)
    rows = np.repeat(np.arange(len(counts)), kept)
    slots = np.arange(len(rows)) - np.repeat(np.cumsum(kept) - kept, kept)
    taken = np.repeat(indptr[:-1], kept) + slots
    fixed_indices, fixed_values = np.zeros((len(counts), width), np.int64), np.zeros((len(counts), width))
    fixed_indices[rows, slots], fixed_values[rows, slots] = indices[taken], values[taken]
    spill = np.ones(len(indices), bool)
    spill[taken] = False
    spill_ptr = np.concatenate([[0], np.cumsum(counts - kept)]).astype(np.int64)
    return (fixed_indices, fixed_values, spill_ptr, indices[spill].astype(np.int64),
            values[spill].astype(float))


@njit(inline="always")
def _score(features, weights, v):
    fixed_indices, fixed_values, spill_ptr, spill_indices, spill_values = features
    at, times = fixed_indices[v], fixed_values[v]
    s = 0.0
    for k in range(at.shape[0]):
        s += times[k] * weights[at[k]]
    for k in range(spill_ptr[v], spill_ptr[v + 1]):
        s += spill_values[k] * weights[spill_indices[k]]
    return s


@njit(inline="always")
def _add_gradient(features, gradient, v, residual):
    fixed_indices, fixed_values, spill_ptr, spill_indices, spill_values = features
    at, times = fixed_indices[v], fixed_values[v]
    for k in range(at.shape[0]):
        gradient[at[k]] += times[k] * residual
    for k in range(spill_ptr[v], spill_ptr[v + 1]):
        gradient[spill_indices[k]] += spill_values[k] * residual


@njit(cache=True)
def row_objective(features, counts, kappa, weights, gradient, scores):
    """sum_v counts[v] log P(v) - kappa/2 |weights|^2 with P the softmax over outcomes v of
    the sum of their features' weights times values (`features`: feature_rows); its gradient
    with respect to weights goes into `gradient`, `scores` is scratch (one per outcome)."""
    outcomes = counts.size
    top, value, total = -np.inf, 0.0, 0.0
    for v in range(outcomes):
        s = _score(features, weights, v)
        scores[v] = s
        value += counts[v] * s
        total += counts[v]
        top = max(top, s)
    mass = 0.0
    for v in range(outcomes):
        scores[v] = np.exp(scores[v] - top)
        mass += scores[v]
    value -= total * (top + np.log(mass))
    penalty = 0.0
    for f in range(weights.size):
        penalty += weights[f] * weights[f]
        gradient[f] = -kappa * weights[f]
    share = total / mass
    for v in range(outcomes):
        residual = counts[v] - scores[v] * share  # counts - P * total
        if residual != 0.0:
            _add_gradient(features, gradient, v, residual)
    return value - 0.5 * kappa * penalty


@njit(cache=True)
def _negated(features, counts, kappa, scale, weights, gradient, scores):
    """The row objective to minimise, per count (so that tolerances mean the same on any corpus)."""
    value = row_objective(features, counts, kappa, weights, gradient, scores)
    for f in range(gradient.size):
        gradient[f] = -gradient[f] / scale
    return -value / scale


@njit(cache=True)
def _dot(a, b):
    # A plain loop (numba's np.dot calls BLAS, whose threads cost more than a cached 40k-entry
    # dot) with four partial sums: one running sum waits on each add's latency, four overlap.
    # The order is fixed by the length alone, so results never depend on memory alignment.
    s0 = s1 = s2 = s3 = 0.0
    n = a.size - a.size % 4
    for i in range(0, n, 4):
        s0 += a[i] * b[i]
        s1 += a[i + 1] * b[i + 1]
        s2 += a[i + 2] * b[i + 2]
        s3 += a[i + 3] * b[i + 3]
    for i in range(n, a.size):
        s0 += a[i] * b[i]
    return (s0 + s1) + (s2 + s3)


@njit(cache=True)
def _largest(a):
    """max |a[i]|, without the temporary np.abs(a) makes."""
    out = 0.0
    for i in range(a.size):
        out = max(out, abs(a[i]))
    return out


@njit(cache=True)
def _direction(gradient, steps, changes, inverse_curvatures, newest, stored, out):
    """out = -H g by the two-loop recursion over the `stored` newest pairs, H0 = (s.y / y.y) I."""
    memory, size = steps.shape
    out[:] = gradient
    alphas = np.empty(stored)
    for j in range(stored):
        k = (newest - j) % memory
        alphas[j] = inverse_curvatures[k] * _dot(steps[k], out)
        for i in range(size):
            out[i] -= alphas[j] * changes[k, i]
    if stored:
        scale = 1.0 / (inverse_curvatures[newest] * _dot(changes[newest], changes[newest]))
        for i in range(size):
            out[i] *= scale
    for j in range(stored - 1, -1, -1):
        k = (newest - j) % memory
        coefficient = alphas[j] - inverse_curvatures[k] * _dot(changes[k], out)
        for i in range(size):
            out[i] += coefficient * steps[k, i]
    for i in range(size):
        out[i] = -out[i]


@njit(cache=True)
def maximize_row(features, counts, kappa, weights, max_iterations, memory, gtol, ftol):
    """Improve one row's `weights` in place by at most `max_iterations` L-BFGS iterations; stop
    early when every gradient entry (per count) is at most gtol or an iteration's relative
    decrease falls to ftol."""
    size = weights.size
    scale = max(counts.sum(), 1.0)
    scores = np.empty(counts.size)
    gradient, direction = np.empty(size), np.empty(size)
    trial, trial_gradient = np.empty(size), np.empty(size)
    steps, changes = np.empty((memory, size)), np.empty((memory, size))
    inverse_curvatures = np.empty(memory)
    stored, newest = 0, -1
    value = _negated(features, counts, kappa, scale, weights, gradient, scores)
    for _ in range(max_iterations):
        if _largest(gradient) <= gtol:
            break
        _direction(gradient, steps, changes, inverse_curvatures, newest, stored, direction)
        slope = _dot(gradient, direction)
        if slope >= 0.0:  # stale curvature pairs: restart from steepest descent
            stored = 0
            for i in range(size):
                direction[i] = -gradient[i]
            slope = -_dot(gradient, gradient)
        # the first step has no curvature to scale it: take one of unit length
        step = 1.0 if stored else 1.0 / max(np.sqrt(-slope), 1e-300)
        accepted = False
        for _ in range(MAX_BACKTRACKS):
            for i in range(size):
                trial[i] = weights[i] + step * direction[i]
            trial_value = _negated(features, counts, kappa, scale, trial, trial_gradient, scores)
            if np.isfinite(trial_value) and trial_value <= value + ARMIJO * step * slope:
                accepted = True
                break
            if np.isfinite(trial_value):  # the minimiser of the quadratic through what is known
                quadratic = -slope * step * step / (2.0 * (trial_value - value - slope * step))
                step = min(max(quadratic, 0.1 * step), 0.5 * step)
            else:
                step *= 0.1
        if not accepted:
            break
        curvature, change = 0.0, 0.0  # s.y and y.y of the step s and the gradient's change y
        for i in range(size):
            y = trial_gradient[i] - gradient[i]
            curvature += (trial[i] - weights[i]) * y
            change += y * y
        if curvature > 1e-12 * change:  # keeps the estimate positive definite
            newest = (newest + 1) % memory
            for i in range(size):
                steps[newest, i] = trial[i] - weights[i]
                changes[newest, i] = trial_gradient[i] - gradient[i]
            inverse_curvatures[newest] = 1.0 / curvature
            stored = min(stored + 1, memory)
        decrease = value - trial_value
        weights[:] = trial
        gradient[:] = trial_gradient
        value = trial_value
        if decrease <= ftol * max(abs(value), 1.0):
            break


@njit(cache=True, parallel=True)
def maximize_rows(features, counts, kappa, weights, max_iterations, memory, gtol, ftol):
    """maximize_row for every row r: counts[r] (outcomes) and weights[r] (features), in place."""
    for r in prange(counts.shape[0]):
        maximize_row(features, counts[r], kappa, weights[r], max_iterations, memory, gtol, ftol)


@njit(cache=True)
def log_probabilities(features, weights, out):
    """out[v, r] = log P(v | r): each row's softmax over outcomes v, in logs, for weights (rows x
    features)."""
    outcomes = out.shape[0]
    scores = np.empty(outcomes)
    for r in range(weights.shape[0]):
        top = -np.inf
        for v in range(outcomes):
            scores[v] = _score(features, weights[r], v)
            top = max(top, scores[v])
        mass = 0.0
        for v in range(outcomes):
            mass += np.exp(scores[v] - top)
        log_z = top + np.log(mass)
        for v in range(outcomes):
            out[v, r] = scores[v] - log_z


@njit(cache=True)
def objective(features, counts, kappa, weights, gradient):
    """The sum of row_objective over rows (counts: rows x outcomes, weights and gradient:
    rows x features)."""
    scores = np.empty(counts.shape[1])
    total = 0.0
    for r in range(counts.shape[0]):
        total += row_objective(features, counts[r], kappa, weights[r], gradient[r], scores)
    return total
