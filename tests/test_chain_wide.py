"""The dense forward and backward passes from WIDE_FROM states on (emc/structures/chain/dp.py:
_forward_wide and _backward_wide, eight states a sweep over zero-padded rows) sum the same products
in the same order as the narrow ones: the same alphas, scales, log Z, betas, edge sums and
weights bit for bit, under sum and max, and -inf alike."""
import numpy as np
import pytest

from emc.structures.chain import dp
from emc.structures.semiring import MAX, SUM


def _run(forward, semiring, node, trans, initial, final):
    n, K = node.shape
    alpha, scale = np.zeros((n, K)), np.zeros(n + 1)
    log_z = forward(semiring, node, trans, initial, final, alpha, scale)
    return log_z, alpha, scale


@pytest.mark.parametrize("states", [dp.WIDE_FROM, 45, 64])
@pytest.mark.parametrize("semiring", [SUM, MAX])
def test_wide_forward_is_the_narrow_one_bit_for_bit(states, semiring):
    rng = np.random.default_rng(states)
    node = rng.random((9, states))
    node[3, rng.integers(states, size=states // 2)] = 0.0  # some zero scores, as a pruned tag has
    trans = rng.random((states, states))
    trans /= trans.sum(axis=1, keepdims=True)
    initial, final = rng.random(states), rng.random(states)
    wide = _run(dp._forward_wide, semiring, node, trans, initial, final)
    narrow = _run(dp._forward_narrow, semiring, node, trans, initial, final)
    assert wide[0] == narrow[0] and np.isfinite(wide[0])
    assert np.array_equal(wide[1], narrow[1]) and np.array_equal(wide[2], narrow[2])
    assert dp.forward(semiring, node, trans, initial, final, np.zeros((9, states)), np.zeros(10)) == wide[0]


def test_wide_forward_impossible_sequence():
    states = 45
    node = np.ones((4, states))
    node[2] = 0.0
    trans = np.full((states, states), 1.0 / states)
    ones = np.ones(states)
    assert _run(dp._forward_wide, SUM, node, trans, ones, ones)[0] == -np.inf


@pytest.mark.parametrize("states", [dp.WIDE_FROM, 45, 64])
def test_wide_backward_is_the_narrow_one_bit_for_bit(states):
    rng = np.random.default_rng(states + 1)
    n = 9
    node = rng.random((n, states))
    trans = rng.random((states, states))
    trans /= trans.sum(axis=1, keepdims=True)
    trans_t = np.ascontiguousarray(trans.T)
    initial, final = rng.random(states), rng.random(states)
    log_z, alpha, scale = _run(dp._forward_narrow, SUM, node, trans, initial, final)
    assert np.isfinite(log_z)
    out = []
    for backward in (dp._backward_wide, dp._backward_narrow):
        w, beta, edges = node.copy(), np.zeros((n, states)), np.zeros((states, states))
        backward(w, trans_t, final, scale, alpha, beta, edges)
        out.append((w, beta, edges))
    for wide, narrow in zip(*out):
        assert np.array_equal(wide, narrow)
