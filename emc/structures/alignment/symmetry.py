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
import functools

import numpy as np
from numba import njit, prange, types

from emc.codegen.abi import DERIVED, INTS, LAYOUT, META, PARAMS, POSTERIOR_FUNCTION
from emc.structures.alignment.projection import MAX_DUAL
from emc.structures.buffers import copy_into


def _evaluate_pairs(posterior_f, ints_f, layout_f, meta_f, params_f, derived_f, base_f,
                    posterior_r, ints_r, layout_r, meta_r, params_r, derived_r, base_r,
                    pairs, x_at, shift_at, lengths, null_f, null_r, bijective, sign, bound,
                    stepping, x, grad, length, point, f, point_grad, disagreement, excess, moved, dots, curved, squared):
    """Each pair of `pairs` at `point`, pair by pair in parallel: its link shifts written into each
    direction's derived vector (from base_f, base_r on), both directions' posterior passes, f[k]
    (log Z_f + log Z_r + sign b sum(mu)), its gradient (into point_grad) and its disagreement and
    excess, as write_shifts, the directions' posterior passes and gradients give them. With
    `stepping`, the point is first the projected gradient step from x (its gradient grad, each
    pair's step length) as trial_points takes it (a pair that does not move, moved[q] False, is
    not evaluated), and each evaluated pair's Armijo dot, s.y and |s|^2 follow (step_terms); the
    q-th entries of those are pairs[q]'s. (Every array it writes is an argument of its own: numba
    loses a parallel loop's writes into an array handed over in a tuple.)"""
    for q in prange(pairs.shape[0]):
        k = pairs[q]
        l, m = lengths[k, 0], lengths[k, 1]
        a, b = x_at[k], x_at[k + 1]
        going = True
        if stepping:
            going = _pair_trial(x, grad, length[k], a, b, a + l * m, point)
            moved[q] = going
        if going:
            _pair_shifts(point, a, l, m, bijective, sign, derived_f[base_f + shift_at[k]:],
                         derived_r[base_r + shift_at[k]:])
            p, r = np.empty(m * (l + null_f)), np.empty(l * (m + null_r))
            log_z = posterior_f(k, ints_f, layout_f, meta_f, params_f, derived_f, p)
            log_z += posterior_r(k, ints_r, layout_r, meta_r, params_r, derived_r, r)
            if bijective:
                log_z += sign * bound * _sum(point, a + l * m, b)
            f[k] = log_z
            disagreement[k], excess[k] = _pair_gradient(p, r, l, m, null_f, null_r, bijective, sign, bound,
                                                        point_grad[a:b])
            if stepping:
                dots[q], curved[q], squared[q] = _pair_step_terms(x, point, grad, point_grad, a, b)


_I64, _F64 = types.int64[::1], types.float64[::1]
_DIRECTION = (POSTERIOR_FUNCTION, INTS, LAYOUT, META, PARAMS, DERIVED, types.int64)
_EVALUATE_SIGNATURE = types.void(*_DIRECTION, *_DIRECTION, _I64, _I64, _I64, types.int64[:, ::1], types.int64,
                                 types.int64, types.boolean, types.float64, types.float64, types.boolean,
                                 *[_F64] * 8, types.boolean[::1], _F64, _F64, _F64)


@functools.cache
def evaluate_pairs():
    """_evaluate_pairs compiled (or loaded from numba's cache) on first use: only a symmetric fit
    or decode in this process pays for it."""
    return njit(_EVALUATE_SIGNATURE, cache=True, parallel=True)(_evaluate_pairs)


# The same pieces one pair after another, for the posteriors computed elsewhere (a Dask cluster).
@njit(cache=True)
def write_shifts(x, x_at, shift_at, lengths, pairs, bijective, sign, forward, reverse):
    """Both directions' link shifts of the pairs from their duals."""
    for k in pairs:
        _pair_shifts(x, x_at[k], lengths[k, 0], lengths[k, 1], bijective, sign, forward[shift_at[k]:],
                     reverse[shift_at[k]:])


@njit(cache=True)
def gradients(forward, forward_at, reverse, reverse_at, pairs, x_at, lengths, null_f, null_r, bijective, sign,
              bound, grad, disagreement, excess):
    """grad (at each pair's x_at) from the pairs' posteriors (the q-th pair's at forward_at[q],
    reverse_at[q]); per pair, the summed |E_f[link] - E_r[link]| and the expected links beyond the
    bound summed over both directions' positions."""
    for q in range(pairs.shape[0]):
        k = pairs[q]
        disagreement[k], excess[k] = _pair_gradient(forward[forward_at[q]:], reverse[reverse_at[q]:], lengths[k, 0],
                                                    lengths[k, 1], null_f, null_r, bijective, sign, bound,
                                                    grad[x_at[k]:x_at[k + 1]])


@njit(cache=True)
def trial_points(x, grad, length, x_at, lengths, pairs, out) -> np.ndarray:
    """out = x - length grad for the pairs (lambda within +-MAX_DUAL, mu within [0, MAX_DUAL]);
    whether each pair's point moved."""
    moved = np.zeros(pairs.shape[0], np.bool_)
    for q in range(pairs.shape[0]):
        k = pairs[q]
        moved[q] = _pair_trial(x, grad, length[k], x_at[k], x_at[k + 1], x_at[k] + lengths[k, 0] * lengths[k, 1], out)
    return moved


@njit(cache=True)
def step_terms(x, trial, grad, trial_grad, x_at, pairs):
    """Per pair, Armijo's g.s, and Barzilai-Borwein's s.y and |s|^2: s the step trial - x, g the
    gradient at x and y its change trial_grad - grad."""
    dots, curved, squared = np.zeros(pairs.shape[0]), np.zeros(pairs.shape[0]), np.zeros(pairs.shape[0])
    for q in range(pairs.shape[0]):
        k = pairs[q]
        dots[q], curved[q], squared[q] = _pair_step_terms(x, trial, grad, trial_grad, x_at[k], x_at[k + 1])
    return dots, curved, squared


# One pair's pieces: its duals are x[a:b], the link duals first (to `links`).
@njit(cache=True)
def _pair_shifts(x, a, l, m, bijective, sign, forward, reverse):
    """The pair's link shifts (from forward[0], reverse[0]) from its duals."""
    for i in range(l):
        mu = x[a + l * m + i] if bijective else 0.0
        for j in range(m):
            forward[i * m + j] = -x[a + i * m + j] - sign * mu
    for j in range(m):
        mu = x[a + l * m + l + j] if bijective else 0.0
        for i in range(l):
            reverse[j * l + i] = x[a + i * m + j] - sign * mu


@njit(cache=True)
def _pair_gradient(p, r, l, m, null_f, null_r, bijective, sign, bound, grad):
    """The pair's gradient (grad: its slice) from its posteriors p (forward) and r (reverse); its
    summed disagreement and excess."""
    wf, wr = l + null_f, m + null_r
    gap, over = 0.0, 0.0
    for i in range(l):
        for j in range(m):
            g = r[i * wr + j] - p[j * wf + i]
            grad[i * m + j] = g
            gap += abs(g)
    if bijective:
        for i in range(l):
            n = 0.0
            for j in range(m):
                n += p[j * wf + i]
            grad[l * m + i] = -sign * (n - bound)
            over += max(0.0, sign * (n - bound))
        for j in range(m):
            n = 0.0
            for i in range(l):
                n += r[i * wr + j]
            grad[l * m + l + j] = -sign * (n - bound)
            over += max(0.0, sign * (n - bound))
    return gap, over


@njit(cache=True)
def _pair_trial(x, grad, length, a, b, links, out):
    """out[a:b] = x - length grad, clipped; whether it moved."""
    moved = False
    for v in range(a, b):
        low = -MAX_DUAL if v < links else 0.0
        out[v] = min(max(x[v] - length * grad[v], low), MAX_DUAL)
        moved = moved or out[v] != x[v]
    return moved


@njit(cache=True)
def _pair_step_terms(x, trial, grad, trial_grad, a, b):
    dot, curved, squared = 0.0, 0.0, 0.0
    for v in range(a, b):
        step = trial[v] - x[v]
        dot += grad[v] * (trial[v] - x[v])
        curved += step * (trial_grad[v] - grad[v])
        squared += step * (trial[v] - x[v])
    return dot, curved, squared


@njit(cache=True)
def _sum(values, start, stop):
    total = 0.0
    for v in range(start, stop):
        total += values[v]
    return total


@njit(cache=True)
def mu_sums(x, x_at, lengths, pairs):
    """Per pair, the sum of its position duals (mu_f and mu_r, after its l m link duals)."""
    out = np.empty(pairs.shape[0])
    for q in range(pairs.shape[0]):
        k = pairs[q]
        out[q] = _sum(x, x_at[k] + lengths[k, 0] * lengths[k, 1], x_at[k + 1])
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
    """The pairs' duals (or gradients) of source into target (copy_into: a slice assignment
    compiled a shape check, 1.7 s of a cold start)."""
    for k in pairs:
        copy_into(target[x_at[k]:x_at[k + 1]], source[x_at[k]:x_at[k + 1]])


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
