"""Pieces of the symmetry constraint's projection (`constraint NAME : E[a] agree`, Ganchev, Graca &
Taskar 2008; the solver is emc/runtime/symmetry.py), over all pairs at once.

Each pair's duals lie end to end in one vector x: first lambda (l x m, source word i and target
word j of the forward direction, unbounded), then, when the spec also bounds each position's
expected links (bijectivity), mu_f (l, >= 0, the forward direction's source positions) and mu_r (m,
>= 0, the reverse direction's). The forward direction's link (i, j) is scored times
exp(-lambda_ij - sign mu_f_i), the reverse direction's link (j, i) times exp(+lambda_ij - sign
mu_r_j); f(x) = log Z_f + log Z_r + sign b (sum mu_f + sum mu_r) is minimised, whose gradient in
lambda_ij is E_r[link] - E_f[link]. Posteriors are those of the generated posterior_example:
the forward one P[j * (l + null) + i], the reverse one R[i * (m + null) + j].
"""
import numpy as np
from numba import njit

from emc.structures.alignment.projection import MAX_DUAL


@njit(cache=True)
def write_shifts(x, x_at, shift_at, lengths, pairs, bijective, sign, forward, reverse):
    """Both directions' link shifts of the pairs from their duals."""
    for k in pairs:
        l, m = lengths[k, 0], lengths[k, 1]
        at, out = x_at[k], shift_at[k]
        for i in range(l):
            mu = x[at + l * m + i] if bijective else 0.0
            for j in range(m):
                forward[out + i * m + j] = -x[at + i * m + j] - sign * mu
        for j in range(m):
            mu = x[at + l * m + l + j] if bijective else 0.0
            for i in range(l):
                reverse[out + j * l + i] = x[at + i * m + j] - sign * mu


@njit(cache=True)
def gradients(forward, forward_at, reverse, reverse_at, pairs, x_at, lengths, null_f, null_r, bijective, sign,
              bound, grad, disagreement, excess):
    """grad (at each pair's x_at) from the pairs' posteriors (the q-th pair's at forward_at[q],
    reverse_at[q]); per pair, the summed |E_f[link] - E_r[link]| and the expected links beyond the
    bound summed over both directions' positions."""
    for q in range(pairs.shape[0]):
        k = pairs[q]
        l, m = lengths[k, 0], lengths[k, 1]
        wf, wr = l + null_f, m + null_r
        p, r, at = forward[forward_at[q]:], reverse[reverse_at[q]:], x_at[k]
        gap, over = 0.0, 0.0
        for i in range(l):
            for j in range(m):
                g = r[i * wr + j] - p[j * wf + i]
                grad[at + i * m + j] = g
                gap += abs(g)
        if bijective:
            for i in range(l):
                n = 0.0
                for j in range(m):
                    n += p[j * wf + i]
                grad[at + l * m + i] = -sign * (n - bound)
                over += max(0.0, sign * (n - bound))
            for j in range(m):
                n = 0.0
                for i in range(l):
                    n += r[i * wr + j]
                grad[at + l * m + l + j] = -sign * (n - bound)
                over += max(0.0, sign * (n - bound))
        disagreement[k], excess[k] = gap, over


@njit(cache=True)
def trial_points(x, grad, length, x_at, lengths, pairs, out) -> np.ndarray:
    """out = x - length grad for the pairs (lambda within +-MAX_DUAL, mu within [0, MAX_DUAL]);
    whether each pair's point moved."""
    moved = np.zeros(pairs.shape[0], np.bool_)
    for q in range(pairs.shape[0]):
        k = pairs[q]
        links = lengths[k, 0] * lengths[k, 1]
        for v in range(x_at[k], x_at[k + 1]):
            low = -MAX_DUAL if v - x_at[k] < links else 0.0
            out[v] = min(max(x[v] - length[k] * grad[v], low), MAX_DUAL)
            moved[q] = moved[q] or out[v] != x[v]
    return moved


@njit(cache=True)
def pair_dots(a, b, c, x_at, pairs) -> np.ndarray:
    """Per pair, sum over its duals of a (b - c)."""
    out = np.zeros(pairs.shape[0])
    for q in range(pairs.shape[0]):
        k = pairs[q]
        for v in range(x_at[k], x_at[k + 1]):
            out[q] += a[v] * (b[v] - c[v])
    return out


@njit(cache=True)
def step_terms(x, trial, grad, trial_grad, x_at, pairs):
    """Per pair, Barzilai-Borwein's s.y and |s|^2, s the step trial - x and y the change of the
    gradient trial_grad - grad."""
    curved, squared = np.zeros(pairs.shape[0]), np.zeros(pairs.shape[0])
    for q in range(pairs.shape[0]):
        k = pairs[q]
        for v in range(x_at[k], x_at[k + 1]):
            step = trial[v] - x[v]
            curved[q] += step * (trial_grad[v] - grad[v])
            squared[q] += step * (trial[v] - x[v])
    return curved, squared


@njit(cache=True)
def mu_sums(x, x_at, lengths, pairs):
    """Per pair, the sum of its position duals (mu_f and mu_r, after its l m link duals)."""
    out = np.zeros(pairs.shape[0])
    for q in range(pairs.shape[0]):
        k = pairs[q]
        for v in range(x_at[k] + lengths[k, 0] * lengths[k, 1], x_at[k + 1]):
            out[q] += x[v]
    return out


@njit(cache=True)
def has_duals(x, x_at):
    """Per pair, whether any of its duals is not zero."""
    out = np.zeros(x_at.shape[0] - 1, np.bool_)
    for k in range(out.shape[0]):
        for v in range(x_at[k], x_at[k + 1]):
            if x[v] != 0.0:
                out[k] = True
                break
    return out


@njit(cache=True)
def take(source, target, x_at, pairs):
    """The pairs' duals (or gradients) of source into target."""
    for k in pairs:
        target[x_at[k]:x_at[k + 1]] = source[x_at[k]:x_at[k + 1]]


@njit(cache=True)
def converged(grad, x, x_at, lengths, pairs, tolerance) -> np.ndarray:
    """Per pair: the directions agree on every link to within `tolerance`, and each position meets
    the bound to within it, tight where its mu > 0 (as projection.converged)."""
    out = np.ones(pairs.shape[0], np.bool_)
    for q in range(pairs.shape[0]):
        k = pairs[q]
        links = lengths[k, 0] * lengths[k, 1]
        for v in range(x_at[k], x_at[k + 1]):
            if v - x_at[k] < links:
                bad = abs(grad[v]) > tolerance
            else:
                bad = -grad[v] > tolerance or (x[v] > 0.0 and -grad[v] < -tolerance)
            if bad:
                out[q] = False
                break
    return out
