"""Every EM variant runs unchanged on every spec in specs/ and specs/rules/ (so on every structure,
built in or written as rules), on tiny data:
finite objectives, normalised learned rows, and the batch-style objective never decreases."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import ROOT
from emc.runtime.fit import fit
from emc.runtime.settings import FitSettings
from emc.runtime.variants import VARIANTS
from emc.spec.check import check
from emc.spec.errors import EmcError
from emc.spec.parse import parse_file
from helpers import tiny_problem
from reference import dense_incremental

ALGORITHMS = list(VARIANTS)
DATA = ROOT / "tests" / "data"

# Extra data options a spec needs (the files of its fixed blocks), by spec name.
OPTIONS: dict[str, dict] = {
    "interpolate": {"fixed": {"lm": str(DATA / "interpolate_lm.txt")}},
}
SPECS = sorted((ROOT / "specs").glob("*.em")) + sorted((ROOT / "specs" / "rules").glob("*.em"))


def options_for(spec):
    """The spec's OPTIONS; a spec with a fixed block and no file for it here fails, never skips."""
    options = OPTIONS.get(spec.stem, {})
    given = options.get("fixed", {})
    missing = [f.name for f in check(parse_file(spec)).factors
               if f.kind == "fixed" and not f.fixed_path and f.name not in given]
    assert not missing, f"{spec.name}: give the files of fixed block(s) {missing} in OPTIONS"
    return options


def refused(problem, algorithm: str) -> bool:
    """Whether the algorithm refuses the problem's featured blocks, or its constraints on the
    posterior (emc/runtime/constraints.py, example_constraints.py, sparsity.py), and says so when asked to fit."""
    constrained = any(f.kind == "constraint" for f in problem.model.checked.factors)
    if problem.model.checked.symmetric is not None:  # the two directions are fitted together (emc fit)
        with pytest.raises(EmcError, match="ties the alignment's two directions"):
            fit(problem, FitSettings(algorithm=algorithm, iterations=1, passes=1))
        return True
    if constrained and not VARIANTS[algorithm].projects:
        with pytest.raises(EmcError, match="constraints"):
            fit(problem, FitSettings(algorithm=algorithm, iterations=1, passes=1))
        return True
    if problem.model.checked.example_constraints and not VARIANTS[algorithm].projects:
        with pytest.raises(EmcError, match="cannot project onto the per-example constraint"):
            fit(problem, FitSettings(algorithm=algorithm, iterations=1, passes=1))
        return True
    if problem.model.checked.sparsity and not VARIANTS[algorithm].projects:
        with pytest.raises(EmcError, match="cannot project onto the posterior sparsity"):
            fit(problem, FitSettings(algorithm=algorithm, iterations=1, passes=1))
        return True
    if not (problem.layout.featured() and VARIANTS[algorithm].refuses_features):
        return False
    with pytest.raises(EmcError, match="cannot fit featured blocks"):
        fit(problem, FitSettings(algorithm=algorithm, iterations=1, passes=1))
    return True


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem if p.parent.name == "specs" else f"rules-{p.stem}")
def test_every_algorithm_runs(tmp_path, spec):
    problem = tiny_problem(tmp_path, spec, options_for(spec))
    for algorithm in ALGORITHMS:
        if refused(problem, algorithm):
            continue
        settings = FitSettings(algorithm=algorithm, iterations=3, passes=2, tolerance=0, eval_every=0,
                               beta_min=0.5, beta_factor=2.0, batch_size=2)
        result = fit(problem, settings)
        assert np.isfinite(result.objective), algorithm
        weights = result.params.weights(problem.layout)
        for table in problem.layout.learned():
            rows = table.row_sums(weights)[table.row_sizes() > 0]  # a sparse table's rows may have no entries
            if algorithm == "vb":
                assert (rows <= 1 + 1e-9).all() and (rows > 0).all(), (algorithm, table.name)
            else:
                np.testing.assert_allclose(rows, 1.0, rtol=1e-9, err_msg=f"{algorithm}: {table.name}")
        if algorithm in ("batch", "hard"):
            values = [r["objective"] for r in result.history]
            assert all(b >= a - 1e-9 * abs(a) for a, b in zip(values, values[1:])), algorithm


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem if p.parent.name == "specs" else f"rules-{p.stem}")
def test_incremental_keeps_each_examples_statistics_on_every_spec(tmp_path, spec):
    """The listed and replayed passes of incremental EM (emc/runtime/online.py) against the
    textbook update over whole tables, on every structure's tables (dense and sparse, plain and
    featured), in blocks of two examples (a chain's through its batched E-step)."""
    problem = tiny_problem(tmp_path, spec, options_for(spec))
    if refused(problem, "incremental"):
        return
    # the textbook update projects nothing (tests/test_constraints_online.py tests the projections)
    settings = FitSettings(algorithm="incremental", passes=3, tolerance=0, eval_every=0, seed=3, block_size=2,
                           constraints="off")
    np.testing.assert_allclose(fit(problem, settings).params.weights(problem.layout),
                               dense_incremental(problem, settings), rtol=1e-8, atol=1e-12)
