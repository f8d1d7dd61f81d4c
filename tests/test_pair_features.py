"""Featured sparse tables over word pairs (emc/runtime/blocks/pair_features.py): the spec surface of pair
features, which entries they fire on, the gradient of the shared weights and the compiled M-step's
derivatives against finite differences, the E-step over weight-given probabilities against brute
force (IBM 1 and the HMM aligner), the identity-only block against the plain table's EM trace,
EM's monotonicity in the regularised objective, and `emc fit` / `emc decode` / `emc info` on the
reference specs."""
from __future__ import annotations

import json

import numpy as np
import pytest

import emc.runtime.blocks.pair_features as pair_features
from emc.runtime.blocks import pair_mstep
from conftest import ROOT
from emc.runtime.fit import fit
from emc.runtime.settings import FitSettings
from emc.spec.check import check
from emc.spec.errors import SpecError
from emc.spec.model import PairFeature
from emc.spec.parse import parse_text
from helpers import check_against_enumeration, problem_from_lines, random_params
from reference import alignment_structures

HEAD = "model p\nobserved e : tokens, f : tokens\nlatent a : alignment(f from e, null={null}, jump={jump}, maxjump=2)\n"
FEATURED = ("multinomial trans : P(a.target | a.source) features(a.target, a.target.prefix(1), pair.same, "
            "pair.same_lower, pair.prefix(2)) l2(0.5)\n")
IBM1 = HEAD.format(null="yes", jump="no") + FEATURED
HMM = HEAD.format(null="yes", jump="yes") + FEATURED + "multinomial jump : P(a.jump)\n"
PLAIN = HEAD.format(null="yes", jump="no") + "multinomial trans : P(a.target | a.source)\n"
IDENTITY = HEAD.format(null="yes", jump="no") + "multinomial trans : P(a.target | a.source) features(a.target)\n"
LINES = ["the cat ||| le chat", "the dog ||| le chien", "a cat sat ||| un chat assis", "Paris is big ||| paris est grand",
         "the big dog ||| le grand chien", "Paris ||| Paris", "the station ||| la station"]

ERRORS = [
    # (block options, column, message)
    ("features(a.target, pair.position)", 69, "'pair.position' cannot be scored"),
    ("features(a.target, pair.prefix)", 69, "the view 'prefix' takes a length"),
    ("features(a.target, pair.sam)", 69, "unknown pair feature 'pair.sam'"),
    ("features(a.target, pair.same, pair.same)", 75, "the feature 'pair.same' is given twice"),
    ("features(pair.same)", 45, "at least one feature of its outcome beside pair features"),
    ("features(a.target, pair.same.lower)", 64, "'pair.same.lower' is not a pair feature"),
]


@pytest.mark.parametrize("options,column,message", ERRORS, ids=[e[2] for e in ERRORS])
def test_bad_pair_features_are_reported_with_their_position(options, column, message):
    text = HEAD.format(null="yes", jump="no") + f"multinomial trans : P(a.target | a.source)  {options}\n"
    with pytest.raises(SpecError) as info:
        check(parse_text(text, "bad.em"))
    first = info.value.first
    assert (first.pos.line, first.pos.column) == (4, column), str(info.value)
    assert message in first.message, str(info.value)


def test_pair_features_need_a_block_over_word_pairs():
    chain = "model c\nobserved x : tokens\nlatent z : chain(x, states=2)\nmultinomial emit : P(x | z) features(x, pair.same)\n"
    with pytest.raises(SpecError, match="compares the block's outcome word with its context word"):
        check(parse_text(chain))


def test_pair_features_are_parsed_beside_the_outcome_features():
    factor = check(parse_text(IBM1)).factors[0]
    assert [f.text for f in factor.features] == ["a.target", "a.target.prefix(1)"]
    assert factor.pair_features == (PairFeature("pair.same", "same"), PairFeature("pair.same_lower", "same_lower"),
                                    PairFeature("pair.prefix(2)", "prefix", 2))


def block_of(problem):
    return problem.layout.table("trans").featured


def test_pair_features_fire_on_the_entries_whose_words_pass_the_test(tmp_path):
    problem = problem_from_lines(tmp_path, IBM1, LINES)
    t = problem.layout.table("trans")
    block = block_of(problem)
    source, target = problem.vocabs["vocab:e+null"].values, problem.vocabs["vocab:f"].values
    column = {name: i for i, name in enumerate(block.feature_names)}
    design = block.design.toarray()
    null_row = t.rows - 1
    tests = {"pair.same": lambda e, f: e == f, "pair.same_lower": lambda e, f: e.lower() == f.lower(),
             "pair.prefix(2)": lambda e, f: len(e) >= 2 and len(f) >= 2 and e[:2] == f[:2]}
    for name, test in tests.items():
        expected = [r != null_row and r > 0 and test(source[r], target[v]) for r, v in zip(t.entry_rows, t.entry_outcomes)]
        np.testing.assert_array_equal(design[:, column[name]] == 1, expected, err_msg=name)
        assert 0 < sum(expected) < len(expected)
    # each entry has its identity column and its prefix(1) column, conjoined with its row
    conjoined = design[:, :block.n_features - 3]
    np.testing.assert_array_equal(conjoined.sum(axis=1), 2)
    assert len(set(block.identity.tolist())) == t.size
    assert (block.column_rows[block.identity] == t.entry_rows).all()


@pytest.mark.parametrize("seed", range(4))
def test_the_gradient_equals_finite_differences(tmp_path, seed):
    rng = np.random.default_rng(seed)
    block = block_of(problem_from_lines(tmp_path, IBM1, LINES))
    counts = rng.gamma(0.8, size=block.design.shape[0])
    weights = rng.normal(size=block.n_features)
    _, gradient = block.objective(weights, counts)
    shared = list(range(block.n_features - 3, block.n_features))
    eps = 1e-6
    for i in shared + list(rng.integers(0, block.n_features - 3, size=6)):
        step = np.zeros_like(weights)
        step[i] = eps
        numeric = (block.objective(weights + step, counts)[0] - block.objective(weights - step, counts)[0]) / (2 * eps)
        assert gradient[i] == pytest.approx(numeric, rel=1e-5, abs=1e-7), block.feature_names[i]
    assert np.abs(gradient[shared]).max() > 1e-3  # the shared weights are really in the objective


@pytest.mark.parametrize("seed", range(2))
def test_the_compiled_m_steps_derivatives_equal_finite_differences(tmp_path, seed):
    """The shared weights' gradient and Hessian (one pass over the entries) and a row's
    Hessian-vector product (its Newton directions) against differences of the value and gradient."""
    rng = np.random.default_rng(seed)
    block = block_of(problem_from_lines(tmp_path, IBM1, LINES))
    counts = rng.gamma(0.8, size=block.design.shape[0])
    first = block.n_features - len(block.pairs)
    weights = rng.normal(size=block.n_features)
    own_scores = block._conjoined @ weights[:first]
    gradient, hessian, scratch = np.empty(3), np.empty((3, 3)), (np.empty(3), np.empty((3, 3)))

    def shared(u):
        return pair_mstep.shared_terms(block._entry_ptr, own_scores + block._pair_columns @ u, block._pair_columns,
                                       counts, *scratch)

    u, eps = weights[first:], 1e-5
    shared_value = pair_mstep.shared_terms(block._entry_ptr, own_scores + block._pair_columns @ u,
                                           block._pair_columns, counts, gradient, hessian)
    assert shared_value == pytest.approx(block.objective(weights, counts)[0] + block.penalty(weights))
    for i in range(3):
        step = np.eye(3)[i] * eps
        assert gradient[i] == pytest.approx((shared(u + step) - shared(u - step)) / (2 * eps), rel=1e-5, abs=1e-7)
        shared(u + step)
        plus = scratch[0].copy()
        shared(u - step)
        np.testing.assert_allclose(-hessian[i], (plus - scratch[0]) / (2 * eps), rtol=1e-4, atol=1e-6)
    row = int(np.argmax(np.diff(block._entry_ptr)))  # the row with the most entries
    a, b = block._entry_ptr[row], block._entry_ptr[row + 1]
    columns = block._columns[block._column_ptr[row]:block._column_ptr[row + 1]]
    offsets, total = block._pair_columns @ u, counts[a:b].sum()

    def row_gradient(w):
        probabilities, out = np.empty(b - a), np.empty(len(w))
        pair_mstep._row_loss(a, b, block._indptr, block._local, offsets, counts, block.kappa, w, probabilities)
        pair_mstep._row_gradient(a, b, block._indptr, block._local, counts, total, block.kappa, w, probabilities, out)
        return out, probabilities

    w = weights[columns]
    g, probabilities = row_gradient(w)
    np.testing.assert_allclose(g, -block.objective(weights, counts)[1][columns], rtol=1e-9, atol=1e-9)
    v = rng.normal(size=len(w))
    product = np.empty(len(w))
    pair_mstep._row_hessian_times(a, b, block._indptr, block._local, total, block.kappa, probabilities, v,
                                  np.empty(b - a), product)
    numeric = (row_gradient(w + eps * v)[0] - row_gradient(w - eps * v)[0]) / (2 * eps)
    np.testing.assert_allclose(product, numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("seed", range(3))
def test_the_m_step_never_lowers_its_objective_and_normalises_each_row(tmp_path, seed):
    rng = np.random.default_rng(seed)
    block = block_of(problem_from_lines(tmp_path, IBM1, LINES))
    counts = rng.gamma(0.8, size=block.design.shape[0])
    start = rng.normal(size=block.n_features)
    for max_iterations in (1, 3, 100):
        found = block.maximize(counts, start, max_iterations)
        assert block.objective(found, counts)[0] >= block.objective(start, counts)[0] - 1e-12
    optimum = block.maximize(counts, start, 500)
    assert np.abs(block.objective(optimum, counts)[1]).max() < 1e-4
    row_sums = np.bincount(block.entry_rows, weights=np.exp(block.log_probabilities(optimum)))
    np.testing.assert_allclose(row_sums[row_sums > 0], 1.0)


@pytest.mark.parametrize("threads", [2, 3])
def test_the_m_step_on_several_threads_equals_one(tmp_path, monkeypatch, threads):
    """maximize_rows cuts the rows into one run per thread (Python threads over a nogil loop): the
    rows own disjoint weights, so the cut changes nothing."""
    rng = np.random.default_rng(threads)
    block = block_of(problem_from_lines(tmp_path, IBM1, LINES))
    counts = rng.gamma(0.8, size=block.design.shape[0])
    start = rng.normal(size=block.n_features)
    assert block._entry_ptr.size - 1 > threads  # rows enough for every thread to get some
    monkeypatch.setattr(pair_mstep.numba, "get_num_threads", lambda: 1)
    one = block.maximize(counts, start, 3)
    monkeypatch.setattr(pair_mstep.numba, "get_num_threads", lambda: threads)
    np.testing.assert_array_equal(block.maximize(counts, start, 3), one)


@pytest.mark.parametrize("spec", [IBM1, HMM], ids=["ibm1", "hmm"])
@pytest.mark.parametrize("seed", range(3))
def test_the_estep_over_featured_probabilities_equals_enumeration(tmp_path, spec, seed):
    data = ["the cat ||| le chat the", "Paris sat ||| paris assis", "a ||| a un"]
    problem = problem_from_lines(tmp_path, spec, data)
    params = random_params(problem, np.random.default_rng(seed))
    for example in range(problem.n_examples):
        check_against_enumeration(problem, params, example, alignment_structures(problem, example))


def objectives(problem, **settings) -> list[float]:
    return [r["objective"] for r in fit(problem, FitSettings(iterations=10, tolerance=0, eval_every=0, init="uniform",
                                                             **settings)).history]


def test_identity_features_without_penalty_give_the_plain_trace(tmp_path, monkeypatch):
    monkeypatch.setattr(pair_features, "ROUNDS", 2000)
    plain = objectives(problem_from_lines(tmp_path, PLAIN, LINES))
    featured = objectives(problem_from_lines(tmp_path, IDENTITY, LINES))
    np.testing.assert_allclose(featured, plain, rtol=1e-6)
    assert plain[-1] > plain[0]


def cli_fit(tmp_path, spec: str, *extra: str):
    from emc.cli import main

    data = tmp_path / "train.txt"
    data.write_text("\n".join(LINES) + "\n")
    run = tmp_path / "run"
    assert main(["fit", spec, str(data), "--iterations", "6", "--tolerance", "0", "--out", str(run), *extra]) == 0
    return run, data


@pytest.mark.parametrize("spec,extra", [("ibm1_features.em", ["--init", "uniform"]),
                                        ("hmm_align_features.em", ["--init", "ibm1"]),
                                        ("hmm_align_features.em", ["--algorithm", "hard", "--forward-only"])],
                         ids=["ibm1", "hmm", "hmm-hard"])
def test_em_never_lowers_the_regularised_objective_in_the_log(tmp_path, spec, extra):
    run, _ = cli_fit(tmp_path, str(ROOT / "specs" / spec), "--set", "kappa=0.5", *extra)
    for folder in [run] + ([run / "reverse"] if "--forward-only" not in extra else []):
        values = [json.loads(line)["objective"] for line in (folder / "log.jsonl").read_text().splitlines()]
        assert len(values) == 6
        assert all(b >= a - 1e-9 * abs(a) for a, b in zip(values, values[1:])), values
        assert values[-1] > values[0]


def test_fit_decode_and_info_on_the_featured_aligner(tmp_path, capsys):
    from emc.cli import main

    run, data = cli_fit(tmp_path, str(ROOT / "specs" / "hmm_align_features.em"), "--init", "ibm1")
    capsys.readouterr()
    new = tmp_path / "new.txt"
    new.write_text("the cat ||| le chat\nLondon is big ||| London est grand\n")  # London: never seen in training
    assert main(["decode", str(run), str(new), "--symmetrize", "grow-diag-final-and"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and "0-0" in lines[0].split()
    assert main(["info", str(run)]) == 0
    out = capsys.readouterr().out
    shared = next(line for line in out.splitlines() if line.startswith("  shared: "))
    weights = dict(cell.rsplit(" ", 1) for cell in shared[len("  shared: "):].split(", "))
    assert set(weights) == {"pair.same", "pair.same_lower", "pair.prefix(4)"}
    assert float(weights["pair.same"]) > 0  # identical words (Paris, station) do link
    assert "heaviest conjoined: " in out


def test_agreement_training_fits_featured_blocks_in_both_directions(tmp_path):
    from emc.runtime.model_dir import load_run

    run, _ = cli_fit(tmp_path, str(ROOT / "specs" / "ibm1_features.em"), "--init", "uniform", "--agree")
    for folder in (run, run / "reverse"):
        saved = load_run(folder)
        t = saved.model.checked.tables()[0]
        assert saved.features[t.table].ndim == 1 and saved.features[t.table][-3:].any()


def test_stepwise_em_shows_the_weights_probabilities(tmp_path):
    problem = problem_from_lines(tmp_path, IBM1, LINES)
    result = fit(problem, FitSettings(algorithm="stepwise", passes=2, batch_size=2, tolerance=0, eval_every=0))
    t = problem.layout.table("trans")
    np.testing.assert_allclose(t.values(result.params.weights(problem.layout)),
                               np.exp(t.featured.log_probabilities(result.params.features["trans"])), rtol=1e-9)
