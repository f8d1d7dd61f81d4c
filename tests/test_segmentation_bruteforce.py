"""The generated segmentation E-step, hard-EM counts and Viterbi equal brute-force enumeration of
every segmentation, for random strings of length <= 7 with random parameters (some exactly 0); and
the DP itself equals enumeration in log space on scores spanning the whole range of a double,
where it has to leave linear space."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from emc.structures.segmentation import dp
from emc.structures.semiring import MAX, SUM
from helpers import check_against_enumeration, problem_from_lines, random_params
from reference import segmentation_structures, segmentations

SEGMENT = (ROOT / "specs" / "segment.em").read_text()
# A segmentation with a learned length distribution instead of the fixed weight, and words
# conditioned on their length: other blocks over the same parts need no new DP.
LENGTHS = """
model segment_lengths
observed x : symbols
latent s : segmentation(x, maxlen=3)
multinomial len : P(s.length)
multinomial word : P(s.word | s.length)
"""


strings = st.lists(st.text(alphabet="abc", min_size=1, max_size=7), min_size=1, max_size=3)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=strings, maxlen=st.integers(1, 8), seed=st.integers(0, 2**16), zeros=st.sampled_from([0.0, 0.3]))
def test_segment_spec_matches_enumeration(tmp_path, data, maxlen, seed, zeros):
    problem = problem_from_lines(tmp_path, SEGMENT, data, overrides={"maxlen": maxlen})
    params = random_params(problem, np.random.default_rng(seed), zeros)
    for example in range(len(data)):
        check_against_enumeration(problem, params, example, segmentation_structures(problem, example))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=strings, maxlen=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_learned_length_blocks_match_enumeration(tmp_path, data, maxlen, seed):
    problem = problem_from_lines(tmp_path, LENGTHS, data, overrides={"maxlen": maxlen})
    params = random_params(problem, np.random.default_rng(seed), 0.2)
    for example in range(len(data)):
        check_against_enumeration(problem, params, example, segmentation_structures(problem, example))


# --- the DP alone, over the full range of a double ----------------------------------------------

def log_enumeration(log_seg: np.ndarray):
    """log Z, segment marginals, the best log score and every best segmentation, by enumeration in
    log space (exact where linear arithmetic would underflow)."""
    n, L = log_seg.shape
    scored = []
    for lengths in segmentations(n, L):
        starts = np.cumsum((0,) + lengths[:-1])
        score = sum(log_seg[i, l - 1] for i, l in zip(starts, lengths))
        if score > -math.inf:
            scored.append((score, list(zip(starts.tolist(), lengths))))
    if not scored:
        return -math.inf, np.zeros((n, L)), -math.inf, []
    best = max(s for s, _ in scored)
    log_z = best + math.log(math.fsum(math.exp(s - best) for s, _ in scored))
    marg = np.zeros((n, L))
    for s, segments in scored:
        for i, l in segments:
            marg[i, l - 1] += math.exp(s - log_z)
    return log_z, marg, best, [tuple(l for _, l in segments) for s, segments in scored if s == best]


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 7), maxlen=st.integers(1, 7), seed=st.integers(0, 2**32 - 1),
       spread=st.sampled_from([1.0, 150.0, 320.0]), zeros=st.sampled_from([0.0, 0.3]))
def test_dp_matches_log_space_enumeration_over_the_double_range(n, maxlen, seed, spread, zeros):
    """Scores as small as 1e-320 (spread 320) force the DP out of linear space: it must still be
    exact. Spread 1 keeps it in linear space."""
    rng = np.random.default_rng(seed)
    exponents = -rng.random((n, maxlen)) * spread
    seg = 10.0 ** exponents
    seg[rng.random((n, maxlen)) < zeros] = 0.0
    for i in range(n):
        seg[i, n - i:] = 0.0  # past the end: never read
    with np.errstate(divide="ignore"):
        log_seg = np.log(seg)
    log_z, marg, best, best_paths = log_enumeration(log_seg)

    got = np.empty((n, maxlen))
    got_log_z = dp.marginals(SUM, seg, got)
    if log_z == -math.inf:
        assert got_log_z == -math.inf and not got.any()
        return
    assert math.isclose(got_log_z, log_z, rel_tol=1e-9, abs_tol=1e-9)
    np.testing.assert_allclose(got, marg, rtol=1e-7, atol=1e-12)

    hard = np.empty((n, maxlen))
    assert math.isclose(dp.marginals(MAX, seg, hard), best, rel_tol=1e-9, abs_tol=1e-9)
    starts = np.empty(n, np.int64)
    assert math.isclose(dp.viterbi(seg, starts), best, rel_tol=1e-9, abs_tol=1e-9)
    assert tuple(int(v) for v in starts if v) in best_paths
    assert tuple(int(l) + 1 for i, l in zip(*np.nonzero(hard))) in best_paths


@pytest.mark.parametrize("tiny, linear", [(1e-200, True), (1e-310, False)])
def test_tiny_scores_stay_exact(tiny, linear):
    """'ab' where the word 'a' has probability `tiny`: the prefix 'a' is that improbable, yet both
    segmentations keep their share. 1e-200 stays in linear space (the prefix is left unnormalised);
    a denormal 1e-310 is beyond it, and the example is redone in log space."""
    seg = np.array([[tiny, 0.5], [0.5, 0.0]])
    alpha, inv_scale = np.empty(3), np.empty(3)
    assert math.isnan(dp.forward(SUM, dp.LINEAR, seg, alpha, inv_scale)) != linear
    marg = np.empty((2, 2))
    log_z = dp.marginals(SUM, seg, marg)
    assert math.isclose(log_z, math.log(0.5 + 0.5 * tiny))
    np.testing.assert_allclose(marg, [[tiny, 1.0], [tiny, 0.0]], rtol=1e-6, atol=0)
