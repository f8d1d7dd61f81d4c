"""Batch EM on the CCM: the objective never decreases (models 1 and 2, with and without empty
spans), an impossible sentence is reported by its line, and on WSJ10 the random-split start leads
EM well above right-branching trees. (The full table is bench/ccm_wsj10.py.)"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import ROOT
from emc.eval.brackets import bracket_scores, right_branching
from emc.runtime.fit import fit
from emc.runtime.state import FitError
from emc.runtime.params import ParamState
from emc.runtime.problem import Model, bind
from emc.runtime.settings import FitSettings
from helpers import problem_from_lines

CCM = (ROOT / "specs" / "ccm.em").read_text()
CCM2 = (ROOT / "specs" / "ccm2.em").read_text()
TAGS = ["DT", "NN", "VBD", "IN", "JJ", "NNS"]


def random_sentences(rng: np.random.Generator, count: int) -> list[str]:
    return [" ".join(rng.choice(TAGS, size=rng.integers(1, 9))) for _ in range(count)]


def assert_monotone(history, rel=1e-9):
    objectives = [r["objective"] for r in history]
    for before, after in zip(objectives, objectives[1:]):
        assert after >= before - rel * abs(before), (before, after)


@pytest.mark.parametrize("spec,empty", [(CCM, "yes"), (CCM, "no"), (CCM2, "yes")], ids=["ccm", "ccm-no-empty", "ccm2"])
def test_batch_em_never_lowers_the_objective(tmp_path, spec, empty):
    lines = random_sentences(np.random.default_rng(4), 80)
    problem = problem_from_lines(tmp_path, spec, lines, overrides={"empty": empty})
    result = fit(problem, FitSettings(iterations=20, tolerance=0, eval_every=0, init="random-split"))
    assert_monotone(result.history)
    assert result.history[-1]["objective"] > result.history[0]["objective"]


def test_unsmoothed_em_is_monotone_from_a_random_start(tmp_path):
    """Without smoothing, parameters reach exactly 0 (yields seen only as constituents): the DP
    must then force those spans into the tree, never produce NaN."""
    spec = CCM.replace("smooth add(1)", "")
    problem = problem_from_lines(tmp_path, spec, random_sentences(np.random.default_rng(5), 60))
    result = fit(problem, FitSettings(iterations=25, tolerance=0, eval_every=0, init="random", seed=3))
    assert_monotone(result.history)
    assert all(np.isfinite(r["objective"]) for r in result.history)


def test_impossible_sentence_is_reported_with_its_line(tmp_path):
    problem = problem_from_lines(tmp_path, CCM, ["DT NN", "", "DT VBD NN"])
    theta = np.full(problem.layout.size, 0.5)
    yields = problem.layout.table("yield")
    vbd = problem.vocabs["yields"].index["VBD"]
    yields.matrix(theta)[vbd, 1] = 0.0  # the single symbol VBD can never be a constituent
    with pytest.raises(FitError, match=r"data.txt:3: error: the example on this line has probability 0"):
        fit(problem, FitSettings(iterations=2), init=ParamState.plain(theta, problem.layout))


@pytest.mark.realdata
def test_ccm_beats_right_branching_on_wsj10(shared_data):
    """Klein & Manning's setting on the WSJ sample: 555 sentences of at most 10 tags."""
    model = Model.from_text(CCM, "ccm.em")
    options = {"format": "ptb", "max_length": 10}
    vocabs: dict = {}
    path = str(shared_data / "ptb-sample" / "wsj_sample_trees.txt")
    problem = bind(model, model.read(path, options, vocabs), vocabs, options)
    assert problem.n_examples == 555
    lengths = problem.corpus.lengths().tolist()
    baseline = bracket_scores([right_branching(n) for n in lengths], problem.corpus.gold["brackets"], lengths)
    assert round(100 * baseline["f1"], 1) == 55.0
    result = fit(problem, FitSettings(iterations=60, tolerance=0, eval_every=0, init="random-split"))
    assert_monotone(result.history)
    assert result.metrics["f1"] > baseline["f1"] + 0.03, result.metrics
    assert result.metrics["crossing_brackets"] < baseline["crossing_brackets"]


def test_threads_agree(tmp_path):
    """Each sentence's scratch memory is its own: two threads give the parameters one gives."""
    problem = problem_from_lines(tmp_path, CCM, random_sentences(np.random.default_rng(6), 60))
    runs = [fit(problem, FitSettings(iterations=5, tolerance=0, eval_every=0, init="random-split", threads=t)).params.theta
            for t in (2, 1)]
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-9, atol=1e-15)
