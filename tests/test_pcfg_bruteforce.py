"""The generated PCFG E-step (log Z, every expected count), hard-EM counts, the Viterbi parse and
the span posteriors equal brute-force enumeration over every labeled binary tree, for random
sentences of up to 4 symbols and up to 3 labels, with parameters that may be exactly 0
(impossible rewrites, sentences with no tree)."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emc.runtime.executor import LocalExecutor
from helpers import check_against_enumeration, problem_from_lines, random_params
from reference import ENUMERATORS

# The rewrite in two factors (left child, then right child given both) and an emission through
# a view cover the rule slot's three attributes, the emit slot's token reads, the root slot and
# the node slot (a node's kind, rewrite or preterminal, chosen by its label).
SPEC = """
model pcfg_test
observed x : tokens
latent t : spantree(x, labels=2)
multinomial left  : P(t.left_label | t.label)
multinomial right : P(t.right_label | t.label, t.left_label)
multinomial emit  : P(x | t.label)
multinomial shape : P(x.shape | t.label)
multinomial root  : P(t.root)
multinomial kind  : P(t.preterminal | t.label)
"""

SYMBOLS = ["a", "b", "C"]
sentences = st.lists(st.lists(st.sampled_from(SYMBOLS), min_size=1, max_size=4), min_size=1, max_size=2)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=sentences, labels=st.integers(1, 3), seed=st.integers(0, 2**16), zeros=st.sampled_from([0.0, 0.0, 0.3]))
def test_pcfg_matches_enumeration(tmp_path, data, labels, seed, zeros):
    if labels == 3:
        data = [s[:3] for s in data]  # 3^5 labelings of each of 2 trees: enough
    problem = problem_from_lines(tmp_path, SPEC, [" ".join(s) for s in data], overrides={"labels": labels})
    params = random_params(problem, np.random.default_rng(seed), zeros)
    executor = LocalExecutor(problem, threads=1)
    for example in range(len(data)):
        trees = list(ENUMERATORS["spantree"](problem, example))
        check_against_enumeration(problem, params, example, trees)
        # span posteriors: P(span is a node) summed over the trees holding it
        weights = params.weights(problem.layout)
        scores = np.array([math.prod(weights[problem.layout.table(t).offset + o * problem.layout.table(t).rows + r]
                                     for t, r, o in firings) for firings, _ in trees])
        if scores.sum() == 0:
            continue
        n = len(data[example])
        posterior, _ = executor.posterior(params, np.array([example]))
        expected = [sum(s for s, (_, tree) in zip(scores, trees) if (i, j) in tree) / scores.sum()
                    for i in range(n) for j in range(i + 1, n + 1)]
        np.testing.assert_allclose(posterior[0], expected, rtol=1e-9, atol=1e-12)
