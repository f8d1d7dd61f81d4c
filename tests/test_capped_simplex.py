"""The projection onto a capped simplex that posterior sparsity's duals take (emc/runtime/
sparsity_duals.py): exact, and finished for inputs whose entries lie on the threshold, where
Michelot's iteration once went round a cycle for ever (a 50-iteration sparse fit of CoNLL-2000 hung)."""
from __future__ import annotations

import numpy as np
import pytest

from emc.runtime.sparsity_duals import _capped_simplex


def projection(v: np.ndarray, sigma: float) -> np.ndarray:
    out = np.empty_like(v)
    _capped_simplex(v, sigma, out)
    return out


def sort_projection(v: np.ndarray, sigma: float) -> np.ndarray:
    """The same projection by the textbook sort (Held, Wolfe & Crowder): an independent oracle."""
    clipped = np.maximum(v, 0.0)
    if clipped.sum() <= sigma:
        return clipped
    u = np.sort(v)[::-1]
    sums = np.cumsum(u) - sigma
    rho = np.nonzero(u - sums / np.arange(1, len(u) + 1) > 0)[0][-1]
    return np.maximum(v - sums[rho] / (rho + 1), 0.0)


@pytest.mark.parametrize("k, m, a, b", [(1, 2, 0.9, 0.3), (2, 1, 0.9, 0.3), (4, 2, 0.9, 0.3), (9, 24, 2.6958629231140394,
                                                                                              1.0906163054524276)])
def test_entries_on_the_threshold_end_the_iteration(k, m, a, b):
    """k entries a and m entries b with sigma = k (a - b) put theta exactly on b: the b's left and
    re-entered the set by roundings, and the loop never ended."""
    v = np.array([a] * k + [b] * m)
    out = projection(v, k * (a - b))
    np.testing.assert_allclose(out, sort_projection(v, k * (a - b)), atol=1e-12)
    assert out.sum() <= k * (a - b) + 1e-12


def test_random_inputs_match_the_sorting_projection():
    rng = np.random.default_rng(7)
    for _ in range(300):
        v = rng.normal(size=int(rng.integers(1, 50))) * 10.0 ** rng.uniform(-3, 3)
        sigma = float(rng.uniform(0.0, 2.0) * np.abs(v).sum())
        np.testing.assert_allclose(projection(v, sigma), sort_projection(v, sigma), atol=1e-9 * np.abs(v).max())
