"""A label over several fields, label(v, n, classes=K): the generated E-step (log Z, every expected
count), hard-EM counts and the decoder equal brute-force enumeration over the classes, for random
tuples whose fields hold one or more tokens, with a view on one field and parameters that may be
exactly 0; the reader's `v ||| n` lines and its errors; the spec checks."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emc.runtime.problem import Model
from emc.spec.errors import DataError, SpecError
from helpers import check_against_enumeration, problem_from_lines, random_params
from reference import ENUMERATORS

SPEC = """
model tuples_test
observed v : tokens, n : tokens, s : tokens
latent c : label(v, n, s, classes=3)
multinomial prior : P(c)
multinomial verb  : P(v | c)
multinomial noun  : P(n | c)
multinomial shape : P(n.shape | c)
multinomial subj  : P(s | c)
"""

words = st.lists(st.sampled_from(["eat", "Apple", "run", "x1"]), min_size=1, max_size=2)
tuples = st.lists(st.tuples(words, words, words), min_size=1, max_size=3)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=tuples, classes=st.integers(1, 3), seed=st.integers(0, 2**16), zeros=st.sampled_from([0.0, 0.0, 0.3]))
def test_tuples_match_enumeration(tmp_path, data, classes, seed, zeros):
    lines = [" ||| ".join(" ".join(f) for f in t) for t in data]
    problem = problem_from_lines(tmp_path, SPEC, lines, overrides={"classes": classes})
    params = random_params(problem, np.random.default_rng(seed), zeros)
    for example in range(len(data)):
        check_against_enumeration(problem, params, example, ENUMERATORS["label"](problem, example))


def test_fields_have_their_own_vocabularies_and_bad_lines_are_named(tmp_path):
    problem = problem_from_lines(tmp_path, SPEC, ["eat ||| apple ||| he", "", "run ||| ||| she", "apple ||| eat ||| he"])
    assert problem.n_examples == 2  # the blank line and the empty field are empty examples
    assert problem.vocabs["vocab:v"].values[1:] == ["eat", "run", "apple"]
    assert problem.vocabs["vocab:n"].values[1:] == ["apple", "eat"]
    with pytest.raises(DataError, match=r"data.txt:2: .*expected 3 fields `v \|\|\| n \|\|\| s`, found 2"):
        problem_from_lines(tmp_path, SPEC, ["eat ||| apple ||| he", "eat ||| apple"])


def test_spec_errors():
    with pytest.raises(SpecError, match="tokens of one observed variable"):
        Model.from_text(SPEC + "multinomial both : P(v | c, n)\n")
    with pytest.raises(SpecError, match="1 to 4 observed"):
        Model.from_text(SPEC.replace("label(v, n, s,", "label(v, n, s, v, n,"))
