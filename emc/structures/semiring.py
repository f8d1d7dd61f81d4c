"""Semirings for the dynamic programs: each DP is written once against `plus` and instantiated
for sum (posteriors, the E-step) or max (Viterbi, hard EM) by a run-time constant.

The DPs work in linear space with per-position rescaling (both semirings commute with a positive
rescale), so `times` is ordinary multiplication. LLVM hoists the semiring test out of the inner
loops, so the sum instance runs as fast as a hand-written sum-product loop.
"""
from numba import njit

SUM = 0
MAX = 1


@njit(inline="always")
def plus(semiring, a, b):
    if semiring == SUM:
        return a + b
    return a if a > b else b
