"""Batch EM on the HMM: the objective never decreases, states are recovered from data sampled from
a known HMM, impossible examples are reported by line, and runs are deterministic."""
from __future__ import annotations

import numpy as np
import pytest

from emc.runtime.fit import fit

from emc.runtime.state import FitError
from emc.runtime.params import ParamState
from emc.runtime.settings import FitSettings
from emc.structures.chain.sample import format_sentences, sample
from helpers import problem_from_lines

from conftest import ROOT

HMM = (ROOT / "specs" / "hmm.em").read_text()
HMM2 = (ROOT / "specs" / "hmm2.em").read_text()


def sampled_problem(tmp_path, spec, states, examples, seed=3, order_override=None):
    from emc.runtime.problem import Model, bind

    overrides = {"states": states}
    model = Model.from_text(spec, "spec.em", overrides)
    sentences = sample(model.checked, model.checked.binding.args, np.random.default_rng(seed), examples,
                       {"vocab_size": 60, "mean_length": 8.0})
    data = tmp_path / "sampled.conll"
    data.write_text(format_sentences(sentences, "conll"))
    options = {"format": "conll", "gold_column": 2}
    vocabs: dict = {}
    return bind(model, model.read(str(data), options, vocabs), vocabs, options)


def assert_monotone(history, rel=1e-9):
    objectives = [r["objective"] for r in history]
    for before, after in zip(objectives, objectives[1:]):
        assert after >= before - rel * abs(before), (before, after)


@pytest.mark.parametrize("spec", [HMM, HMM2], ids=["bigram", "trigram-smoothed"])
def test_batch_em_never_lowers_the_objective(tmp_path, spec):
    problem = sampled_problem(tmp_path, spec, states=4, examples=150)
    result = fit(problem, FitSettings(iterations=25, tolerance=0, eval_every=0))
    assert_monotone(result.history)
    assert result.objective >= result.history[-1]["objective"] - 1e-9 * abs(result.objective)


def test_states_are_recovered_from_a_known_hmm(tmp_path):
    """Many-to-one accuracy on data from a known 5-state HMM, far above the most frequent state."""
    problem = sampled_problem(tmp_path, HMM, states=5, examples=600)
    result = fit(problem, FitSettings(iterations=60, tolerance=0, eval_every=0, seed=2))
    gold = problem.corpus.gold["tags"].ids
    chance = np.bincount(gold).max() / len(gold)
    assert result.metrics["many_to_one"] > chance + 0.3, (result.metrics, chance)
    assert result.metrics["one_to_one"] > chance + 0.2


def test_impossible_example_is_reported_with_its_line(tmp_path):
    problem = problem_from_lines(tmp_path, HMM, ["a b", "", "b c a"], overrides={"states": 2})
    theta = np.full(problem.layout.size, 0.5)
    emit = problem.layout.table("emit")
    c = problem.vocabs["vocab:x"].index["c"]
    emit.matrix(theta)[c, :] = 0.0  # no state can emit c
    with pytest.raises(FitError, match=r"data.txt:3: error: the example on this line has probability 0"):
        fit(problem, FitSettings(iterations=2), init=ParamState.plain(theta, problem.layout))


def test_same_seed_same_parameters_and_threads_agree(tmp_path):
    problem = sampled_problem(tmp_path, HMM, states=4, examples=200)
    runs = [fit(problem, FitSettings(iterations=8, tolerance=0, eval_every=0, threads=t, seed=5)).params.theta
            for t in (2, 2, 1)]
    assert np.array_equal(runs[0], runs[1])
    np.testing.assert_allclose(runs[0], runs[2], rtol=1e-9, atol=1e-15)
