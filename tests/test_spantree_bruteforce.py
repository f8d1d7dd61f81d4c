"""The generated spantree E-step (log Z, every expected count), hard-EM counts and the decoder equal
brute-force enumeration over every binary bracketing, for random sentences of up to 6 symbols,
with and without empty spans, with parameters that may be exactly 0 (spans forced in or out of
the tree, sentences with no possible bracketing); and the random-split initializer equals the
expectation under the random-split distribution, enumerated the same way."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emc.structures.posteriors import nonempty_spans
from emc.structures.semiring import MAX, SUM
from emc.structures.spantree import dp
from emc.structures.spantree.data import INITIALIZERS
from helpers import check_against_enumeration, problem_from_lines, random_params
from reference import binary_trees, decoded_form

# Model 2's yield block (rows over constituent x length) and a fixed weight over the numeric
# length cover every attribute of the span slot.
SPEC = """
model spantree_test
observed x : tokens
latent t : spantree(x)
multinomial yield : P(t.yield | t.constituent, t.length)
multinomial context : P(t.context | t.constituent)
weight halves : 0.5 ^ t.length
"""

SYMBOLS = ["a", "b", "c"]


def span_firings(problem, example: int, tree: frozenset) -> list[tuple[str, int, int]]:
    """The factor firings of one bracketing: every span with its bracket value (the ids looked up
    by name in the vocabularies, independently of the packed arrays)."""
    symbols = problem.corpus.fields["x"].tokens(example)
    n = len(symbols)
    padded = ["<s>"] + symbols + ["</s>"]
    vocab = problem.vocabs
    n_lengths = problem.sizes["length"]
    spans = nonempty_spans(n) + ([(i, i) for i in range(n + 1)] if problem.args["empty"] else [])
    firings = []
    for i, j in spans:
        c = int((i, j) in tree)
        length = vocab["length"].index[str(j - i)]
        firings.append(("yield", c * n_lengths + length, vocab["yields"].index[" ".join(symbols[i:j])]))
        firings.append(("context", c, vocab["contexts"].index[f"{padded[i]} {padded[j + 1]}"]))
        firings.append(("halves", 0, length))
    return firings


sentences = st.lists(st.lists(st.sampled_from(SYMBOLS), min_size=1, max_size=6), min_size=1, max_size=3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=sentences, empty=st.booleans(), seed=st.integers(0, 2**16), zeros=st.sampled_from([0.0, 0.0, 0.3]))
def test_spantree_matches_enumeration(tmp_path, data, empty, seed, zeros):
    problem = problem_from_lines(tmp_path, SPEC, [" ".join(s) for s in data], overrides={"empty": "yes" if empty else "no"})
    params = random_params(problem, np.random.default_rng(seed), zeros)
    for example, sentence in enumerate(data):
        trees = [(span_firings(problem, example, tree), tree) for tree in binary_trees(0, len(sentence))]
        check_against_enumeration(problem, params, example, trees,
                                  lambda decoded, ex=example: decoded_form(problem, ex, decoded))


def test_the_length_weight_sees_lengths_not_ids(tmp_path):
    problem = problem_from_lines(tmp_path, SPEC, ["a b c a"], overrides={"empty": "yes"})
    weights = problem.layout.table("halves").matrix(problem.fixed_theta)[:, 0]
    lengths = problem.vocabs["length"]
    for length in range(5):
        assert weights[lengths.index[str(length)]] == 0.5 ** length


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=sentences, empty=st.booleans())
def test_random_split_counts_match_enumeration(tmp_path, data, empty):
    """Klein & Manning's random split: a bracketing's probability is the product over its nodes
    of 1 / (number of split points)."""
    problem = problem_from_lines(tmp_path, SPEC, [" ".join(s) for s in data], overrides={"empty": "yes" if empty else "no"})
    layout = problem.layout
    expected = np.zeros(layout.size)
    for example, sentence in enumerate(data):
        for tree in binary_trees(0, len(sentence)):
            probability = math.prod(1.0 / (j - i - 1) for i, j in tree if j - i > 1)
            for table, row, outcome in span_firings(problem, example, tree):
                t = layout.table(table)
                expected[t.offset + outcome * t.rows + row] += probability
    expected[~layout.learned_mask()] = 0.0
    counts = INITIALIZERS["random-split"](problem, None, np.random.default_rng(0))
    np.testing.assert_allclose(counts, expected, rtol=1e-12, atol=1e-12)


def test_span_index_enumerates_spans_in_packing_order():
    for n in range(1, 8):
        spans = nonempty_spans(n) + [(i, i) for i in range(n + 1)]
        assert [dp.span_index(n, i, j) for i, j in spans] == list(range(len(spans)))


def test_nan_parameters_give_nan_never_a_finite_score():
    score = np.zeros((2, 5, 5))
    score[0, 1, 3] = np.nan  # one distituent score
    for semiring in (SUM, MAX):
        assert np.isnan(dp.marginals(semiring, score, 4, np.zeros((5, 5))))
