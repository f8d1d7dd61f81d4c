"""The chain glue's part of posterior sparsity (`constraint NAME : E[max z per x] penalty s`,
emc/runtime/sparsity.py): while the E-step projects, `derived` goes on after prepare's numbers with
the duals lambda[token, state] and then room for the posteriors q[token, state], each tokens x K in
the corpus's token order. Each token's state scores are multiplied by exp(-lambda[token, state])
(the posterior q ~ p exp(-lambda . phi), phi[token, state](z) = 1 when z_token = state), and its
posteriors written back: they are the dual's gradient.
"""
import numpy as np
from numba import njit


@njit(cache=True)
def projecting(derived, prepared):
    """Whether `derived` carries the duals after prepare's `prepared` numbers."""
    return derived.shape[0] > prepared


@njit(cache=True)
def shift(derived, prepared, first, n, node, start, b):
    """node[start[t] + b, k] *= exp(-lambda[first + t, k]) for the example's n tokens (exactly 1.0
    where lambda is 0: the scores are then unchanged bit for bit)."""
    K = node.shape[1]
    for t in range(n):
        at = prepared + (first + t) * K
        row = node[start[t] + b]
        for k in range(K):
            row[k] *= np.exp(-derived[at + k])


@njit(cache=True)
def keep(derived, prepared, tokens, first, n, marg, start, b):
    """q[first + t, k] = marg[start[t] + b, k] for the example's n tokens, after the duals of all
    `tokens` tokens."""
    K = marg.shape[1]
    for t in range(n):
        at = prepared + (tokens + first + t) * K
        row = marg[start[t] + b]
        for k in range(K):
            derived[at + k] = row[k]
