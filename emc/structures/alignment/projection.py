"""Pieces of the per-example projection onto a bound on the expected links of each source position
(`constraint NAME : E[count per a.source] <= b`, posterior regularization; the loop itself is in the
generated glue, templates/alignment.py.j2, because it calls the spec's own DP).

With psi_i = sign (n_i - b), n_i the number of target words linked to source position i, the
projection of p(a | x) onto E_q[psi_i] <= 0 is q(a) ~ p(a | x) exp(-sum_i lambda_i psi_i(a)), whose
duals lambda >= 0 minimise f(lambda) = log Z(scores with row i times exp(-sign lambda_i)) + sign b
sum(lambda); the gradient of f is -E_q[psi]. NULL links are not counted.
"""
import numpy as np
from numba import njit

ARMIJO = 1e-4  # the share of the linear decrease a step must achieve
SHRINK = 0.25  # a refused step is this much shorter at the next try
MAX_DUAL = 50.0  # a bound no alignment can meet shifts a link's score by at most e^-50


@njit(cache=True)
def shift(scores, lam, sign, out):
    """out[i, j] = scores[i, j] exp(-sign lam[i]) for the source rows; the NULL row as it is."""
    width, m = scores.shape
    for i in range(width):
        factor = np.exp(-sign * lam[i]) if i < lam.shape[0] else 1.0
        for j in range(m):
            out[i, j] = scores[i, j] * factor


@njit(cache=True)
def shift_links(scores, shifts):
    """scores[i, j] times exp(shifts[i * m + j]) for the source rows (the symmetry constraint's
    shifts of one direction, emc/runtime/symmetry.py); the NULL row as it is."""
    m = scores.shape[1]
    for i in range(shifts.shape[0] // m):
        for j in range(m):
            scores[i, j] *= np.exp(shifts[i * m + j])


@njit(cache=True)
def gradient(posterior, bound, sign, out):
    """out[i] = d f / d lambda_i = -E_q[psi_i] = -sign (expected links of position i - bound)."""
    for i in range(out.shape[0]):
        out[i] = -sign * (posterior[i].sum() - bound)


@njit(cache=True)
def excess(grad):
    """The expected links beyond the bound, summed over the positions (0 when it holds)."""
    total = 0.0
    for g in grad:
        total += max(0.0, -g)
    return total


@njit(cache=True)
def converged(grad, lam, tolerance):
    """Each position meets the bound to within `tolerance` links, and one with lambda > 0 is tight
    to within it (the projected gradient is small)."""
    for i in range(grad.shape[0]):
        if -grad[i] > tolerance or (lam[i] > 0.0 and -grad[i] < -tolerance):
            return False
    return True


@njit(cache=True)
def trial_point(lam, grad, length, out):
    """out = lam - length grad, clipped to [0, MAX_DUAL]; whether it moved."""
    moved = False
    for i in range(lam.shape[0]):
        out[i] = min(max(lam[i] - length * grad[i], 0.0), MAX_DUAL)
        moved = moved or out[i] != lam[i]
    return moved
