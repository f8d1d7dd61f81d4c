"""The M-step of a featured sparse table over word pairs (emc/runtime/blocks/pair_features.py), by
block-coordinate ascent: the rows' own weights w_r, then the shared pair weights u, in turns.

Why not one optimiser over all the weights: the few shared weights tie every row, so the joint
problem is one vector of ~490k weights on the Hansards, and scipy's L-BFGS-B spent more time in
its own bookkeeping over that vector (90 ms an iteration) than in the objective; an M-step cost
4 to 10 s. Given u, the rows are independent small problems, each solved here by a compiled
Newton method (conjugate gradients on Hessian-vector products, preconditioned by the Hessian's
diagonal, so a row of thousands of entries never forms its Hessian); given w, the k shared
weights (3 in the reference specs) take Newton steps with their exact k x k Hessian, summed in
one compiled pass over the entries. Between the two, PairFeaturedBlock._rebalance moves weight
between u and the identity weights along the direction that leaves every score unchanged, which
block-coordinate steps alone follow slowly.

Every step is a backtracking line search that only accepts Armijo's sufficient decrease of its
block's loss (the rebalancing leaves the likelihood and lowers the penalty), and the loss is the
sum of the rows' and the shared part's: the M-step never lowers the regularised expected
log-likelihood (a generalised EM step).

Notation, per row r with entries e (row by row in the block): score s_e = x_e . w_r + psi_e . u,
P_e = softmax over the row, C_e the expected count, N_r = sum_e C_e. The loss minimised is
    -sum_e C_e log P_e + kappa/2 |w|^2 + kappa/2 |u|^2,
its gradient in w_r is X_r^T (N_r P - C) + kappa w_r and its Hessian times v is
    X_r^T N_r (P * (X_r v) - P (P . X_r v)) + kappa v.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import njit

from emc.structures.buffers import copy_into

ARMIJO = 1e-4          # sufficient decrease: loss(x + a d) <= loss(x) + ARMIJO * a * g.d
MAX_BACKTRACKS = 30    # then the block keeps its weights
CG_ITERATIONS = 5      # conjugate-gradient iterations per Newton direction of a row
CG_TOLERANCE = 0.1     # stop them when the residual is this fraction of the gradient


@njit(cache=True)
def _row_loss(a, b, indptr, local, offsets, counts, kappa, weights, probabilities):
    """The loss of row entries a..b-1 (see the module doc) for the row's weights (local column
    ids: entry e has columns local[indptr[e]:indptr[e+1]]); its probabilities go into
    `probabilities` (one per entry of the row)."""
    top = -np.inf
    for e in range(a, b):
        s = offsets[e]
        for k in range(indptr[e], indptr[e + 1]):
            s += weights[local[k]]
        probabilities[e - a] = s
        top = max(top, s)
    mass = 0.0
    for e in range(b - a):
        mass += np.exp(probabilities[e] - top)
    log_z = top + np.log(mass)
    loss = 0.0
    for e in range(a, b):
        loss -= counts[e] * (probabilities[e - a] - log_z)
        probabilities[e - a] = np.exp(probabilities[e - a] - log_z)
    for c in range(weights.size):
        loss += 0.5 * kappa * weights[c] * weights[c]
    return loss


@njit(cache=True)
def _row_gradient(a, b, indptr, local, counts, total, kappa, weights, probabilities, gradient):
    for c in range(weights.size):
        gradient[c] = kappa * weights[c]
    for e in range(a, b):
        residual = total * probabilities[e - a] - counts[e]
        for k in range(indptr[e], indptr[e + 1]):
            gradient[local[k]] += residual


@njit(cache=True)
def _row_hessian_times(a, b, indptr, local, total, kappa, probabilities, v, projected, out):
    """out = H v for the row's Hessian at `probabilities`; `projected` is scratch (one per entry)."""
    mean = 0.0
    for e in range(a, b):
        s = 0.0
        for k in range(indptr[e], indptr[e + 1]):
            s += v[local[k]]
        projected[e - a] = s
        mean += probabilities[e - a] * s
    for c in range(v.size):
        out[c] = kappa * v[c]
    for e in range(a, b):
        weight = total * probabilities[e - a] * (projected[e - a] - mean)
        for k in range(indptr[e], indptr[e + 1]):
            out[local[k]] += weight


@njit(cache=True)
def _diagonal(a, b, indptr, local, total, kappa, probabilities, out):
    """An estimate of the Hessian's diagonal, sum over a column's entries of N P (1 - P), plus
    kappa (exact for identity columns), floored: the conjugate gradients' preconditioner."""
    out[:] = kappa
    for e in range(a, b):
        p = probabilities[e - a]
        for k in range(indptr[e], indptr[e + 1]):
            out[local[k]] += total * p * (1.0 - p)
    floor = 1e-12 * max(out.max(), 1.0)
    for c in range(out.size):
        out[c] = max(out[c], floor)


@njit(cache=True)
def _newton_direction(a, b, indptr, local, total, kappa, probabilities, gradient, direction):
    """direction ~ -H^-1 g by conjugate gradients from 0, preconditioned by the Hessian's
    diagonal (with identity features it is all of H but a rank-one term, which CG then takes in
    an iteration or two); steepest descent if the first curvature is not positive (a row whose
    weights carry no count, without a penalty)."""
    size = gradient.size
    diagonal, product, projected = np.empty(size), np.empty(size), np.empty(b - a)
    _diagonal(a, b, indptr, local, total, kappa, probabilities, diagonal)
    residual = -gradient
    preconditioned = residual / diagonal
    conjugate = preconditioned.copy()
    direction[:] = 0.0
    rz = np.dot(residual, preconditioned)
    stop = CG_TOLERANCE * CG_TOLERANCE * np.dot(gradient, gradient)
    for i in range(CG_ITERATIONS):
        _row_hessian_times(a, b, indptr, local, total, kappa, probabilities, conjugate, projected, product)
        curvature = np.dot(conjugate, product)
        if curvature <= 1e-300:
            if i == 0:
                copy_into(direction, -gradient)
            return
        alpha = rz / curvature
        direction += alpha * conjugate
        residual -= alpha * product
        if np.dot(residual, residual) <= stop:
            return
        copy_into(preconditioned, residual / diagonal)
        new_rz = np.dot(residual, preconditioned)
        conjugate *= new_rz / rz
        conjugate += preconditioned
        rz = new_rz


@njit(cache=True)
def _maximize_row(a, b, indptr, local, offsets, counts, kappa, weights, iterations, gtol):
    """At most `iterations` Newton steps on one row's weights (in place), each accepted only with
    Armijo's sufficient decrease of the row's loss; stop when every gradient entry is at most
    gtol per count."""
    size = weights.size
    total = 0.0
    for e in range(a, b):
        total += counts[e]
    scale = max(total, 1.0)
    probabilities, trial_probabilities = np.empty(b - a), np.empty(b - a)
    gradient, direction, trial = np.empty(size), np.empty(size), np.empty(size)
    loss = _row_loss(a, b, indptr, local, offsets, counts, kappa, weights, probabilities)
    for _ in range(iterations):
        _row_gradient(a, b, indptr, local, counts, total, kappa, weights, probabilities, gradient)
        if np.abs(gradient).max() <= gtol * scale:
            return
        _newton_direction(a, b, indptr, local, total, kappa, probabilities, gradient, direction)
        slope = np.dot(gradient, direction)
        if slope >= 0.0:
            return
        step, accepted = 1.0, False
        for _ in range(MAX_BACKTRACKS):
            copy_into(trial, weights + step * direction)
            trial_loss = _row_loss(a, b, indptr, local, offsets, counts, kappa, trial, trial_probabilities)
            if trial_loss <= loss + ARMIJO * step * slope:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            return
        copy_into(weights, trial)
        copy_into(probabilities, trial_probabilities)
        loss = trial_loss


def maximize_rows(entry_ptr: np.ndarray, indptr: np.ndarray, local: np.ndarray, column_ptr: np.ndarray,
                  columns: np.ndarray, offsets: np.ndarray, counts: np.ndarray, kappa: float, weights: np.ndarray,
                  iterations: int, gtol: float) -> None:
    """_maximize_row for every row r: its entries entry_ptr[r]..entry_ptr[r+1]-1, its weights
    weights[columns[column_ptr[r]:column_ptr[r+1]]] (updated in place), the pair features'
    score of each entry in `offsets`. The rows are cut into one run per numba thread, of about
    equal entries, each run on a thread of its own (maximize_row_run releases the GIL; rows share
    no weights). Not a numba prange loop: that parallel loop compiled for longer than the Newton
    method it runs (numba links its callees into it and optimises them again)."""
    rows = entry_ptr.size - 1
    runs = max(1, min(numba.get_num_threads(), rows))
    bounds = np.searchsorted(entry_ptr, entry_ptr[-1] * np.arange(runs + 1) / runs, side="left")
    bounds[0], bounds[-1] = 0, rows
    bounds = np.maximum.accumulate(bounds)

    def run(q: int) -> None:
        maximize_row_run(bounds[q], bounds[q + 1], entry_ptr, indptr, local, column_ptr, columns, offsets, counts,
                         kappa, weights, iterations, gtol)

    if runs == 1:
        run(0)
        return
    with ThreadPoolExecutor(runs) as threads:
        list(threads.map(run, range(runs)))  # list(): a run's error is raised here


@njit(cache=True, nogil=True)
def maximize_row_run(first, last, entry_ptr, indptr, local, column_ptr, columns, offsets, counts, kappa, weights,
                     iterations, gtol):
    """maximize_rows on rows first..last-1."""
    for r in range(first, last):
        own = columns[column_ptr[r]:column_ptr[r + 1]]
        if own.size:
            row_weights = weights[own]
            _maximize_row(entry_ptr[r], entry_ptr[r + 1], indptr, local, offsets, counts, kappa, row_weights,
                          iterations, gtol)
            for i in range(own.size):  # a loop, as copy_into (emc/structures/buffers.py)
                weights[own[i]] = row_weights[i]


@njit(cache=True)
def shared_terms(entry_ptr, scores, pairs, counts, gradient, hessian):
    """The expected log-likelihood sum_e C_e log P_e for entry scores (the rows' part plus the
    pair features' part), and into `gradient` and `hessian` its gradient in the shared weights,
    pairs^T (C - N P), and its negated Hessian, sum_r N_r (pairs_r^T diag(P) pairs_r - m_r m_r^T)
    with m_r = pairs_r^T P (pairs: entries x k)."""
    k = pairs.shape[1]
    gradient[:] = 0.0
    hessian[:] = 0.0
    mean = np.empty(k)
    value = 0.0
    for r in range(entry_ptr.size - 1):
        a, b = entry_ptr[r], entry_ptr[r + 1]
        if a == b:
            continue
        top, total = -np.inf, 0.0
        for e in range(a, b):
            top = max(top, scores[e])
            total += counts[e]
        mass = 0.0
        for e in range(a, b):
            mass += np.exp(scores[e] - top)
        log_z = top + np.log(mass)
        mean[:] = 0.0
        for e in range(a, b):
            p = np.exp(scores[e] - log_z)
            value += counts[e] * (scores[e] - log_z)
            for i in range(k):
                if pairs[e, i] != 0.0:
                    gradient[i] += pairs[e, i] * (counts[e] - total * p)
                    mean[i] += pairs[e, i] * p
                    for j in range(k):
                        hessian[i, j] += total * p * pairs[e, i] * pairs[e, j]
        for i in range(k):
            for j in range(k):
                hessian[i, j] -= total * mean[i] * mean[j]
    return value
