"""The compiled pieces of posterior sparsity's dual problem (emc/runtime/sparsity.py): the duals
lambda[token, state] are grouped by (word type, state), and each group lies in the capped simplex
{lambda >= 0, sum over the type's tokens <= sigma}. Arrays here hold the tokens in type order (the
corpus's tokens sorted by word type, stably), type w's being rows starts[w]:starts[w + 1], so that
a group is one strided column; every function runs over the types (or rows) in parallel.
"""
import numpy as np
from numba import njit, prange


@njit(cache=True)
def _capped_simplex(v, sigma, out):
    """out = the Euclidean projection of v onto {x >= 0, sum(x) <= sigma}: v clipped at 0 when that
    sum is at most sigma, else max(v - theta, 0) with the theta that makes it sum to sigma (the
    projection onto the simplex), found as Michelot (1986) does: theta = (sum of the entries above
    it - sigma) / their number, repeated until that set stops shrinking (a few passes, exact; no sort).
    theta never falls, so the set only shrinks and the loop ends: in exact arithmetic it rises by
    itself, but an entry lying on theta (duals stuck at one value) could leave the set and come back
    by a rounding, and the old loop went round that cycle for ever."""
    total = 0.0
    for i in range(v.shape[0]):
        out[i] = max(v[i], 0.0)
        total += out[i]
    if total <= sigma:
        return
    if sigma <= 0.0:  # no budget: every dual is 0
        out[:] = 0.0
        return
    theta = v.max() - sigma  # a lower bound: the largest entry keeps at most sigma
    kept = v.shape[0] + 1
    while True:
        above, count = 0.0, 0
        for i in range(v.shape[0]):
            if v[i] > theta:
                above += v[i]
                count += 1
        if count >= kept:  # (the largest entry stays above theta: count >= 1)
            break
        kept = count
        theta = max(theta, (above - sigma) / count)
    for i in range(v.shape[0]):
        out[i] = max(v[i] - theta, 0.0)


@njit(parallel=True, cache=True)
def gradient_step(lam, posterior, weight, length, starts, spread, sigma, out):
    """out = the projection of lam - length * gradient onto the capped simplexes, the gradient of
    sum_x w_x log Z_x(lambda) being -w_x q(z_token = k); rows in type order (type w's tokens are
    rows starts[w]:starts[w + 1]). The types are visited in the order `spread` (a permutation), so
    that the frequent ones, which cost the most, fall to different threads."""
    K = lam.shape[1]
    for j in prange(starts.shape[0] - 1):
        w = spread[j]
        a, b = starts[w], starts[w + 1]
        for i in range(a, b):
            for k in range(K):
                out[i, k] = lam[i, k] + length * weight[i] * posterior[i, k]
        if b - a == 1:  # a type seen once: a box [0, sigma]
            for k in range(K):
                out[a, k] = min(max(out[a, k], 0.0), sigma)
            continue
        v, x = np.empty(b - a), np.empty(b - a)
        for k in range(K):
            for i in range(b - a):
                v[i] = out[a + i, k]
            _capped_simplex(v, sigma, x)
            for i in range(b - a):
                out[a + i, k] = x[i]


@njit(parallel=True, cache=True)
def summed_max(posterior, starts):
    """sum over the types w and states k of max over w's tokens of posterior[token, k] (the L1/Linf
    norm the penalty weighs; rows in type order)."""
    K = posterior.shape[1]
    per_type = np.zeros(starts.shape[0] - 1)
    for w in prange(starts.shape[0] - 1):
        total = 0.0
        for k in range(K):
            best = 0.0
            for i in range(starts[w], starts[w + 1]):
                best = max(best, posterior[i, k])
            total += best
        per_type[w] = total
    return per_type.sum()


@njit(parallel=True, cache=True)
def step_products(lam, trial, posterior, new_posterior, weight):
    """For the step s = trial - lam and the gradient's change y = w (posterior - new_posterior):
    (gradient . s, s . s, s . y, max |s|), the gradient being -w posterior."""
    n, K = lam.shape
    rows = np.zeros((n, 4))
    for i in prange(n):
        g, ss, sy, most = 0.0, 0.0, 0.0, 0.0
        for k in range(K):
            s = trial[i, k] - lam[i, k]
            g -= weight[i] * posterior[i, k] * s
            ss += s * s
            sy += s * weight[i] * (posterior[i, k] - new_posterior[i, k])
            most = max(most, abs(s))
        rows[i, 0], rows[i, 1], rows[i, 2], rows[i, 3] = g, ss, sy, most
    return rows[:, 0].sum(), rows[:, 1].sum(), rows[:, 2].sum(), rows[:, 3].max() if n else 0.0
