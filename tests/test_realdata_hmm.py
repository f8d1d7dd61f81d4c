"""The bigram HMM on CoNLL-2000 (../shared/data): batch EM's objective never decreases and
tagging accuracy rises well above the first iteration's. (The full 100-iteration table is in
bench/hmm_conll.py.)"""
from __future__ import annotations

import pytest

from conftest import ROOT
from emc.runtime.fit import fit
from emc.runtime.problem import Model, bind
from emc.runtime.settings import FitSettings


@pytest.mark.realdata
def test_hmm_on_conll2000(shared_data):
    model = Model.from_file(ROOT / "specs" / "hmm.em")
    options = {"format": "conll", "gold_column": 2}
    vocabs: dict = {}
    problem = bind(model, model.read(str(shared_data / "conll2000" / "test.txt"), options, vocabs), vocabs, options)
    assert problem.n_examples == 2012 and problem.args["states"] == 45
    result = fit(problem, FitSettings(iterations=12, tolerance=0, eval_every=1, seed=1))
    objectives = [r["objective"] for r in result.history]
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(objectives, objectives[1:]))
    assert result.history[-1]["metrics"]["many_to_one"] > result.history[0]["metrics"]["many_to_one"] + 0.05
    assert result.metrics["many_to_one"] > 0.30
