"""The E-step on a Dask LocalCluster of 2 worker processes: the same parameters as a local run (to
1e-9 relative) for batch, stepwise, annealed, hard and stochastic EM (the same draws: each example is
seeded by its index in the corpus, not in its shard) on the HMM and for word segmentation, and
a featured (log-linear) block, and a worker killed mid-iteration loses nothing."""
from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from conftest import ROOT
from emc.runtime.fit import fit
from emc.runtime.settings import FitSettings
from helpers import problem_from_lines

distributed = pytest.importorskip("distributed", reason="Dask is an optional extra: pip install 'emc[dask]'")

HMM = (ROOT / "specs" / "hmm.em").read_text()
SENTENCES = ["a b c d", "b c a", "d d a b c", "c a", "a b b c d a", "b", "d c b a", "a c", "c c d", "b a d"] * 6


@pytest.fixture(scope="module")
def client():
    from emc.dist.executor import connect, disconnect
    c = connect(workers=2)
    yield c
    disconnect(c)


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    return problem_from_lines(tmp_path_factory.mktemp("dask"), HMM, SENTENCES, overrides={"states": 3})


@pytest.mark.parametrize("settings", [
    FitSettings(iterations=6, tolerance=0, eval_every=0),
    FitSettings(algorithm="stepwise", passes=2, batch_size=5, eval_every=0),
    FitSettings(algorithm="annealed", iterations=3, beta_min=0.25, beta_factor=2.0, eval_every=0),
    FitSettings(algorithm="hard", iterations=4, tolerance=0, eval_every=0),
    FitSettings(algorithm="stochastic", iterations=4, samples=3, eval_every=0),
], ids=["batch", "stepwise", "annealed", "hard", "stochastic"])
def test_two_workers_give_the_local_parameters(client, problem, settings):
    from emc.dist.executor import DaskExecutor

    local = fit(problem, settings)
    remote = fit(problem, settings, executor=DaskExecutor(problem, client))
    w = problem.layout
    np.testing.assert_allclose(remote.params.weights(w), local.params.weights(w), rtol=1e-9, atol=1e-15)
    assert remote.objective == pytest.approx(local.objective, rel=1e-9)


def test_another_structure_too(client, tmp_path):
    """Word segmentation: the same parameters on the cluster as here."""
    from emc.dist.executor import DaskExecutor

    segment = problem_from_lines(tmp_path, (ROOT / "specs" / "segment.em").read_text(),
                                 ["abcab", "cabab", "abc", "bcab", "aabcc", "cab"] * 4, overrides={"maxlen": 3})
    settings = FitSettings(iterations=5, tolerance=0, eval_every=0)
    local = fit(segment, settings)
    remote = fit(segment, settings, executor=DaskExecutor(segment, client))
    np.testing.assert_allclose(remote.params.weights(segment.layout), local.params.weights(segment.layout),
                               rtol=1e-9, atol=1e-15)


def test_featured_blocks_too(client, tmp_path):
    """A featured HMM (log-linear emissions): the workers read the probabilities the driver's
    gradient M-step made, so weights and parameters equal a local run's."""
    from emc.dist.executor import DaskExecutor

    featured = problem_from_lines(tmp_path, (ROOT / "specs" / "hmm_features.em").read_text(),
                                  [s.upper() if i % 3 == 0 else s for i, s in enumerate(SENTENCES)],
                                  overrides={"states": 3})
    settings = FitSettings(iterations=4, tolerance=0, eval_every=0)
    local = fit(featured, settings)
    remote = fit(featured, settings, executor=DaskExecutor(featured, client))
    np.testing.assert_allclose(remote.params.features["emit"], local.params.features["emit"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(remote.params.weights(featured.layout), local.params.weights(featured.layout),
                               rtol=1e-9, atol=1e-15)
    assert remote.objective == pytest.approx(local.objective, rel=1e-9)


def test_a_killed_worker_loses_no_iteration(client, problem):
    from emc.dist.executor import DaskExecutor

    settings = FitSettings(iterations=5, tolerance=0, eval_every=0)
    local = fit(problem, settings)
    executor = DaskExecutor(problem, client)
    calls = {"n": 0}

    def kill_one_worker(ex):
        calls["n"] += 1
        if calls["n"] == 3:  # during the third E-step, after its tasks were submitted
            pids = ex.client.run(os.getpid)
            os.kill(next(iter(pids.values())), signal.SIGKILL)

    executor.before_gather = kill_one_worker
    remote = fit(problem, settings, executor=executor)
    assert calls["n"] > 3  # the third E-step was run again
    np.testing.assert_allclose(remote.params.weights(problem.layout), local.params.weights(problem.layout),
                               rtol=1e-9, atol=1e-15)


def test_cli_workers(tmp_path, capsys):
    from emc.cli import main

    data = tmp_path / "d.txt"
    data.write_text("\n".join(SENTENCES) + "\n")
    assert main(["fit", str(ROOT / "specs" / "hmm.em"), str(data), "--states", "3", "--iterations", "3",
                 "--workers", "2", "--out", str(tmp_path / "run")]) == 0
    assert "E-step on Dask: 2 shards" in capsys.readouterr().err
    assert (tmp_path / "run" / "params.npz").exists()


def _local_and_remote(problem, settings, client) -> tuple[tuple, tuple]:
    """(result, last state's extra, executor) of a local fit and of the same fit on the cluster."""
    from emc.dist.executor import DaskExecutor
    from emc.runtime.executor import LocalExecutor

    fits = []
    for executor in (LocalExecutor(problem, threads=1), DaskExecutor(problem, client)):
        last = {}
        result = fit(problem, settings, executor=executor, after_step=lambda state: last.update(state.extra))
        fits.append((result, last, executor))
    return fits[0], fits[1]


def _assert_same_fit(problem, local, remote, duals: str, record: str, rtol: float = 1e-9) -> None:
    """The same weights, objective, projections logged and duals reached (to `rtol`)."""
    (a, a_extra, _), (b, b_extra, _) = local, remote
    w = problem.layout
    np.testing.assert_allclose(b.params.weights(w), a.params.weights(w), rtol=rtol, atol=1e-12)
    assert b.objective == pytest.approx(a.objective, rel=1e-9)
    assert np.asarray(a_extra[duals]).max() > 0  # the constraint binds: the duals did something
    np.testing.assert_allclose(b_extra[duals], a_extra[duals], rtol=rtol, atol=1e-12)
    assert len(a.history) == len(b.history)
    for x, y in zip(a.history, b.history):
        assert _numbers(y[record]) == pytest.approx(_numbers(x[record]), rel=rtol, abs=1e-12)


def _numbers(record) -> list[float]:
    """Every number of a logged projection, in order."""
    if isinstance(record, dict):
        return [n for k in sorted(record) for n in _numbers(record[k])]
    if isinstance(record, list):
        return [n for v in record for n in _numbers(v)]
    return [float(record)] if isinstance(record, (int, float)) else []


PROJECTING_FITS = [FitSettings(iterations=3, tolerance=0, eval_every=0, threads=1, init="random"),
                   FitSettings(algorithm="stepwise", passes=2, batch_size=4, eval_every=0, threads=1, init="random")]


@pytest.mark.parametrize("settings", PROJECTING_FITS, ids=["batch", "stepwise"])
def test_a_corpus_constraint_projects_on_the_cluster_as_here(client, tmp_path, settings):
    """The DMV with a binding rule share: lambda is shared by every shard (each evaluation of the
    dual is one E-step over all of them), so fit, log and lambda equal a local fit's."""
    import test_constraints as corpus
    from emc.runtime.variants.base import CORPUS_DUALS

    problem = problem_from_lines(tmp_path, corpus.constrained(">= 0.95"), corpus.SENTENCES * 3)
    local, remote = _local_and_remote(problem, settings, client)
    _assert_same_fit(problem, local, remote, CORPUS_DUALS, "constraints")


@pytest.mark.parametrize("settings", PROJECTING_FITS, ids=["batch", "stepwise"])
def test_per_example_duals_travel_with_each_shard(client, tmp_path, settings):
    """The HMM aligner with a binding bijectivity bound: each pair's duals go to its shard's E-step
    and come back solved, so fit, log, duals and the projected decoding equal a local fit's."""
    import test_example_constraints as per_example

    problem = problem_from_lines(tmp_path, per_example.constrained(per_example.HMM, "<= 0.7"), per_example.PAIRS * 3)
    local, remote = _local_and_remote(problem, settings, client)
    _assert_same_fit(problem, local, remote, per_example.STATE_KEY, "example_constraints")
    every = np.arange(problem.n_examples)
    (here, here_scores), (there, there_scores) = (f[2].decode(f[0].params, every) for f in (local, remote))
    np.testing.assert_allclose(there_scores, here_scores, rtol=1e-9)
    # the same alignments, but where two tie: the weights agree to the last bits, not beyond, so a
    # tie's two sides may swap (a pair of this data has two links of one score, on this machine)
    differ = [q for q, (a, b) in enumerate(zip(here, there)) if not np.array_equal(a, b)]
    assert len(differ) < len(every) // 2
    assert all(abs(here_scores[q] - there_scores[q]) <= 1e-12 * abs(here_scores[q]) for q in differ)


@pytest.mark.parametrize("settings", PROJECTING_FITS, ids=["batch", "stepwise"])
def test_sparsity_duals_travel_with_each_shard(client, tmp_path, settings):
    """Posterior sparsity on a tiny HMM: each shard's tokens' duals go with its E-step and their
    posteriors come back, so fit, log and duals equal a local fit's (the sums in another order)."""
    import test_posterior_sparsity as sparsity
    from emc.runtime.sparsity import STATE_KEY

    problem = problem_from_lines(tmp_path, sparsity.SPARSE, sparsity.LINES * 3, overrides={"states": 3})
    local, remote = _local_and_remote(problem, settings, client)
    _assert_same_fit(problem, local, remote, STATE_KEY, "sparsity", rtol=1e-8)
