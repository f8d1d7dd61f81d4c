"""The generated chain E-step, hard-EM counts and Viterbi equal brute-force enumeration of every
state sequence, for random tiny chains (order 1 and 2, with and without STOP, with a second
emission block over a view, and with tag-dictionary constraints). The enumeration is
tests/reference.py's."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import check_against_enumeration, problem_from_lines, random_params
from reference import chain_structures

SPEC = """
model chain_test
observed x : tokens
latent z : chain(x, states=2, order={order})
multinomial trans : P(z | {context})
multinomial emit : P(x | z)
{extra}
"""

WORDS = ["a", "b", "c", "dd", "ee"]


def spec(order: int, suffix: bool) -> str:
    context = "z.prev" if order == 1 else "z.prev, z.prev2"
    extra = "multinomial sfx : P(x.suffix(1) | z)" if suffix else ""
    return SPEC.format(order=order, context=context, extra=extra)


sentences = st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), min_size=1, max_size=3)


# STOP and the suffix block go in pairs (each way), not in all four combinations: every
# combination compiles a module of its own, and the pairs already give each order both of each.
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.sampled_from([1, 2]), states=st.integers(2, 3), stop_suffix=st.sampled_from([(True, False), (False, True)]),
       data=sentences, seed=st.integers(0, 2**16), zeros=st.sampled_from([0.0, 0.2]))
def test_chain_matches_enumeration(tmp_path, order, states, stop_suffix, data, seed, zeros):
    stop, suffix = stop_suffix
    if order == 2 and states == 3 and max(map(len, data)) > 4:
        data = [s[:4] for s in data]
    problem = problem_from_lines(tmp_path, spec(order, suffix), [" ".join(s) for s in data],
                                 overrides={"states": states, "stop": "yes" if stop else "no"})
    params = random_params(problem, np.random.default_rng(seed), zeros)
    for example in range(len(data)):
        check_against_enumeration(problem, params, example, chain_structures(problem, example))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.sampled_from([1, 2]), data=sentences, seed=st.integers(0, 2**16),
       tags=st.dictionaries(st.sampled_from(WORDS), st.sets(st.sampled_from(["N", "V", "D"]), min_size=1), min_size=1))
def test_chain_with_dictionary_matches_enumeration(tmp_path, order, data, seed, tags):
    dictionary = tmp_path / "dict.txt"
    dictionary.write_text("".join(f"{w} {' '.join(sorted(ts))}\n" for w, ts in tags.items()))
    problem = problem_from_lines(tmp_path, spec(order, False), [" ".join(s) for s in data],
                                 options={"dictionary": str(dictionary)})
    names = problem.labels["states"]
    assert problem.args["states"] == len(names)
    params = random_params(problem, np.random.default_rng(seed))
    for example, sentence in enumerate(data):
        allowed = [{names.index(t) for t in tags[w]} if w in tags else set(range(len(names))) for w in sentence]
        check_against_enumeration(problem, params, example, chain_structures(problem, example, allowed))
