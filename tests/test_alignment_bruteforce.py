"""The generated alignment E-step (log Z, every expected count), hard-EM counts and Viterbi links
equal brute-force enumeration of every alignment, for tiny random sentence pairs: IBM 1 with and
without NULL (with extra blocks read on the target side and without context), and the HMM
aligner with and without NULL (with a fixed weight over jumps), and IBM 2 with the diagonal (with a
fixed weight over the distance from it). The enumeration is
tests/reference.py's."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emc.structures.semiring import SUM
from emc.runtime.executor import LocalExecutor
from helpers import check_against_enumeration, problem_from_lines, random_params
from reference import alignment_structures

IBM1 = """
model ibm1_test
observed e : tokens, f : tokens
latent a : alignment(f from e, null=yes)
multinomial trans : P(a.target | a.source)
multinomial rev : P(a.source.prefix(1) | a.target)
multinomial prior : P(a.source)
"""
HMM = """
model hmm_test
observed e : tokens, f : tokens
latent a : alignment(f from e, null=yes, jump=yes, maxjump=2)
multinomial trans : P(a.target | a.source)
multinomial jump : P(a.jump)
weight near : exp(-0.3 * a.jump ^ 2)
"""
IBM2 = """
model ibm2_test
observed e : tokens, f : tokens
latent a : alignment(f from e, null=yes, maxjump=2)
multinomial trans : P(a.target | a.source)
multinomial diagonal : P(a.diagonal)
weight near : exp(-0.5 * a.diagonal ^ 2)
"""

SOURCE_WORDS = ["the", "cat", "tea", "sat", "a"]
TARGET_WORDS = ["le", "chat", "the", "assis", "un"]
pairs = st.lists(st.tuples(st.lists(st.sampled_from(SOURCE_WORDS), min_size=1, max_size=4),
                           st.lists(st.sampled_from(TARGET_WORDS), min_size=1, max_size=4)), min_size=1, max_size=3)


def check_pairs(tmp_path, spec, data, null, seed, zeros, overrides=None):
    lines = [f"{' '.join(e)} ||| {' '.join(f)}" for e, f in data]
    problem = problem_from_lines(tmp_path, spec, lines, overrides={"null": "yes" if null else "no", **(overrides or {})})
    params = random_params(problem, np.random.default_rng(seed), zeros)
    for example in range(len(data)):
        check_against_enumeration(problem, params, example, alignment_structures(problem, example))
    return problem, params


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=pairs, null=st.booleans(), seed=st.integers(0, 2**16), zeros=st.sampled_from([0.0, 0.3]))
def test_ibm1_matches_enumeration(tmp_path, data, null, seed, zeros):
    check_pairs(tmp_path, IBM1, data, null, seed, zeros)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=pairs, null=st.booleans(), seed=st.integers(0, 2**16), zeros=st.sampled_from([0.0, 0.3]),
       maxjump=st.integers(1, 3))
def test_hmm_aligner_matches_enumeration(tmp_path, data, null, seed, zeros, maxjump):
    check_pairs(tmp_path, HMM, data, null, seed, zeros, {"maxjump": maxjump})


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=pairs, null=st.booleans(), seed=st.integers(0, 2**16), zeros=st.sampled_from([0.0, 0.3]),
       maxjump=st.integers(1, 3))
def test_ibm2_diagonal_matches_enumeration(tmp_path, data, null, seed, zeros, maxjump):
    check_pairs(tmp_path, IBM2, data, null, seed, zeros, {"maxjump": maxjump})


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=pairs, null=st.booleans(), seed=st.integers(0, 2**16), jump=st.booleans())
def test_posteriors_are_the_link_marginals(tmp_path, data, null, seed, jump):
    """posterior_example's P(a_j = i) equals the brute-force link marginal."""
    spec = HMM if jump else IBM1
    lines = [f"{' '.join(e)} ||| {' '.join(f)}" for e, f in data]
    problem = problem_from_lines(tmp_path, spec, lines, overrides={"null": "yes" if null else "no"})
    params = random_params(problem, np.random.default_rng(seed))
    weights = params.weights(problem.layout)
    marginals, log_z = LocalExecutor(problem, threads=1).posterior(params, np.arange(len(data)))
    for example, (e, f) in enumerate(data):
        width = len(e) + null
        expected = np.zeros((len(f), width))
        total = 0.0
        for firings, links in alignment_structures(problem, example):
            score = float(np.prod([f if isinstance(f, float) else weights[_entry(problem, *f)] for f in firings]))
            total += score
            for j, i in enumerate(links):
                expected[j, width - 1 if i == -1 else i] += score
        np.testing.assert_allclose(marginals[example].reshape(len(f), width), expected / total, rtol=1e-9, atol=1e-12)
        assert np.isclose(log_z[example], np.log(total))


def _entry(problem, table, row, outcome):
    t = problem.layout.table(table)
    if not t.sparse:
        return t.offset + outcome * t.rows + row
    hit = np.flatnonzero((t.entry_rows == row) & (t.entry_outcomes == outcome))
    return t.offset + int(hit[0])


def test_an_impossible_pair_has_log_z_minus_infinity(tmp_path):
    """Every link of a target word weighs 0 (null=no): -inf, not NaN, for the E-step and decoder."""
    problem = problem_from_lines(tmp_path, IBM1, ["the cat ||| le chat", "a ||| un"], overrides={"null": "no"})
    params = random_params(problem, np.random.default_rng(0))
    table = problem.layout.table("trans")
    un = problem.vocabs["vocab:f"].index["un"]
    params.theta[table.offset + np.flatnonzero(table.entry_outcomes == un)] = 0.0
    executor = LocalExecutor(problem, threads=1)
    result = executor.estep(params, np.array([0, 1]), SUM, np.ones(2))
    assert np.isfinite(result.log_z[0]) and result.log_z[1] == -np.inf
    _, scores = executor.decode(params, np.array([1]))
    assert scores[0] == -np.inf
