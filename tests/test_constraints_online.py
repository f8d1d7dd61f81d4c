"""Posterior regularization under the online variants (issue 31): stepwise and incremental EM
project each mini-batch's (block's) posterior onto the spec's constraints before folding its
statistics in (Variant.online_estep). A constraint that holds leaves the fit as it is; a binding
one bounds every mini-batch; per-example constraints and posterior sparsity project and log as
batch EM's do; a resumed fit is exact; what still cannot project says so."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import ROOT
from emc.runtime.checkpoint import load_checkpoint, save_checkpoint
from emc.runtime.constraints import Projection, projection_lines
from emc.runtime.executor import LocalExecutor
from emc.runtime.fit import fit
from emc.runtime.settings import FitSettings
from emc.runtime.sparsity import PosteriorSparsity
from emc.runtime.variants.base import CORPUS_DUALS
from emc.spec.errors import EmcError
from emc.structures.semiring import SUM
from helpers import problem_from_lines
import test_constraints as corpus
import test_example_constraints as per_example
import test_posterior_sparsity as sparsity

ONLINE = ["stepwise", "incremental"]
SENTENCES = corpus.SENTENCES * 3  # 12 sentences: 6 mini-batches (blocks) of 2


def online(algorithm: str, **changes) -> FitSettings:
    return FitSettings(**{"algorithm": algorithm, "passes": 3, "eval_every": 0, "threads": 1, "batch_size": 2,
                          "block_size": 2, **changes})


def learned_weights(result, problem) -> dict[str, np.ndarray]:
    """Each learned table's effective weights (the online state is lazy), by name."""
    weights = result.params.weights(problem.layout)
    return {t.name: weights[t.entries] for t in problem.layout.learned()}


def share(problem, params) -> float:
    """The expected share of the corpus's attachments the rules list, under `params` (unprojected)."""
    every = np.arange(problem.n_examples)
    counts = LocalExecutor(problem, threads=1).estep(params, every, SUM, np.ones(len(every))).counts
    return Projection(problem).constraints[0].share(counts)


@pytest.mark.parametrize("algorithm", ONLINE)
def test_a_constraint_that_holds_leaves_the_online_fit_unchanged(tmp_path, algorithm):
    plain = problem_from_lines(tmp_path, corpus.DMV, SENTENCES)
    holds = problem_from_lines(tmp_path, corpus.constrained(">= 0"), SENTENCES)
    a, b = fit(plain, online(algorithm)), fit(holds, online(algorithm))
    off = fit(holds, online(algorithm, constraints="off"))
    for r in b.history:  # lambda = 0 in every mini-batch, one E-step each
        assert r["constraints"][0]["lambda"] == 0.0 and r["projection_esteps"] == 1.0
    # the same path without the projection: bit for bit
    assert [r["objective"] for r in b.history] == [r["objective"] for r in off.history]
    assert np.array_equal(b.params.theta, off.params.theta)
    # the compiled pass of the spec without the constraint: the same sums in another order
    np.testing.assert_allclose([r["objective"] for r in b.history], [r["objective"] for r in a.history], rtol=1e-12)
    expected, got = learned_weights(a, plain), learned_weights(b, holds)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=0, atol=1e-12)


@pytest.mark.parametrize("algorithm", ONLINE)
def test_a_binding_constraint_bounds_every_mini_batch(tmp_path, algorithm, monkeypatch):
    problem = problem_from_lines(tmp_path, corpus.constrained(">= 0.95"), SENTENCES)
    projections = []
    estep = Projection.estep

    def recorded(self, params, run):
        out = estep(self, params, run)
        projections.append(self.last["constraints"][0])
        return out

    monkeypatch.setattr(Projection, "estep", recorded)
    on = fit(problem, online(algorithm, constraint_esteps=100))
    assert len(projections) == 3 * 6 + 1  # every mini-batch (block) of every pass, and the final objective's
    assert any(c["before"] < 0.95 - 1e-3 for c in projections)  # the bound binds
    for c in projections[:-1]:
        assert c["after"] >= 0.95 - 1e-3, c  # the projection's tolerance: 1e-3 of a share
    off = fit(problem, online(algorithm, constraints="off"))
    assert share(problem, on.params) > share(problem, off.params)
    assert projection_lines(on.history)[1].startswith("  pass    1  rules ")  # emc info RUN


@pytest.mark.parametrize("algorithm", ONLINE)
def test_a_per_example_constraint_projects_online_and_logs(tmp_path, algorithm):
    problem = problem_from_lines(tmp_path, per_example.constrained(per_example.HMM, "<= 0.7"), per_example.PAIRS)
    on = fit(problem, online(algorithm, passes=2, batch_size=1, block_size=1))
    off = fit(problem, online(algorithm, passes=2, batch_size=1, block_size=1, constraints="off"))
    assert "example_constraints" not in off.history[0]
    for r in on.history:
        c = r["example_constraints"][0]
        assert c["before"] > 0.01 and c["after"] <= c["before"] and c["lambda"] > 0
    assert not np.array_equal(on.params.theta, off.params.theta)


@pytest.mark.parametrize("algorithm", ONLINE)
def test_posterior_sparsity_projects_online_and_logs(tmp_path, algorithm, monkeypatch):
    problem = problem_from_lines(tmp_path, sparsity.SPARSE, sparsity.LINES * 2, overrides={"states": 2})
    norms = []
    descend = PosteriorSparsity._descend

    def recorded(self, *args):
        out = descend(self, *args)
        norms.append(self.last["sparsity"])
        return out

    monkeypatch.setattr(PosteriorSparsity, "_descend", recorded)
    on = fit(problem, online(algorithm, passes=2))
    assert len(norms) == 2 * 4 + 1  # 8 sentences: 4 mini-batches (blocks) a pass; the final objective's
    for s in norms:  # each mini-batch's states per word type, from its tokens' last duals -> projected
        assert s["after"] <= s["before"] + 1e-12, s
    assert all(r["sparsity"]["after"] < r["sparsity"]["before"] for r in on.history)
    off = fit(problem, online(algorithm, passes=2, constraints="off"))
    assert "sparsity" not in off.history[0] and not np.array_equal(on.params.theta, off.params.theta)


@pytest.mark.parametrize("algorithm", ONLINE)
@pytest.mark.parametrize("spec", ["hmm", "hmm_features"])
def test_a_zero_penalty_online_is_the_compiled_pass(tmp_path, algorithm, spec):
    """The projected path (sigma 0: every dual 0) against the compiled pass (--constraints off) on the
    same spec, featured blocks' M-steps included: the same fit, its sums in another order."""
    text = (ROOT / "specs" / f"{spec}.em").read_text().replace(f"model {spec}", f"model {spec}_sparse_online")
    problem = problem_from_lines(tmp_path, text + "constraint sparse : E[max z per x] penalty 0\n",
                                 sparsity.LINES * 3, overrides={"states": 2})
    projected, compiled = fit(problem, online(algorithm)), fit(problem, online(algorithm, constraints="off"))
    assert "sparsity" in projected.history[0] and "sparsity" not in compiled.history[0]
    np.testing.assert_allclose([r["objective"] for r in projected.history],
                               [r["objective"] for r in compiled.history], rtol=1e-12)
    np.testing.assert_allclose(projected.params.weights(problem.layout), compiled.params.weights(problem.layout),
                               rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("algorithm", ONLINE)
def test_a_resumed_constrained_online_fit_is_exact(tmp_path, algorithm):
    problem = problem_from_lines(tmp_path, corpus.constrained(">= 0.95"), SENTENCES)
    settings = online(algorithm, constraint_esteps=5)
    whole = per_example._steps(problem, settings, None, 4)[1]
    half = per_example._steps(problem, settings, None, 2)[0]
    save_checkpoint(tmp_path, half, {})
    resumed_state = load_checkpoint(tmp_path)[1]
    assert resumed_state.extra[CORPUS_DUALS].max() > 0
    resumed = per_example._steps(problem, settings, resumed_state, 4)[1]
    assert np.array_equal(whole.params.theta, resumed.params.theta)
    assert [r["constraints"] for r in whole.history] == [r["constraints"] for r in resumed.history]


def test_what_cannot_project_online_still_says_so(tmp_path):
    problem = problem_from_lines(tmp_path, per_example.constrained(per_example.HMM, "<= 0.7"), per_example.PAIRS)
    with pytest.raises(EmcError, match=r"--algorithm hard cannot project onto the per-example constraint"):
        fit(problem, FitSettings(algorithm="hard", iterations=1))
