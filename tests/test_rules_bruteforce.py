"""Structures written as rules against brute force: every derivation of tiny examples enumerated
from the grounded program (tests/reference.py: rule_derivations), then log Z, every expected
count, the Viterbi derivation and hard-EM counts compared with the generated code."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import check_against_enumeration, problem_from_lines, random_params
from reference import rule_decoded_form, rule_structures

HSMM = """
model hsmm
observed x : tokens
structure chunks(x, classes=2, maxlen=2)
  item  end(i in 0..n, c in 0..classes)
  axiom end(0, classes)
  part  seg(i, j, b, c) : end(j, c) += end(i, b) for c in 0..classes-1, i in j-maxlen..j-1
        where w = x[i:j], width = j - i in 1..maxlen
  goal  end(n, c) for c in 0..classes-1
latent s : chunks(x)
multinomial trans : P(s.c | s.b)
multinomial len   : P(s.width | s.c)
multinomial emit  : P(s.w | s.c)
"""

CHAIN = """
model chain
observed x : tokens
structure tags(x, states=2)
  item  state(t in 0..n, k in 0..states)
  axiom state(0, states)
  part  step(t, j, k) : state(t, k) += state(t - 1, j) for k in 0..states-1 where w = x[t - 1]
  part  stop(k) : done() += state(n, k) for k in 0..states-1 where next = states + 0 in 0..states
  item  done()
  goal  done()
latent z : tags(x)
multinomial trans : P(z.step.k | z.j)
multinomial emit  : P(z.w | z.step.k)
multinomial final : P(z.next | z.stop.k)
"""

CKY = """
model cky
observed x : tokens
structure tree(x, labels=2)
  item  span(i in 0..n, j in 0..n, a in 0..labels-1)
  item  root()
  part  leaf(i, a) : span(i, i + 1, a) where w = x[i]
  part  binary(i, k, j, a, b, c) : span(i, j, a) += span(i, k, b) * span(k, j, c) for k in i+1..j-1
  part  top(a) : root() += span(0, n, a)
  goal  root()
latent t : tree(x)
multinomial emit  : P(t.w | t.leaf.a)
multinomial rule  : P(t.b, t.c | t.binary.a)
multinomial start : P(t.top.a)
"""

DATA = ["a b c", "b c a a", "c a", "a", "b b c"]


@pytest.mark.parametrize("spec", [HSMM, CHAIN, CKY], ids=["hsmm", "chain", "cky"])
def test_rules_match_enumeration(tmp_path, spec):
    problem = problem_from_lines(tmp_path, spec, DATA)
    for seed in range(2):
        params = random_params(problem, np.random.default_rng(seed))
        for example in range(len(DATA)):
            check_against_enumeration(problem, params, example, rule_structures(problem, example),
                                      lambda decoded: rule_decoded_form(problem, decoded))


@pytest.mark.parametrize("spec", [HSMM, CKY], ids=["hsmm", "cky"])
def test_rule_samples_follow_the_posterior(tmp_path, spec):
    """Posterior draws (emc decode --sample, stochastic EM's counts) against the enumerated
    posterior, within the total-variation bound a biased sampler fails (tests/test_sampling.py)."""
    from test_sampling import check_sampler

    problem = problem_from_lines(tmp_path, spec, ["a b c", "b a"])
    params = random_params(problem, np.random.default_rng(3))
    check_sampler(problem, params, list(rule_structures(problem, 0)))
