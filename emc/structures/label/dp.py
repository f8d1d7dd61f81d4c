"""The label DP: one latent class per example, so the "dynamic program" is a normalisation over
the K classes, written once for the sum and max semirings.

The generated glue hands over score[j] = log of the product of every factor for the example's
j-th class (an example's score is a sum of hundreds of log probabilities, so it is kept in log
space). Then

    log Z = m + log (+)_j exp(score[j] - m),   m = max_j score[j]

which is the log partition function under sum (`log_sum` of emc/structures/semiring.py) and the
best class's log score under max. An example's classes are lo..hi - 1 (`class_range`): all K, or
only its class for a labeled example (like a chain's allowed-state lists), so a labeled example
is scored and counted once, not K times; its j-th class is lo + j. Every class at -inf (an
impossible example) gives -inf; a NaN score gives NaN: the runtime reports either with the
example's line. Sampling (emc/structures/sampling.py) draws classes from the sum semiring's
posterior.
"""
import numpy as np
from numba import njit

from emc.structures.sampling import draw, is_sampling, sample_count
from emc.structures.semiring import MAX, SUM, log_sum

NEG_INF = -np.inf


@njit(inline="always")
def class_range(label, K):
    """The classes an example can take, as lo..hi - 1: its class when labeled (`label` >= 0),
    else all K."""
    if label >= 0:
        return label, label + 1
    return 0, K


@njit(cache=True)
def best_class(score):
    """(the best log score, its index j): the first with the highest score, or (-inf, -1) when
    every one is -inf. A NaN score makes the log score NaN (j is then the best of the others, -1
    if none)."""
    best, arg, nan = NEG_INF, -1, False
    for j in range(score.shape[0]):
        if score[j] > best:
            best, arg = score[j], j
        elif score[j] != score[j]:
            nan = True
    return (np.nan if nan else best), arg


@njit(cache=True)
def class_marginals(semiring, score, marg):
    """marg[j] = P(the example's j-th class | example) under sum, the indicator of the best class
    under max (0 everywhere for an impossible example). Returns log Z (the best log score under
    max)."""
    marg[:] = 0.0
    if semiring == MAX:
        log_z, arg = best_class(score)
        if log_z > NEG_INF:
            marg[arg] = 1.0
        return log_z
    log_z = log_sum(SUM, score, score.shape[0], marg)  # marg[j] = exp(score[j] - m)
    if not log_z > NEG_INF:
        marg[:] = 0.0
        return log_z
    total = 0.0
    for j in range(marg.shape[0]):
        total += marg[j]
    for j in range(marg.shape[0]):
        marg[j] /= total
    if is_sampling(semiring):
        # the average indicators of `samples` classes drawn from the posterior
        posterior = marg.copy()
        draws = sample_count(semiring)
        marg[:] = 0.0
        for _ in range(draws):
            marg[draw(posterior, posterior.shape[0])] += 1.0 / draws
    return log_z


@njit(cache=True)
def sample_class(score):
    """(log Z, the index j of a class drawn from the posterior), or (-inf or NaN, -1)."""
    marg = np.empty(score.shape[0])
    log_z = log_sum(SUM, score, score.shape[0], marg)
    if not log_z > NEG_INF:
        return log_z, -1
    return log_z, draw(marg, marg.shape[0])
