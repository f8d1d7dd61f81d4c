"""The HMM aligner's forward-backward on source positions (emc/structures/alignment/hmm_sum.py)
gives the chain DP's posteriors, expected jumps and log Z over its 2l + 1 states."""
import numpy as np
import pytest

from emc.structures.alignment import dp
from emc.structures.semiring import SUM


def _both(scores, jumps, maxjump, null):
    out = []
    for run in (dp.chain, dp.chain_states):
        posterior, counts = np.empty_like(scores), np.zeros(len(jumps))
        log_z = run(np.int64(SUM), scores.copy(), jumps, maxjump, null, posterior, counts)
        out.append((log_z, posterior, counts))
    return out


@pytest.mark.parametrize("null", [0, 1])
@pytest.mark.parametrize("maxjump", [1, 2, 20])
def test_positions_give_the_chain_dp_numbers(null, maxjump):
    rng = np.random.default_rng(maxjump * 2 + null)
    for _ in range(30):
        l, m = rng.integers(1, 9), rng.integers(1, 8)
        scores = rng.random((l + null, m)) * (rng.random((l + null, m)) > 0.2)
        scores[rng.integers(l), :] += 0.1  # a path exists
        jumps = rng.random(dp.jump_buckets(maxjump, null))
        (z, post, counts), (z_ref, post_ref, counts_ref) = _both(scores, jumps, maxjump, null)
        assert z == pytest.approx(z_ref, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(post, post_ref, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(counts, counts_ref, rtol=1e-10, atol=1e-13)


def test_in_place_and_impossible():
    rng = np.random.default_rng(3)
    scores, jumps = rng.random((5, 4)), rng.random(dp.jump_buckets(2, 1))
    expected = _both(scores, jumps, 2, 1)[1]
    counts = np.zeros(len(jumps))
    log_z = dp.chain(np.int64(SUM), scores, jumps, 2, 1, scores, counts)  # the posterior over the scores
    assert log_z == pytest.approx(expected[0], rel=1e-12)
    np.testing.assert_allclose(scores, expected[1], rtol=1e-10, atol=1e-13)
    dead = rng.random((4, 3))
    dead[:, 1] = 0.0  # target word 1 links nowhere
    counts = np.zeros(len(jumps))
    assert dp.chain(np.int64(SUM), dead, jumps, 2, 1, dead, counts) == -np.inf
    assert not dead.any() and not counts.any()
