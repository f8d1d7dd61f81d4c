"""Every EM variant runs unchanged on every spec in specs/ (so on every structure), on tiny data:
finite objectives, normalised learned rows, and the batch-style objective never decreases."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import ROOT
from emc.runtime.fit import fit
from emc.runtime.settings import FitSettings
from emc.spec.check import check
from emc.spec.parse import parse_file
from helpers import problem_from_lines
from test_variants import dense_incremental

ALGORITHMS = ["batch", "incremental", "stepwise", "hard", "annealed", "skewed", "vb"]

# Tiny data in each structure's default input format.
TINY = {
    "chain": ["a b c", "b c a a", "c a", "a b", "b b c a"],
    "segmentation": ["abcab", "cabab", "abc", "bca", "aabcc"],
    "alignment": ["a b ||| x y", "b c ||| y z z", "a ||| x", "c a ||| z x"],
    "spantree": ["D N V", "D N V D N", "N V", "D A N V"],
    "label": ["a b c a", "b c c", "a a b", "c b", "a c b b"],
}
# Extra data options a spec needs (e.g. files for its fixed blocks), by spec name.
OPTIONS: dict[str, dict] = {}


def specs():
    out = []
    for path in sorted((ROOT / "specs").glob("*.em")):
        model = check(parse_file(path))
        if any(f.kind == "fixed" for f in model.factors) and path.stem not in OPTIONS:
            continue  # needs its fixed tables: listed in OPTIONS when it has them
        out.append(path)
    return out


@pytest.mark.parametrize("spec", specs(), ids=lambda p: p.stem)
def test_every_algorithm_runs(tmp_path, spec):
    model = check(parse_file(spec))
    structure = model.structure.name
    overrides = {"states": 2} if structure == "chain" else {"classes": 2} if structure == "label" else {}
    problem = problem_from_lines(tmp_path, spec.read_text(), TINY[structure], OPTIONS.get(spec.stem, {}), overrides)
    for algorithm in ALGORITHMS:
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


@pytest.mark.parametrize("spec", specs(), ids=lambda p: p.stem)
def test_incremental_keeps_each_examples_statistics_on_every_spec(tmp_path, spec):
    """The listed and replayed passes of incremental EM (emc/runtime/online.py) against the
    textbook update over whole tables, on every structure's tables (dense and sparse)."""
    model = check(parse_file(spec))
    structure = model.structure.name
    overrides = {"states": 2} if structure == "chain" else {"classes": 2} if structure == "label" else {}
    problem = problem_from_lines(tmp_path, spec.read_text(), TINY[structure], OPTIONS.get(spec.stem, {}), overrides)
    settings = FitSettings(algorithm="incremental", passes=3, tolerance=0, eval_every=0, seed=3)
    np.testing.assert_allclose(fit(problem, settings).params.weights(problem.layout),
                               dense_incremental(problem, settings), rtol=1e-8, atol=1e-12)
