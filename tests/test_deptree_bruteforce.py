"""The generated deptree E-step (log Z, every expected count), hard-EM counts and the decoder equal
brute-force enumeration over every projective tree with one root (tests/reference.py), for random
sentences of up to 5 words, with parameters that may be exactly 0 (trees ruled out, sentences
with no possible tree); and the harmonic initializer equals the expectation under its tree
distribution, enumerated the same way."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emc.runtime.problem import Model, bind
from emc.structures.deptree import dp
from emc.structures.deptree.data import INITIALIZERS
from emc.structures.semiring import MAX, SUM
from helpers import check_against_enumeration, problem_from_lines, random_params
from reference import decoded_form, deptree_structures, firings, projective_trees

# The DMV, and a second attach block conditioned the other way round, so both token attributes
# appear as outcome and as context.
SPEC = """
model deptree_test
observed x : tokens
latent d : deptree(x)
multinomial root : P(d.root)
multinomial attach : P(d.dependent | d.head, d.direction)
multinomial stop : P(d.stop | d.head, d.direction, d.adjacent)
multinomial heads : P(d.head | d.dependent)
"""

sentences = st.lists(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=5), min_size=1, max_size=3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=sentences, seed=st.integers(0, 2**16), zeros=st.sampled_from([0.0, 0.0, 0.3]))
def test_deptree_matches_enumeration(tmp_path, data, seed, zeros):
    problem = problem_from_lines(tmp_path, SPEC, [" ".join(s) for s in data])
    params = random_params(problem, np.random.default_rng(seed), zeros)
    for example in range(len(data)):
        check_against_enumeration(problem, params, example, list(deptree_structures(problem, example)),
                                  lambda decoded, ex=example: decoded_form(problem, ex, decoded))


def test_the_tree_counts_are_catalan_like():
    """1, 2, 7, 30, 143 projective trees with one root (OEIS A006013): the enumerator the checks
    rely on misses none and invents none."""
    assert [sum(1 for _ in projective_trees(n)) for n in range(1, 6)] == [1, 2, 7, 30, 143]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=sentences)
def test_harmonic_counts_match_enumeration(tmp_path, data):
    """Each word is the root with probability 1 / n, else takes head h with probability
    proportional to 1 / |h - a|; the stop decisions are expected under trees weighing the product
    over their attachments of 1 / distance (enumerated)."""
    problem = problem_from_lines(tmp_path, SPEC, [" ".join(s) for s in data])
    layout = problem.layout
    expected = np.zeros(layout.size)

    def add(firing_list, weight):
        for table, row, outcome in firing_list:
            t = layout.table(table)
            expected[t.offset + outcome * t.rows + row] += weight

    for example in range(len(data)):
        tags = [int(t) for t in problem.corpus.fields["x"].example(example)]
        n = len(tags)
        trees = list(deptree_structures(problem, example))
        weights = [math.prod(1.0 / abs(w + 1 - h) for w, h in enumerate(heads) if h) for _, heads in trees]
        for (firing_list, _), weight in zip(trees, weights):
            add([f for f in firing_list if f[0] == "stop"], weight / sum(weights))
        for a in range(n):
            add(firings(problem, [("root", {"d.root": tags[a]})]), 1.0 / n)
            near = {h: 1.0 / abs(h - a) for h in range(n) if h != a}
            for h, closeness in near.items():
                part = ("attach", {"d.head": tags[h], "d.dependent": tags[a], "d.direction": int(a > h)})
                add(firings(problem, [part]), (n - 1) / n * closeness / sum(near.values()))
    expected[~layout.learned_mask()] = 0.0
    counts = INITIALIZERS["harmonic"](problem, None, np.random.default_rng(0))
    np.testing.assert_allclose(counts, expected, rtol=1e-10, atol=1e-12)


def test_nan_parameters_give_nan_never_a_finite_score():
    n = 3
    root, attach, stop = np.zeros(n), np.zeros((n, n)), np.zeros((n, 2, 2, 2))
    attach[0, 2] = np.nan
    for semiring in (SUM, MAX):
        out = dp.marginals(semiring, root, attach, stop, n, np.zeros(n), np.zeros((n, n)), np.zeros((n, 2, 2, 2)))
        assert np.isnan(out)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.lists(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=4), min_size=1, max_size=2),
       seed=st.integers(0, 2**16))
def test_a_labeled_sentence_counts_its_given_tree_only(tmp_path, data, seed):
    """--labeled: a sentence given with its tree (CoNLL heads) is one structure, that tree; the
    unlabeled copy of it keeps every tree."""
    rng = np.random.default_rng(seed)
    model = Model.from_text(SPEC, "test.em")
    options = {"format": "conll", "word_column": 1, "head_column": 2}
    trees = [list(projective_trees(len(s)))[rng.integers(0, sum(1 for _ in projective_trees(len(s))))] for s in data]
    text = "\n".join("\n".join(f"{w} {h}" for w, h in zip(s, heads)) + "\n" for s, heads in zip(data, trees))
    path = tmp_path / "given.conll"
    path.write_text(text)
    vocabs: dict = {}
    corpus = model.read(str(path), options, vocabs)
    corpus = corpus.concat(model.read(str(path), options, vocabs), labeled=True)
    problem = bind(model, corpus, vocabs, options)
    params = random_params(problem, rng)
    for example in range(2 * len(data)):
        structures = list(deptree_structures(problem, example))
        if example >= len(data):
            structures = [s for s in structures if tuple(s[1]) == tuple(trees[example - len(data)])]
            assert len(structures) == 1
        check_against_enumeration(problem, params, example, structures,
                                  lambda decoded, ex=example: decoded_form(problem, ex, decoded))


def _tree_log_score(heads, root, attach, stop) -> float:
    """A tree's log score from the DP's scores: its root, attachments and stop decisions."""
    n = len(heads)
    score = sum(root[w] if h == 0 else attach[h - 1, w] for w, h in enumerate(heads))
    for h in range(n):
        for side, dependents in ((0, [w for w in range(h) if heads[w] == h + 1]),
                                 (1, [w for w in range(h + 1, n) if heads[w] == h + 1])):
            score += sum(stop[h, side, int(k == 0), 0] for k in range(len(dependents)))
            score += stop[h, side, int(not dependents), 1]
    return score


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 5), seed=st.integers(0, 2**32 - 1), spread=st.sampled_from([1.0, 100.0, 200.0]))
def test_scores_over_hundreds_of_orders_of_magnitude_stay_exact(n, seed, spread):
    """Every score drawn from [-spread, 0] nats (factors as small as 1e-87, as EM's parameters
    reach after many iterations: 1e-322 on WSJ10): log Z, the marginals and the best tree equal
    enumeration in log space, where the chart in linear space holds them only because each
    group of alternatives is shifted to its best (dp._gauged)."""
    rng = np.random.default_rng(seed)
    root, attach, stop = -rng.random(n) * spread, -rng.random((n, n)) * spread, -rng.random((n, 2, 2, 2)) * spread
    trees = list(projective_trees(n))
    scores = np.array([_tree_log_score(heads, root, attach, stop) for heads in trees])
    top = scores.max()
    log_z = top + math.log(np.exp(scores - top).sum())
    root_m, arcs = np.zeros(n), np.zeros((n, n))
    assert math.isclose(dp.marginals_sum(root, attach, stop, n, root_m, arcs, np.zeros((n, 2, 2, 2))), log_z,
                        rel_tol=1e-9, abs_tol=1e-9)
    expected = np.zeros((n, n))
    for heads, score in zip(trees, scores):
        for w, h in enumerate(heads):
            if h:
                expected[h - 1, w] += math.exp(score - log_z)
    np.testing.assert_allclose(arcs, expected, rtol=1e-7, atol=1e-12)
    heads = np.empty(n, np.int64)
    assert math.isclose(dp.best_tree(root, attach, stop, n, heads), top, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(_tree_log_score([h + 1 for h in heads], root, attach, stop), top, rel_tol=1e-9, abs_tol=1e-9)
