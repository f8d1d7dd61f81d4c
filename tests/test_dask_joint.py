"""The joint fits of an alignment's two directions on a Dask LocalCluster of 2 workers (`emc fit
--agree`, with and without a bijectivity bound, and a spec with a symmetry constraint): each
iteration's objective and projection, both directions' final parameters and the projections' duals
equal this machine's fit (to 1e-12 relative: the cluster adds the shards' counts in another
order), agreement's link counts made on the workers, and a joint fit interrupted on the cluster
resumes there to the same models. The fits reach the test module's cluster through --scheduler
(one --workers fit checks that the option starts its own)."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT
from emc.cli import main
from emc.runtime import example_constraints, symmetry
from emc.runtime.checkpoint import load_checkpoint
from emc.runtime.modes import agreement, symmetric
from test_alignment_resume import interrupt_at
from test_dask import client  # noqa: F401 (the module's LocalCluster of 2 workers)

distributed = pytest.importorskip("distributed", reason="Dask is an optional extra: pip install 'emc[dask]'")

HMM = (ROOT / "specs" / "hmm_align.em").read_text().replace("maxjump=20", "maxjump=2")
BIJECTIVE = "constraint bijective : E[count per a.source] <= 0.8\n"  # binding: 1 word links 2 in some pairs
SYMMETRIC = HMM + "constraint symmetric : E[a] agree\n" + BIJECTIVE  # the directions disagree from the start
# no pair repeated: a shard given another's pairs' numbers (its link shifts) would compute other posteriors
PAIRS = ["the house ||| la maison", "the blue house ||| la maison bleue", "the flower ||| la fleur",
         "a blue flower ||| une fleur bleue", "a house ||| une maison", "small ||| petite",
         "the small house ||| la petite maison", "a flower ||| une fleur", "blue ||| bleue",
         "the small flower ||| la petite fleur", "a small blue house ||| une petite maison bleue", "house ||| maison"]
COMMON = ["--iterations", "3", "--tolerance", "0", "--threads", "1"]
JOINT = {"agreement": (HMM, ["--agree", "--init", "uniform"]),
         "agreement-bijective": (HMM + BIJECTIVE, ["--agree", "--init", "uniform", "--constraint-esteps", "5"]),
         "symmetric": (SYMMETRIC, ["--init", "ibm1", "--constraint-esteps", "5"])}
# the state's duals of each fit: both directions' per-example duals, or the symmetric projection's
DUALS = {"agreement-bijective": [example_constraints.STATE_KEY, "reverse_" + example_constraints.STATE_KEY],
         "symmetric": [symmetry.STATE_KEY]}
RTOL = 1e-12


@pytest.fixture(scope="module")
def bitext(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("joint") / "pairs.txt"
    path.write_text("".join(p + "\n" for p in PAIRS))
    return path


def fit(spec: str, bitext: Path, out: Path, *extra: str) -> int:
    """`emc fit` of the spec (as test.em beside the run: one compiled module for the suite)."""
    path = out.parent / "test.em"
    path.write_text(spec)
    return main(["fit", str(path), str(bitext), "--out", str(out), *COMMON, *extra])


def records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]


def numbers(record) -> list[float]:
    """Every number of a log record but its clock's (seconds, examples a second), in order."""
    if isinstance(record, dict):
        return [n for k in sorted(record) if "second" not in k and k != "elapsed" for n in numbers(record[k])]
    if isinstance(record, list):
        return [n for v in record for n in numbers(v)]
    return [float(record)] if isinstance(record, (int, float)) and not isinstance(record, bool) else []


def same_models(here: Path, there: Path) -> None:
    """Both directions' parameters (feature weights too) to RTOL."""
    for sub in ("", "reverse"):
        with np.load(here / sub / "params.npz") as a, np.load(there / sub / "params.npz") as b:
            assert a.files == b.files
            for k in a.files:
                np.testing.assert_allclose(b[k], a[k], rtol=RTOL, atol=1e-15, err_msg=f"{sub or 'forward'} {k}")


@pytest.mark.parametrize("joint", list(JOINT))
def test_a_joint_fit_on_the_cluster_equals_this_machines(client, bitext, tmp_path, capsys, monkeypatch,  # noqa: F811
                                                         joint):
    spec, extra = JOINT[joint]
    assert fit(spec, bitext, tmp_path / "here", *extra) == 0

    def on_this_machine(*args, **kwargs):
        raise AssertionError("agreement's link counts were made on the client, not where the pairs live")
    monkeypatch.setattr(agreement, "_link_counts", on_this_machine)
    assert fit(spec, bitext, tmp_path / "there", *extra, "--scheduler", client.scheduler.address) == 0
    assert "E-step on Dask: 2 shards of each of 2 models" in capsys.readouterr().err
    here, there = records(tmp_path / "here"), records(tmp_path / "there")
    assert [r["iteration"] for r in there] == [1, 2, 3]
    for a, b in zip(here, there):
        assert numbers(b) == pytest.approx(numbers(a), rel=RTOL, abs=1e-13)
    same_models(tmp_path / "here", tmp_path / "there")
    # both directions moved from their start, and the projection bound (else the test shows little)
    assert here[-1]["objective"] > here[0]["objective"]
    if joint in DUALS:
        rows = here[0]["example_constraints"]
        assert [r["name"] for r in rows] == ["symmetric", "bijective"][-len(rows):]
        assert all(r["lambda"] > 0 for r in rows)
        states = [load_checkpoint(tmp_path / run)[1].extra for run in ("here", "there")]
        for key in DUALS[joint]:
            np.testing.assert_allclose(states[1][key], states[0][key], rtol=RTOL, atol=1e-13, err_msg=key)


@pytest.mark.parametrize("joint", ["agreement", "symmetric"])
def test_a_joint_fit_interrupted_on_the_cluster_resumes_there(client, bitext, tmp_path,  # noqa: F811
                                                            monkeypatch, capsys, joint):
    """Ctrl-C during the second iteration's M-steps; `emc fit --resume` reconnects to the cluster the
    fit named and finishes with this machine's uninterrupted models."""
    spec, extra = JOINT[joint]
    assert fit(spec, bitext, tmp_path / "whole", *extra) == 0
    with monkeypatch.context() as patch:
        interrupt_at(patch, agreement if joint == "agreement" else symmetric, 2 + 1)  # two M-steps an iteration
        assert fit(spec, bitext, tmp_path / "cut", *extra, "--scheduler", client.scheduler.address) == 130
    assert f"`emc fit --resume {tmp_path / 'cut'}`" in capsys.readouterr().err
    assert main(["fit", "--resume", str(tmp_path / "cut")]) == 0
    assert "E-step on Dask" in capsys.readouterr().err
    assert [r["iteration"] for r in records(tmp_path / "cut")] == [1, 2, 3]
    same_models(tmp_path / "whole", tmp_path / "cut")


def test_workers_start_a_cluster_for_the_joint_fit(bitext, tmp_path, capsys):
    spec, extra = JOINT["agreement"]
    assert fit(spec, bitext, tmp_path / "run", *extra, "--iterations", "1", "--workers", "2") == 0
    assert "E-step on Dask: 2 shards of each of 2 models" in capsys.readouterr().err
    assert (tmp_path / "run" / "reverse" / "params.npz").exists()


def test_a_worker_killed_in_the_agreement_estep_loses_no_iteration(client, tmp_path):  # noqa: F811
    """Both directions' lost shards are sent again (to one surviving worker) and the joint E-step
    runs again: the models equal this machine's. Last in the module: the cluster's nanny restarts
    the killed worker, which the fits before did not have to wait for."""
    from emc.dist.executor import DaskExecutor
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.fit import run_steps
    from emc.runtime.modes.agreement import Agreement, Direction, _both_params
    from emc.runtime.settings import FitSettings
    from emc.runtime.state import FitState
    from helpers import problem_from_lines

    settings = FitSettings(iterations=3, tolerance=0, eval_every=0, threads=1, init="uniform")
    problems = []
    for reverse in (False, True):
        (tmp_path / str(reverse)).mkdir()
        problems.append(problem_from_lines(tmp_path / str(reverse), HMM, PAIRS, {"reverse": reverse}))
    forward = DaskExecutor(problems[0], client)
    remote = [forward, DaskExecutor(problems[1], client, bounds=forward.bounds)]
    calls = {"n": 0}

    def kill_one_worker(executor):
        calls["n"] += 1
        if calls["n"] == 2:  # during the second joint E-step, after its tasks were submitted
            pid = next(iter(executor.client.run(os.getpid).values()))
            os.kill(pid, signal.SIGKILL)

    forward.before_gather = kill_one_worker
    fitted = []
    for executors in ([LocalExecutor(p, threads=1) for p in problems], remote):
        variant = Agreement([Direction(p, e) for p, e in zip(problems, executors)], settings)
        state = FitState(params=None, rng=np.random.default_rng(settings.seed))
        variant.start(state)
        run_steps(variant, state, settings, problems[0].n_examples)
        fitted.append(_both_params(state))
    assert calls["n"] == 5  # 3 joint E-steps, the second one twice, then the final objective's posteriors
    for here, there, problem in zip(*fitted, problems):
        np.testing.assert_allclose(there.weights(problem.layout), here.weights(problem.layout), rtol=RTOL, atol=1e-15)
