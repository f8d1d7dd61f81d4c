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
