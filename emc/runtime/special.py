"""digamma and log-gamma, vectorised in numba (runtime dependencies stay numpy-only)."""
import math

import numpy as np
from numba import njit, vectorize


@njit(cache=True)
def _digamma(x: float) -> float:
    if x <= 0.0:
        return np.nan
    shift = 0.0
    while x < 6.0:  # recurrence psi(x) = psi(x + 1) - 1/x up to where the asymptotic series is exact
        shift -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 / 132))))
    return shift + math.log(x) - 0.5 * inv - series


# no signatures: compiled on first call (variational Bayes), not when a batch fit imports the variants
@vectorize(cache=True)
def digamma(x):
    return _digamma(x)


@vectorize(cache=True)
def gammaln(x):
    return math.lgamma(x)
