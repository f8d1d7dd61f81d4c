"""Semirings for the dynamic programs: each DP is written once against `plus` and instantiated
for sum (posteriors, the E-step) or max (Viterbi, hard EM) by a run-time constant.

The DPs work in linear space with per-position rescaling (both semirings commute with a positive
rescale), so `times` is ordinary multiplication. LLVM hoists the semiring test out of the inner
loops, so the sum instance runs as fast as a hand-written sum-product loop. DPs that work in log
space instead (the span tree, the label normalisation) share `log_sum`.
"""
import numpy as np
from numba import njit

SUM = 0
MAX = 1


@njit(inline="always")
def plus(semiring, a, b):
    if semiring == SUM:
        return a + b
    return a if a > b else b


@njit(inline="always")
def log_sum(semiring, terms, count, scaled):
    """(+) over terms[:count], log-space values: their max m, or under sum the log of the sum of
    their exponentials, m + log sum_q exp(terms[q] - m), shifted by the max so nothing overflows
    (one exp per term). -inf is the zero; a NaN (from NaN parameters) is passed on, so the runtime
    can name it. Under sum, when the result is not -inf, scaled[q] = exp(terms[q] - m) for q <
    count, which a caller normalising the terms reuses (a caller with no use for them passes its
    scratch `terms` itself, overwritten only after it is read)."""
    best = -np.inf
    for q in range(count):
        if terms[q] > best or terms[q] != terms[q]:
            best = terms[q]
    if semiring == MAX or best == -np.inf:
        return best
    total = 0.0
    for q in range(count):
        e = np.exp(terms[q] - best)
        scaled[q] = e
        total += e
    return best + np.log(total)
