"""The generated label E-step (log Z and every expected count), hard-EM counts, the decoder and the
posteriors equal brute-force enumeration of every class, for tiny random mixtures: repeated words
(the bag's counts), a second token block over a view, parameters with exact zeros (impossible
documents), and labeled documents restricted to their class. The enumeration is tests/reference.py's."""
from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emc.runtime.executor import LocalExecutor
from helpers import check_against_enumeration, problem_from_lines, random_params
from reference import label_structures

SPEC = """
model mixture_test
observed d : tokens
latent c : label(d, classes=2)
multinomial prior : P(c)
multinomial emit : P(d | c)
multinomial sfx : P(d.suffix(1) | c)
"""

WORDS = ["a", "b", "ca", "dd", "eb"]
NAMES = ["x", "y", "z"]


def check_posteriors(problem, params, example, structures):
    """posterior_example gives each class's share of the enumerated total."""
    weights = params.weights(problem.layout)
    layout = problem.layout
    scores = np.zeros(problem.args["classes"])
    for firings, k in structures:
        scores[k] = math.prod(weights[layout.table(t).offset + o * layout.table(t).rows + r] for t, r, o in firings)
    if scores.sum() == 0:
        return
    marginals, log_z = LocalExecutor(problem, threads=1).posterior(params, np.array([example]))
    np.testing.assert_allclose(marginals[0], scores / scores.sum(), rtol=1e-9, atol=1e-12)


documents = st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), min_size=1, max_size=4)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(classes=st.integers(1, 4), docs=documents, seed=st.integers(0, 2**16), zeros=st.sampled_from([0.0, 0.3]))
def test_mixture_matches_enumeration(tmp_path, classes, docs, seed, zeros):
    problem = problem_from_lines(tmp_path, SPEC, [" ".join(d) for d in docs], overrides={"classes": classes})
    params = random_params(problem, np.random.default_rng(seed), zeros)
    for example in range(len(docs)):
        structures = list(label_structures(problem, example))
        check_against_enumeration(problem, params, example, structures)
        check_posteriors(problem, params, example, structures)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=documents, labels=st.lists(st.sampled_from(NAMES + [None]), min_size=4, max_size=4),
       seed=st.integers(0, 2**16))
def test_labeled_documents_match_enumeration_over_their_class(tmp_path, docs, labels, seed):
    labels = labels[:len(docs)]
    if all(label is None for label in labels):
        labels[0] = "y"
    lines = [json.dumps({"text": " ".join(d), **({"given": g} if g else {})}) for d, g in zip(docs, labels)]
    problem = problem_from_lines(tmp_path, SPEC, lines, options={"format": "jsonl", "supervised_field": "given"})
    names = problem.labels["classes"]
    assert names == sorted({g for g in labels if g}) and problem.args["classes"] == len(names)
    params = random_params(problem, np.random.default_rng(seed))
    for example, label in enumerate(labels):
        allowed = [names.index(label)] if label else range(len(names))
        structures = list(label_structures(problem, example, allowed))
        check_against_enumeration(problem, params, example, structures)
        check_posteriors(problem, params, example, structures)
