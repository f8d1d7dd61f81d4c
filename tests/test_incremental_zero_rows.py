"""Incremental EM when a row's statistics become zero: on the tiny DMV data an attach or stop row's
mass decays to nothing within a few passes (its last mass underflows, or cancels to 0 when a
block's old statistics are subtracted), and the E-step then read it as 0 / 0 (a ZeroDivisionError
from compiled code). Such a row now reads as uniform, as batch EM's M-step makes a row with no
counts, in the compiled passes and in the projected path (constraints) alike."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import ROOT
from emc.cli import main
from emc.runtime import online
from emc.runtime.fit import fit
from emc.runtime.params import ParamLayout, ParamState, TableLayout
from emc.runtime.settings import FitSettings
from helpers import problem_from_lines, write_lines
import test_constraints as corpus

SENTENCES = corpus.SENTENCES * 3  # 12 tag sequences: blocks of 4 empty rows within 7 passes
DMV = (ROOT / "specs" / "dmv.em").read_text()


def incremental(**changes) -> FitSettings:
    return FitSettings(**{"algorithm": "incremental", "passes": 20, "block_size": 4, "eval_every": 0, "threads": 1,
                          **changes})


def assert_fit_is_proper(result, problem) -> None:
    """Every pass's and the final objective finite, every learned row of the parameters summing to 1."""
    assert all(math.isfinite(r["objective"]) for r in result.history) and math.isfinite(result.objective)
    weights = result.params.weights(problem.layout)
    for t in problem.layout.learned():
        np.testing.assert_allclose(t.row_sums(weights), 1.0, rtol=0, atol=1e-12, err_msg=t.name)


def emptied_rows(params, problem) -> int:
    """How many rows were refilled (hold entries of EMPTY_ROW_MASS)."""
    refilled = params.theta == online.EMPTY_ROW_MASS
    return sum(int((t.row_sums(refilled) > 0).sum()) for t in problem.layout.learned())


@pytest.mark.parametrize("block_size,seed", [(4, 0), (1, 0), (6, 2)])
def test_the_compiled_passes_read_an_emptied_row_as_uniform(tmp_path, block_size, seed):
    problem = problem_from_lines(tmp_path, DMV, SENTENCES)
    result = fit(problem, incremental(block_size=block_size, seed=seed))
    assert_fit_is_proper(result, problem)
    assert emptied_rows(result.params, problem) > 0  # the case arose


def test_the_projected_path_reads_an_emptied_row_as_uniform(tmp_path):
    problem = problem_from_lines(tmp_path, corpus.constrained(">= 0.75"), SENTENCES)
    result = fit(problem, incremental())
    assert "constraints" in result.history[0]  # each block's posterior was projected (step_by_estep)
    assert_fit_is_proper(result, problem)
    assert emptied_rows(result.params, problem) > 0


def test_emc_fit_incremental_on_the_tiny_dmv_data_ends(tmp_path, capsys):
    data = write_lines(tmp_path / "tags.txt", SENTENCES)
    run = tmp_path / "run"
    assert main(["fit", str(ROOT / "specs" / "dmv.em"), str(data), "--algorithm", "incremental", "--block-size", "4",
                 "--passes", "20", "--out", str(run)]) == 0
    assert "pass   20" in capsys.readouterr().err


def _two_tables() -> ParamLayout:
    """A dense learned table (3 rows, 2 outcomes) and a sparse one (2 rows; entries out of row order)."""
    dense = TableLayout("dense", "learned", 0, 0, 0, 3, 2, ("a",), ("b",))
    sparse = TableLayout("sparse", "learned", 1, 6, 3, 2, 4, ("c",), ("d",),
                         entry_rows=np.array([1, 0, 1, 1, 0], np.int32),
                         entry_outcomes=np.array([0, 1, 2, 3, 3], np.int32))
    return ParamLayout([dense, sparse], 11, 5)


def test_the_spans_of_rows_list_each_rows_entries():
    layout = _two_tables()
    spans, sparse = online.spans_of_rows(layout.tables)
    for r, (first, step, size) in enumerate(spans):
        entries = first + np.arange(size) * step if step else sparse[first:first + size]
        assert sorted(entries) == list(np.flatnonzero(layout.row_of == r)), r


def test_an_empty_row_becomes_uniform_and_a_lost_total_is_recounted():
    layout = _two_tables()
    theta = np.array([0.0, 2.0, 1.0, 0.0, 3.0, 1.0, 0.0, 0.5, 0.0, 0.0, 1.5])
    # row 0 (entries 0, 3) is empty; row 2 (2, 5) lost its total to a clamp; sparse row 1 (6, 8, 9) is empty
    row_total = np.array([0.0, 5.0, 0.0, 2.0, 0.0])
    params = ParamState(theta.copy(), row_total.copy(), np.zeros(5), np.zeros(2), np.ones(1))
    online.refill_empty_rows(params, np.arange(5), online.spans_of_rows(layout.tables))
    mass = online.EMPTY_ROW_MASS
    assert list(params.theta[[0, 3]]) == [mass, mass] and list(params.theta[[6, 8, 9]]) == [mass] * 3
    assert list(params.row_total) == [2 * mass, 5.0, 2.0, 2.0, 3 * mass]
    untouched = np.setdiff1d(np.arange(11), [0, 3, 6, 8, 9])
    assert np.array_equal(params.theta[untouched], theta[untouched])
    weights = params.weights(layout)
    for t in layout.learned():
        np.testing.assert_allclose(t.row_sums(weights), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(weights[[6, 8, 9]], 1 / 3, rtol=1e-15)
