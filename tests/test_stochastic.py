"""Stochastic EM (--algorithm stochastic): with many samples it tracks batch EM on tiny data, with
few it does not; a fit depends on --seed only (threads do not matter) and different seeds differ;
annealed sample counts grow as documented; bad settings get a message."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import ROOT
from emc.runtime.executor import LocalExecutor
from emc.runtime.fit import fit
from emc.runtime.settings import FitSettings
from emc.spec.errors import EmcError
from helpers import problem_from_lines

HMM = (ROOT / "specs" / "hmm.em").read_text()
SENTENCES = ["a b c d", "b c a", "d d a b c", "c a", "a b b c d a", "b", "d c b a", "a c"]


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    return problem_from_lines(tmp_path_factory.mktemp("stochastic"), HMM, SENTENCES, overrides={"states": 2})


def settings(**kw) -> FitSettings:
    return FitSettings(**{"algorithm": "stochastic", "iterations": 6, "tolerance": 0, "eval_every": 0, **kw})


def objectives(result) -> np.ndarray:
    return np.array([r["objective"] for r in result.history])


def test_many_samples_track_batch_em(problem):
    batch = fit(problem, FitSettings(iterations=6, tolerance=0, eval_every=0))
    many = fit(problem, settings(samples=20000))
    few = fit(problem, settings(samples=1))
    assert objectives(many)[0] == objectives(batch)[0]  # the same start, scored exactly
    gap_many = np.max(np.abs(objectives(many) - objectives(batch)))
    gap_few = np.max(np.abs(objectives(few) - objectives(batch)))
    assert gap_many < 0.05, gap_many
    assert gap_few > 10 * gap_many, (gap_few, gap_many)
    np.testing.assert_allclose(many.params.weights(problem.layout), batch.params.weights(problem.layout), atol=0.02)


def test_a_fit_depends_on_the_seed_only(problem):
    one = fit(problem, settings(samples=3), executor=LocalExecutor(problem, threads=1))
    two = fit(problem, settings(samples=3), executor=LocalExecutor(problem, threads=2))
    other = fit(problem, settings(samples=3, seed=2))
    w = problem.layout
    # the same draws; only the order in which chunks' counts are added differs (last bits)
    np.testing.assert_allclose(one.params.weights(w), two.params.weights(w), rtol=1e-12, atol=1e-15)
    again = fit(problem, settings(samples=3), executor=LocalExecutor(problem, threads=1))
    np.testing.assert_array_equal(one.params.weights(w), again.params.weights(w))
    assert not np.allclose(one.params.weights(w), other.params.weights(w))


def test_the_draws_change_from_iteration_to_iteration(problem):
    """Same start (init from batch EM's seed), two seeds of the sampler: a seed picks the draws."""
    start = fit(problem, FitSettings(iterations=1, tolerance=0, eval_every=0)).params
    a = fit(problem, settings(samples=2, iterations=2), init=start)
    b = fit(problem, settings(samples=2, iterations=2, seed=9), init=start)
    assert objectives(a)[0] == objectives(b)[0]
    assert not np.allclose(a.params.weights(problem.layout), b.params.weights(problem.layout))


def test_annealed_samples_grow_each_iteration(problem):
    result = fit(problem, settings(samples=2, samples_growth=1.5, iterations=5))
    assert [r["samples"] for r in result.history] == [2, 3, 5, 7, 11]  # ceil(2 * 1.5^t)


@pytest.mark.parametrize("bad, message", [({"samples": 0}, "--samples 0"),
                                          ({"samples_growth": 0.5}, "--samples-growth 0.5")])
def test_bad_settings_are_refused(problem, bad, message):
    with pytest.raises(EmcError, match=message):
        fit(problem, settings(**bad))


def test_a_resumed_fit_ends_like_an_uninterrupted_one(problem, tmp_path):
    """The checkpoint carries the fit's generator, so the draws after a resume are the ones the
    uninterrupted fit made."""
    from emc.runtime.checkpoint import load_checkpoint, save_checkpoint

    config = settings(samples=2, samples_growth=1.3, iterations=6)
    whole = fit(problem, config)

    def stop_after_three(state):
        if state.step == 3:
            save_checkpoint(tmp_path, state, {})
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fit(problem, config, after_step=stop_after_three)
    _, state = load_checkpoint(tmp_path)
    resumed = fit(problem, config, state=state)
    np.testing.assert_array_equal(resumed.params.weights(problem.layout), whole.params.weights(problem.layout))
    assert [r["samples"] for r in resumed.history] == [r["samples"] for r in whole.history]


def test_a_structure_without_a_sampler_is_refused():
    from types import SimpleNamespace

    from emc.structures.sampling import require_sampler

    with pytest.raises(EmcError, match="the pcfg structure does not offer"):
        require_sampler(SimpleNamespace(STRUCTURE="pcfg"), "--algorithm stochastic")
