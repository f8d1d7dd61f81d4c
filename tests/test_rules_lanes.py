"""The batched E-step of a rule program whose levels are positions (estep_batch: examples of one
length advanced together as lanes, emc/structures/rules/lanes.py, its sums over a state as matrix
products, contraction.py) equals the one-example E-step (estep_example, which
test_rules_bruteforce holds to enumeration) example by example: log Z and the weighted counts,
with groups longer than LANES, lone lengths, impossible examples (a word no state emits) and
per-example weights."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT
from emc.codegen.render import render
from emc.runtime.executor import LocalExecutor
from emc.runtime.kernels import batch_estep, estep_batch_for
from emc.spec.check import check
from emc.spec.parse import parse_file
from emc.structures.rules.contract import contract_rows, lane_rows, lane_stride, scatter_rows, transposed, weight_block
from emc.structures.rules.lanes import LANES
from emc.structures.semiring import SUM
from helpers import check_against_enumeration, problem_from_lines, random_params
from random_programs import random_program
from reference import rule_decoded_form, rule_structures

# (spec, overrides, alphabet, longest, contractions): the position-indexed programs in specs/ that
# run as lanes, and how many of their rules the lanes run as matrix products (each in the inside
# and the outside)
CASES = [
    ("rules/chain.em", {"states": 3}, "abcd", 6, 1),
    ("rules/segment.em", {"maxlen": 3}, "abc", 7, 0),
    ("hmm_mixture.em", {"components": 2, "states": 2}, "abcd", 5, 0),
]
# those whose innermost loop reads a factor through the example's tokens: no lanes (lanes.py: check_reads)
ONE_BY_ONE = ["hsmm.em", "hmm_prevword.em"]


def lines_for(name: str, alphabet: str, longest: int, rng: np.random.Generator) -> list[str]:
    # many short examples, a group of one length that outgrows LANES, a lone long one, and "z" (in
    # two of the first), which the test makes impossible
    lengths = list(rng.integers(1, longest, 110)) + [longest + 1] * (LANES + 5) + [longest + 3]
    letters = [rng.choice(list(alphabet), size=k) for k in lengths]
    letters[5][0] = letters[40][-1] = "z"
    joiner = "" if "segment" in name else " "
    return [joiner.join(word) for word in letters]


def one_by_one(problem, params, weights):
    executor = LocalExecutor(problem, threads=1)
    counts = np.zeros((1, problem.layout.size))
    log_z = np.empty(problem.n_examples)
    batch_estep(problem.model.module.estep_example, np.arange(problem.n_examples), np.array([0, problem.n_examples]),
                weights, problem.ints, problem.array_bounds, problem.meta, params.abi(), executor.prepare(params), SUM,
                counts, log_z)
    return counts[0], log_z


@pytest.mark.parametrize("name, overrides, alphabet, longest, contractions", CASES, ids=[c[0] for c in CASES])
def test_lanes_equal_one_example_at_a_time(tmp_path, monkeypatch, name, overrides, alphabet, longest, contractions):
    rng = np.random.default_rng(3)
    spec = (ROOT / "specs" / name).read_text(encoding="utf-8")
    problem = problem_from_lines(tmp_path, spec, lines_for(name, alphabet, longest, rng), None, overrides)
    module = problem.model.module
    assert hasattr(module, "estep_batch")
    source = Path(module.__file__).read_text(encoding="utf-8")
    assert source.count(" contract_rows(rwb") == contractions  # the outside reads the inside's products again
    impossible_word = problem.corpus.fields["x"].vocab.lookup("z") if "segment" not in name else None
    check_lanes(problem, rng, monkeypatch, impossible_word)


@pytest.mark.parametrize("seed", [0, 8])
def test_lanes_of_random_programs_equal_one_example_at_a_time(tmp_path, monkeypatch, seed):
    """Programs of the position-indexed family of tests/random_programs.py (even seeds) that run as lanes
    (2, 6 and 16 do not: a factor their innermost loop reads sees the tokens)."""
    text, _ = random_program(seed)
    rng = np.random.default_rng(seed)
    problem = problem_from_lines(tmp_path, text, lines_for("random", "abc", 5, rng), None, {})
    assert hasattr(problem.model.module, "estep_batch")
    check_lanes(problem, rng, monkeypatch, None)


def check_lanes(problem, rng, monkeypatch, impossible_word) -> None:
    """estep_batch (most examples as lanes) and the executor's E-step through it against
    estep_example, with random parameters and weights; impossible_word: a word made impossible."""
    module = problem.model.module
    params = random_params(problem, rng)
    if impossible_word is not None:  # no state emits "z"
        for table in problem.layout.learned():
            if table.outcome_spaces == ("vocab:x",):
                params.theta[table.entries][table.local_outcomes() == impossible_word] = 0.0
    weights = rng.uniform(0.5, 2.0, problem.n_examples)
    examples = np.arange(problem.n_examples, dtype=np.int64)

    executor = LocalExecutor(problem, threads=1)
    deferred = np.empty(len(examples), np.int64)
    counts = (np.zeros(problem.layout.size), np.zeros(0, np.uint8), np.zeros(0, np.int64))
    left = module.estep_batch(examples, problem.ints, problem.array_bounds, problem.meta, params.abi(),
                              executor.prepare(params), weights, counts, np.empty(len(examples)), deferred)
    # most went as lanes (not the lone long one, nor a group with an impossible example): this tests the lanes
    assert left < len(examples) // 2
    check_tracked_lanes(module, problem, executor, params, weights, examples, counts[0])

    assert estep_batch_for(module, len(examples)) is None  # too few examples to pay for the lanes
    monkeypatch.setattr(module, "BATCH_MIN", 0)  # the executor takes the lanes for these few examples too
    assert estep_batch_for(module, len(examples)) is not None
    result = executor.estep(params, examples, SUM, weights)
    expected_counts, expected_log_z = one_by_one(problem, params, weights)
    impossible = np.isneginf(expected_log_z)
    assert impossible.sum() == (2 if impossible_word is not None else 0)
    np.testing.assert_array_equal(np.isneginf(result.log_z), impossible)
    np.testing.assert_allclose(result.log_z[~impossible], expected_log_z[~impossible], rtol=1e-11)
    np.testing.assert_allclose(result.counts, expected_counts, rtol=1e-9, atol=1e-12)


def check_tracked_lanes(module, problem, executor, params, weights, examples, untracked) -> None:
    """The lanes with tracked counts (stepwise and incremental EM's mini-batches: each entry
    written listed once in touched[1:touched[0] + 1]) write the same counts as untracked, and list
    exactly the entries written."""
    size = problem.layout.size
    dense, mark, touched = np.zeros(size), np.zeros(size, np.uint8), np.zeros(size + 1, np.int64)
    deferred = np.empty(len(examples), np.int64)
    left = module.estep_batch(examples, problem.ints, problem.array_bounds, problem.meta, params.abi(),
                              executor.prepare(params), weights, (dense, mark, touched), np.empty(len(examples)),
                              deferred)
    assert left < len(examples) // 2
    np.testing.assert_allclose(dense, untracked, rtol=1e-12, atol=1e-300)
    listed = touched[1:touched[0] + 1]
    assert len(set(listed.tolist())) == len(listed)  # none twice
    assert set(np.flatnonzero(dense).tolist()) <= set(listed.tolist())
    np.testing.assert_array_equal(np.flatnonzero(mark), np.sort(listed))


@pytest.mark.parametrize("name", ONE_BY_ONE)
def test_programs_reading_tokens_innermost_keep_one_example_at_a_time(name):
    source = render(check(parse_file(ROOT / "specs" / name)))
    assert "def estep_example(" in source and "def estep_batch(" not in source


@pytest.mark.parametrize("klo, khi, jlo, jhi", [(0, 3, 0, 4), (1, 2, 2, 4), (2, 1, 0, 4), (0, 3, 3, 2)])
def test_matrix_products_equal_their_sums(klo, khi, jlo, jhi):
    """contract.py's products against the sums they replace, on a sub-block of the table and on
    empty ranges (which a block taken once per pass may have)."""
    rng = np.random.default_rng(klo * 7 + jhi)
    stride, ln, base, start = 5, 3, 2, 4
    lw = lane_stride(ln)  # the lanes' rows padded to whole vectors, the padding zero
    weights = rng.random(start + 4 * stride + 1)
    ks, js = range(klo, khi + 1), range(jlo, jhi + 1)
    chart, heads = lane_rows(base + 6, ln), lane_rows(len(ks), ln)
    chart.reshape(-1, lw)[:base + 6, :ln] = rng.random((base + 6, ln))
    heads.reshape(-1, lw)[:len(ks), :ln] = rng.random((len(ks), ln))
    w = np.array([[weights[start + k * stride + j] for j in js] for k in ks]).reshape(len(ks), len(js))
    block = weight_block(weights, start, stride, klo, khi, jlo, jhi)
    assert np.array_equal(block, w) and np.array_equal(transposed(block), w.T)
    body = chart.reshape(-1, lw)[base:base + len(js)]
    g = lane_rows(len(ks) + 1, ln)
    contract_rows(block, chart, ln, base, g, 1)  # G's rows from row 1 on (the head's cells)
    assert np.allclose(g.reshape(-1, lw)[1:len(ks) + 1], w @ body) and not g.reshape(-1, lw)[0].any()
    out = chart.copy()
    scatter_rows(transposed(block), out, ln, base, heads)
    expected = chart.copy().reshape(-1, lw)
    expected[base:base + len(js)] += w.T @ heads.reshape(-1, lw)[:len(ks)]
    assert np.allclose(out, expected.ravel())


def test_a_level_of_subnormal_values_keeps_its_scale(tmp_path):
    """A word every state emits with a probability near 1e-310 makes its level's values subnormal,
    where 1 / the level's largest value overflows: the level is then scaled by at most
    codegen.SHRINK_MOST. One example at a time, log Z, the counts and the Viterbi derivation equal
    enumeration (the counts were infinite before: the next level's scale factor overflowed); as
    lanes, log Z equals it. (The lanes' counts at such a level are not exact yet: their product
    multiplies the scale factor and the head's outside, both near 1e150, before the tiny factor.)"""
    spec = (ROOT / "specs" / "rules" / "chain.em").read_text(encoding="utf-8")
    problem = problem_from_lines(tmp_path, spec, ["a b"] * 6 + ["b a"] * 6, None, {"states": 2})
    params = random_params(problem, np.random.default_rng(5))
    rare = problem.corpus.fields["x"].vocab.lookup("b")
    for table in problem.layout.learned():
        if table.outcome_spaces == ("vocab:x",):
            params.theta[table.entries][table.local_outcomes() == rare] *= 1e-310
    check_against_enumeration(problem, params, 0, rule_structures(problem, 0), lambda d: rule_decoded_form(problem, d))

    module, examples = problem.model.module, np.arange(problem.n_examples, dtype=np.int64)
    counts = (np.zeros(problem.layout.size), np.zeros(0, np.uint8), np.zeros(0, np.int64))
    log_z = np.empty(len(examples))
    left = module.estep_batch(examples, problem.ints, problem.array_bounds, problem.meta, params.abi(),
                              LocalExecutor(problem, threads=1).prepare(params), np.ones(len(examples)), counts, log_z,
                              np.empty(len(examples), np.int64))
    assert left == 0  # both lengths' groups ran as lanes
    expected_log_z = one_by_one(problem, params, np.ones(len(examples)))[1]
    assert np.all(expected_log_z < -700)  # the subnormal factor is in every example
    np.testing.assert_allclose(log_z, expected_log_z, rtol=1e-11)
