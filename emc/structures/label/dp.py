"""The label DP: one latent class per example, so the "dynamic program" is a normalisation over
the K classes, written once for the sum and max semirings.

The generated glue hands over score[k] = log of the product of every factor for class k (an
example's score is a sum of hundreds of log probabilities, so it is kept in log space). Then

    log Z = m + log (+)_k exp(score[k] - m),   m = max_k score[k]

which is the log partition function under sum and the best class's log score under max (where
(+)_k exp(score[k] - m) = 1). A labeled example is restricted to its class (`label` >= 0), like a
chain's allowed-state lists. Every class at -inf (an impossible example) gives -inf; a NaN score
gives NaN: the runtime reports either with the example's line.
"""
import numpy as np
from numba import njit

from emc.structures.semiring import MAX, plus

NEG_INF = -np.inf


@njit(cache=True)
def best_class(score, label):
    """The class with the highest score (the first on ties; `label` when it is >= 0), or -1 when
    every allowed class scores -inf or NaN."""
    if label >= 0:
        return label if score[label] > NEG_INF else -1
    best, arg = NEG_INF, -1
    for k in range(score.shape[0]):
        if score[k] > best:
            best, arg = score[k], k
    return arg


@njit(cache=True)
def class_marginals(semiring, score, label, marg):
    """marg[k] = P(c = k | example) under sum, the indicator of the best class under max (0
    everywhere for an impossible example). Returns log Z (the best log score under max)."""
    K = score.shape[0]
    marg[:] = 0.0
    for k in range(K):
        if score[k] != score[k] and (label < 0 or k == label):
            return np.nan
    arg = best_class(score, label)
    if arg < 0:
        return NEG_INF
    m = score[arg]
    total = 0.0
    for k in range(K):
        if label < 0 or k == label:
            total = plus(semiring, total, np.exp(score[k] - m))
    if semiring == MAX:
        marg[arg] = 1.0
    else:
        for k in range(K):
            if label < 0 or k == label:
                marg[k] = np.exp(score[k] - m) / total
    return m + np.log(total)
