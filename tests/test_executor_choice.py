"""Who chooses where the E-step runs: the runtime opens this machine's executor and refuses a job
that asks for a Dask cluster, which only an opener from above it (emc.dist.executor.open_executor,
what `emc fit` passes in) provides; so emc/runtime never imports emc/dist. The Dask side itself is
tested in tests/test_dask.py."""
from __future__ import annotations

from dataclasses import replace

import pytest

from conftest import ROOT
from emc.runtime.executor import LocalExecutor
from emc.runtime.job import Job, local_executor
from emc.runtime.settings import FitSettings
from emc.spec.errors import EmcError
from helpers import problem_from_lines

HMM = (ROOT / "specs" / "hmm.em").read_text()


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    return problem_from_lines(tmp_path_factory.mktemp("local"), HMM, ["a b c", "b a"], overrides={"states": 2})


def plain_job() -> Job:
    return Job(HMM, "hmm.em", {"states": 2}, ["d.txt"], {}, FitSettings().to_json())


def test_this_machine_by_default(problem):
    with local_executor(plain_job(), problem, FitSettings(), print) as executor:
        assert isinstance(executor, LocalExecutor)


@pytest.mark.parametrize("cluster", [{"workers": 2}, {"scheduler": "tcp://127.0.0.1:1"}])
def test_a_job_asking_for_dask_is_refused_without_its_opener(problem, cluster):
    with pytest.raises(EmcError, match="--workers / --scheduler: this caller runs fits on this machine only"):
        with local_executor(replace(plain_job(), **cluster), problem, FitSettings(), print):
            pass
