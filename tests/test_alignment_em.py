"""EM on alignment models: batch and hard EM never lower their objective (IBM 1 and the HMM
aligner, with and without NULL), the t-table holds exactly the co-occurring pairs, the 32-bit
link-rank layout gives the same E-step as the 16-bit one, and --init ibm1 starts the HMM from
IBM 1's alignments."""
from __future__ import annotations

import numpy as np
import pytest

import emc.runtime.modes  # noqa: F401  the modes register their starts (--init ibm1) as emc's job and API load them
from conftest import ROOT
from emc.runtime.executor import LocalExecutor
from emc.runtime.fit import fit
from emc.runtime.params import random_init
from emc.runtime.settings import FitSettings
from emc.structures.alignment import data as alignment_data
from emc.structures.semiring import SUM
from helpers import problem_from_lines

IBM1 = (ROOT / "specs" / "ibm1.em").read_text()
HMM = (ROOT / "specs" / "hmm_align.em").read_text()
PAIRS = ["the house ||| la maison", "the blue house ||| la maison bleue", "the flower ||| la fleur",
         "a blue flower ||| une fleur bleue", "the house is blue ||| la maison est bleue",
         "a house ||| une maison", "the flower is small ||| la fleur est petite", "small ||| petite"] * 2


def monotone(values):
    return all(b >= a - 1e-9 * abs(a) for a, b in zip(values, values[1:]))


@pytest.mark.parametrize("spec", [IBM1, HMM], ids=["ibm1", "hmm"])
@pytest.mark.parametrize("null", ["yes", "no"])
@pytest.mark.parametrize("algorithm", ["batch", "hard"])
def test_em_never_lowers_the_objective(tmp_path, spec, null, algorithm):
    problem = problem_from_lines(tmp_path, spec, PAIRS, overrides={"null": null, "maxjump": 2})
    result = fit(problem, FitSettings(algorithm=algorithm, iterations=12, tolerance=0, eval_every=0, seed=3))
    values = [r["objective"] for r in result.history]
    assert len(values) == 12 and monotone(values), values
    assert values[-1] > values[0]


def test_the_translation_table_holds_the_co_occurring_pairs_only(tmp_path):
    problem = problem_from_lines(tmp_path, IBM1, PAIRS)
    table = problem.layout.table("trans")
    e_words, f_words = problem.vocabs["vocab:e"].values, problem.vocabs["vocab:f"].values
    null = len(e_words)
    entries = {(null if r == null else e_words[r], f_words[o]) for r, o in zip(table.entry_rows, table.entry_outcomes)}
    expected = set()
    for line in PAIRS:
        source, target = (side.split() for side in line.split("|||"))
        expected |= {(e, f) for e in source + [null] for f in target}
    assert entries == expected and table.size == len(expected)
    assert table.size < table.rows * table.outcomes  # sparse: no dense |Ve| x |Vf| table


def test_wide_link_ranks_give_the_same_e_step(tmp_path, monkeypatch):
    """Rows with more than 65,535 outcomes store 32-bit ranks: forced here by a limit of 0."""
    narrow = problem_from_lines(tmp_path, HMM, PAIRS)
    monkeypatch.setattr(alignment_data, "NARROW_LIMIT", 0)
    wide = problem_from_lines(tmp_path, HMM, PAIRS)
    assert narrow.ints.size < wide.ints.size
    params = random_init(narrow.layout, narrow.fixed_theta, np.random.default_rng(1), 1.0)
    examples = np.arange(narrow.n_examples)
    one, two = (LocalExecutor(p, threads=1).estep(params, examples, SUM, np.ones(len(examples))) for p in (narrow, wide))
    np.testing.assert_array_equal(one.counts, two.counts)
    np.testing.assert_array_equal(one.log_z, two.log_z)


def test_init_ibm1_starts_the_hmm_from_ibm1_alignments(tmp_path):
    problem = problem_from_lines(tmp_path, HMM, PAIRS, overrides={"maxjump": 2})
    ibm1_start = fit(problem, FitSettings(init="ibm1", iterations=1, tolerance=0, eval_every=0, seed=3))
    random_start = fit(problem, FitSettings(iterations=1, tolerance=0, eval_every=0, seed=3))
    assert ibm1_start.history[0]["objective"] > random_start.history[0]["objective"]
    jump = problem.layout.table("jump")
    weights = ibm1_start.params.weights(problem.layout)[jump.entries]
    assert not np.allclose(weights, weights[0])  # learned from IBM 1's alignments, not left uniform
