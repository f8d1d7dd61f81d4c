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


# exp by range reduction, x = k ln 2 + r with |r| <= ln 2 / 2, and a degree-13 Taylor polynomial
# of exp(r) (Cody & Waite's two-part ln 2 keeps r exact to the last bits): within 4e-16 relative
# of libm's exp over [-708, 0], and a loop that vectorises, where numba calls libm per element
# (7x the time: 15% of the M-step of the featured HMM on CoNLL-2000).
LOG2E = 1.4426950408889634
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
SMALLEST = -708.0  # exp(x) for x below is under the smallest normal double: taken as 0


@njit(cache=True, fastmath={"contract"})
def exp_shifted(scores, top, out):
    """out[v] = exp(scores[v] - top) for scores[v] <= top (finite), vectorised."""
    bits = out.view(np.int64)
    for v in range(scores.shape[0]):
        x = scores[v] - top
        kept = x >= SMALLEST
        x = max(x, SMALLEST)
        k = np.floor(x * LOG2E + 0.5)
        r = (x - k * LN2_HI) - k * LN2_LO
        p = 1.0 / 479001600.0
        p = 1.0 / 39916800.0 + r * p
        p = 1.0 / 3628800.0 + r * p
        p = 1.0 / 362880.0 + r * p
        p = 1.0 / 40320.0 + r * p
        p = 1.0 / 5040.0 + r * p
        p = 1.0 / 720.0 + r * p
        p = 1.0 / 120.0 + r * p
        p = 1.0 / 24.0 + r * p
        p = 1.0 / 6.0 + r * p
        p = 0.5 + r * p
        p = 1.0 + r * p
        out[v] = 1.0 + r * p
        bits[v] += np.int64(k) << 52  # times 2^k: k added to the exponent (normal, as x >= SMALLEST)
        out[v] *= kept
    return out


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
    exp_shifted(scores, top, scores)
    mass = _sum(scores)
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
    factor = -1.0 / scale
    for f in range(gradient.size):
        gradient[f] *= factor
    return -value / scale


# The loops below over a row's weights (40k for a 45-state HMM) keep four partial sums or maxima:
# one running total waits on each addition's latency, and without reassoc (results must not
# depend on memory alignment) LLVM keeps that order. The order is fixed by the length alone.

@njit(cache=True)
def _dot(a, b):
    # A plain loop (numba's np.dot calls BLAS, whose threads cost more than a cached 40k-entry
    # dot) with four partial sums.
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
def _sum(a):
    s0 = s1 = s2 = s3 = 0.0
    n = a.size - a.size % 4
    for i in range(0, n, 4):
        s0 += a[i]
        s1 += a[i + 1]
        s2 += a[i + 2]
        s3 += a[i + 3]
    for i in range(n, a.size):
        s0 += a[i]
    return (s0 + s1) + (s2 + s3)


@njit(cache=True)
def _largest(a):
    """max |a[i]|, without the temporary np.abs(a) makes."""
    m0 = m1 = m2 = m3 = 0.0
    n = a.size - a.size % 4
    for i in range(0, n, 4):
        m0, m1 = max(m0, abs(a[i])), max(m1, abs(a[i + 1]))
        m2, m3 = max(m2, abs(a[i + 2])), max(m3, abs(a[i + 3]))
    for i in range(n, a.size):
        m0 = max(m0, abs(a[i]))
    return max(max(m0, m1), max(m2, m3))


@njit(cache=True)
def _pair(weights, trial, gradient, trial_gradient, step, change):
    """The step s = trial - weights and the gradient's change y into `step` and `change`, in one
    pass with s.y and y.y, which it returns."""
    c0 = c1 = c2 = c3 = 0.0
    q0 = q1 = q2 = q3 = 0.0
    n = weights.size - weights.size % 4
    for i in range(0, n, 4):
        s0, s1 = trial[i] - weights[i], trial[i + 1] - weights[i + 1]
        s2, s3 = trial[i + 2] - weights[i + 2], trial[i + 3] - weights[i + 3]
        y0, y1 = trial_gradient[i] - gradient[i], trial_gradient[i + 1] - gradient[i + 1]
        y2, y3 = trial_gradient[i + 2] - gradient[i + 2], trial_gradient[i + 3] - gradient[i + 3]
        step[i], step[i + 1], step[i + 2], step[i + 3] = s0, s1, s2, s3
        change[i], change[i + 1], change[i + 2], change[i + 3] = y0, y1, y2, y3
        c0, c1, c2, c3 = c0 + s0 * y0, c1 + s1 * y1, c2 + s2 * y2, c3 + s3 * y3
        q0, q1, q2, q3 = q0 + y0 * y0, q1 + y1 * y1, q2 + y2 * y2, q3 + y3 * y3
    for i in range(n, weights.size):
        step[i] = trial[i] - weights[i]
        change[i] = trial_gradient[i] - gradient[i]
        c0 += step[i] * change[i]
        q0 += change[i] * change[i]
    return (c0 + c1) + (c2 + c3), (q0 + q1) + (q2 + q3)


@njit(cache=True)
def _direction(gradient, steps, changes, inverse_curvatures, change_norms, ring, newest, stored, out):
    """out = -H g by the two-loop recursion over the `stored` newest pairs (pair j back from the
    newest in row ring[(newest - j) % memory] of steps and changes), H0 = (s.y / y.y) I."""
    memory = ring.shape[0]
    size = gradient.size
    out[:] = gradient
    alphas = np.empty(stored)
    for j in range(stored):
        k = ring[(newest - j) % memory]
        alphas[j] = inverse_curvatures[k] * _dot(steps[k], out)
        step = -alphas[j]
        for i in range(size):
            out[i] += step * changes[k, i]
    if stored:
        k = ring[newest]
        scale = 1.0 / (inverse_curvatures[k] * change_norms[k])
        for i in range(size):
            out[i] *= scale
    for j in range(stored - 1, -1, -1):
        k = ring[(newest - j) % memory]
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
    direction = np.empty(size)
    # the iterate and the trial point, and their gradients, swap roles when a step is taken
    # (no copies); `current` is the caller's array again at the end
    current, trial = weights, np.empty(size)
    swapped = False
    gradient, trial_gradient = np.empty(size), np.empty(size)
    # memory + 1 rows of pairs: the spare takes the next pair, and becomes the newest (ring[newest])
    # only if its curvature keeps the estimate positive definite
    steps, changes = np.empty((memory + 1, size)), np.empty((memory + 1, size))
    inverse_curvatures, change_norms = np.empty(memory + 1), np.empty(memory + 1)
    ring = np.arange(memory)
    spare = memory
    stored, newest = 0, -1
    value = _negated(features, counts, kappa, scale, current, gradient, scores)
    for _ in range(max_iterations):
        if _largest(gradient) <= gtol:
            break
        _direction(gradient, steps, changes, inverse_curvatures, change_norms, ring, newest, stored, direction)
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
                trial[i] = current[i] + step * direction[i]
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
        curvature, change = _pair(current, trial, gradient, trial_gradient, steps[spare], changes[spare])
        if curvature > 1e-12 * change:  # keeps the estimate positive definite
            newest = (newest + 1) % memory
            ring[newest], spare = spare, ring[newest]  # the oldest pair's row (if full) is the new spare
            inverse_curvatures[ring[newest]] = 1.0 / curvature
            change_norms[ring[newest]] = change
            stored = min(stored + 1, memory)
        decrease = value - trial_value
        current, trial = trial, current
        gradient, trial_gradient = trial_gradient, gradient
        swapped = not swapped
        value = trial_value
        if decrease <= ftol * max(abs(value), 1.0):
            break
    if swapped:
        weights[:] = current


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
    scores, shifted = np.empty(outcomes), np.empty(outcomes)
    for r in range(weights.shape[0]):
        top = -np.inf
        for v in range(outcomes):
            scores[v] = _score(features, weights[r], v)
            top = max(top, scores[v])
        log_z = top + np.log(_sum(exp_shifted(scores, top, shifted)))
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
