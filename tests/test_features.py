"""Featured blocks (log-linear multinomials, emc/runtime/blocks/features.py): their spec surface, the
gradient M-step against finite differences and against the plain M-step, EM's monotonicity, and the
E-step over weight-given probabilities against brute force."""
from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import emc.runtime.blocks.features as features
from emc.cli import main
from emc.io.views import apply_views
from emc.priors import Prior
from emc.runtime.fit import fit
from emc.runtime.params import ParamState
from emc.runtime.settings import FitSettings
from emc.spec.check import check
from emc.spec.errors import EmcError, SpecError
from emc.spec.model import Feature
from emc.spec.parse import parse_text
from helpers import check_against_enumeration, problem_from_lines, random_params
from reference import chain_structures

CHAIN = "model f\nobserved x : tokens\nlatent z : chain(x, states=3)\nmultinomial trans : P(z | z.prev)\n"
PLAIN = CHAIN + "multinomial emit : P(x | z)\n"
IDENTITY = CHAIN + "multinomial emit : P(x | z) features(x)\n"
FEATURED = CHAIN + "multinomial emit : P(x | z) features(x, x.suffix(2), x.capitalized, x.has_digit) l2(0.5)\n"
LINES = ["The dog walked home", "A cat talked", "the dogs jumped 12 times", "cats walked",
         "A well-known dog barked", "the cat jumped"]

ERRORS = [
    # (name, block options, column, message)
    ("unknown view", "features(x, x.sufix(2))", 45, "unknown view 'sufix'"),
    ("bad length", "features(x.prefix(0))", 42, "the length of 'prefix' must be a whole number"),
    ("negative kappa", "features(x) l2(-1)", 46, "the penalty must be a finite number >= 0"),
    ("infinite kappa", "features(x) l2(1e999)", 46, "inf is not a finite number"),
    ("not a view of the outcome", "features(z)", 40, "'z' is not a view of the block's outcome 'x'"),
    ("l2 without features", "l2(1)", 31, "this block has none"),
    ("featured and smoothed", "features(x) smooth add(1)", 43, "a featured block cannot be 'smooth'"),
    ("feature twice", "features(x, x)", 43, "the feature 'x' is given twice"),
]


@pytest.mark.parametrize("name,options,column,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_features_are_reported_with_their_position(name, options, column, message):
    text = CHAIN + f"multinomial emit  : P(x | z)  {options}\n"
    with pytest.raises(SpecError) as info:
        check(parse_text(text, "bad.em"))
    first = info.value.first
    assert (first.pos.line, first.pos.column) == (5, column), str(info.value)
    assert message in first.message, str(info.value)
    assert str(info.value).startswith(f"bad.em:5:{column}: error: ")


def test_a_featured_block_needs_an_observed_outcome():
    with pytest.raises(SpecError, match="one observed outcome"):
        check(parse_text(CHAIN.replace("P(z | z.prev)", "P(z | z.prev) features(z)") + "multinomial e : P(x | z)\n"))


def test_features_are_resolved_relative_to_the_outcome():
    checked = check(parse_text(CHAIN + "multinomial e : P(x.lower | z) features(x.lower, x.lower.suffix(2)) l2(2)\n"))
    block = checked.factors[-1]
    assert block.features == (Feature("x.lower", ()), Feature("x.lower.suffix(2)", (("suffix", 2),)))
    assert block.l2 == 2.0
    with pytest.raises(SpecError, match="not a view of the block's outcome"):
        check(parse_text(CHAIN + "multinomial e : P(x.lower | z) features(x.suffix(2))\n"))


def random_block(rng: np.random.Generator, kappa: float) -> features.FeaturedBlock:
    words = ["<unk>", "walk", "walked", "talked", "Talk", "12", "a-b", "cat", "cats"]
    feats = (Feature("x", ()), Feature("x.suffix(2)", (("suffix", 2),)), Feature("x.capitalized", (("capitalized", None),)))
    active = np.arange(len(words)) > 0
    return features.build("emit", 3, kappa, feats, words, active)


@pytest.mark.parametrize("seed", range(5))
def test_the_gradient_equals_finite_differences(seed):
    rng = np.random.default_rng(seed)
    block = random_block(rng, kappa=float(rng.uniform(0, 2)))
    counts = rng.gamma(0.8, size=(block.phi.shape[0], block.rows)) * block.active[:, None]
    weights = rng.normal(size=(block.n_features, block.rows))
    _, gradient = block.objective(weights, counts)
    eps = 1e-6
    for _ in range(12):
        i, r = rng.integers(block.n_features), rng.integers(block.rows)
        step = np.zeros_like(weights)
        step[i, r] = eps
        numeric = (block.objective(weights + step, counts)[0] - block.objective(weights - step, counts)[0]) / (2 * eps)
        assert gradient[i, r] == pytest.approx(numeric, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("seed", range(4))
def test_the_objective_over_fixed_rows_and_spilled_entries_equals_the_dense_formula(seed, rows):
    """loglinear.feature_rows keeps most outcomes' features in rows of one width and spills the
    rest (outcomes with many entries, as word vectors for some words only give): the objective and
    its gradient over that form equal the formula over the dense matrix (one row, as a segmenter's
    block has, takes the passes' scalar paths)."""
    import scipy.sparse

    from emc.runtime.blocks.loglinear import feature_columns, feature_rows, objective

    rng = np.random.default_rng(seed)
    outcomes, n_features = 30, 12
    dense = rng.normal(size=(outcomes, n_features)) * (rng.random((outcomes, n_features)) < 0.2)
    dense[rng.choice(outcomes, 3, replace=False)] = rng.normal(size=(3, n_features))  # a few full rows spill
    matrix = scipy.sparse.csr_matrix(dense)
    fixed_indices, _, spill_ptr, _, _ = packed = feature_rows(matrix.indptr, matrix.indices, matrix.data)
    assert spill_ptr[-1] > 0 and fixed_indices.shape[1] < n_features  # both parts are exercised
    columns = feature_columns(matrix.indptr, matrix.indices, matrix.data, n_features)
    counts, weights, kappa = rng.gamma(0.8, size=(outcomes, rows)), rng.normal(size=(n_features, rows)), 0.7
    gradient = np.empty_like(weights)
    value = objective(packed, columns, counts, kappa, weights, gradient)
    scores = dense @ weights
    log_p = scores - np.log(np.exp(scores).sum(axis=0, keepdims=True))
    expected = (counts * log_p).sum() - 0.5 * kappa * (weights ** 2).sum()
    expected_gradient = dense.T @ (counts - np.exp(log_p) * counts.sum(axis=0, keepdims=True)) - kappa * weights
    assert value == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-10, atol=1e-12)


def test_the_vectorised_exp_matches_libm():
    """The M-step's own exp (the tiles of loglinear.probabilities_into, one row or several, each
    shifted by its log Z) is within a few units in the last place of numpy's over the range a
    softmax meets, and 0 below the smallest normal double."""
    from emc.runtime.blocks.loglinear import SMALLEST, probabilities_into

    x = np.concatenate([np.linspace(-708.0, 0.0, 200001), -np.logspace(-300, 2.8, 20001), [0.0, -0.0, -1e-320]])
    got = np.empty((x.size, 1))
    probabilities_into(x[:, None], np.zeros(1), got, 0, False)
    np.testing.assert_allclose(got[:, 0], np.exp(x), rtol=5e-16, atol=0)
    shifts = np.array([3.0, -2.0, 0.5])
    scores = x[:x.size - x.size % 3].reshape(-1, 3) + shifts
    got = np.empty(scores.shape)
    probabilities_into(scores, shifts, got, 0, False)
    np.testing.assert_allclose(got, np.exp(scores - shifts), rtol=5e-16, atol=0)
    edges = np.array([[3.0], [3.0 + SMALLEST - 1.0], [-1e300]])
    got = np.empty((3, 1))
    probabilities_into(edges, np.array([3.0]), got, 0, False)
    assert got[:, 0].tolist() == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("seed", range(5))
def test_the_m_step_never_lowers_its_objective(seed):
    rng = np.random.default_rng(seed)
    block = random_block(rng, kappa=float(rng.uniform(0, 2)))
    counts = rng.gamma(0.8, size=(block.phi.shape[0], block.rows)) * block.active[:, None]
    start = rng.normal(size=(block.n_features, block.rows))
    for max_iterations in (1, 3, 100):
        found = block.maximize(counts, start, max_iterations)
        assert block.objective(found, counts)[0] >= block.objective(start, counts)[0] - 1e-12
    optimum = block.maximize(counts, start, 500)  # the default budget is a partial (GEM) step
    assert np.abs(block.objective(optimum, counts)[1]).max() < 1e-4  # a stationary point


@pytest.mark.parametrize("blocks", [2, 3])
def test_the_m_step_in_blocks_of_rows_equals_one_block(monkeypatch, blocks):
    """With several threads the rows are split into blocks (the last one padded) that run in
    parallel: each row is its own problem, so the weights, and the probabilities the M-step
    writes, are those of one block."""
    rng = np.random.default_rng(blocks)
    words = ["<unk>", "walk", "walked", "talked", "Talk", "12", "a-b", "cat", "cats", "Cat", "dog"]
    feats = (Feature("x", ()), Feature("x.suffix(2)", (("suffix", 2),)), Feature("x.capitalized", (("capitalized", None),)))
    block = features.build("emit", 7, 0.5, feats, words, np.arange(len(words)) > 0)
    counts = rng.gamma(0.8, size=(len(words), 7)) * block.active[:, None]
    start = rng.normal(size=block.weight_shape)
    one = block.maximize(counts, start, 5)
    p_one = block.probabilities(one)
    monkeypatch.setattr(features.numba, "get_num_threads", lambda: blocks)
    table = np.empty(counts.shape)
    split = block.maximize(counts, start, 5, probabilities=table)
    np.testing.assert_allclose(split, one, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(table, p_one, rtol=1e-9, atol=1e-15)
    assert block._scratch[0].shape[0] == blocks  # the split path ran


def test_probabilities_are_normalised_over_seen_outcomes():
    block = random_block(np.random.default_rng(0), kappa=1.0)
    p = np.exp(block.log_probabilities(np.random.default_rng(1).normal(size=(block.n_features, block.rows))))
    np.testing.assert_allclose(p.sum(axis=0), 1.0)
    assert (p[0] == 0).all()  # <unk> is never seen in training


def objectives(problem, **settings) -> list[float]:
    result = fit(problem, FitSettings(iterations=10, tolerance=0, eval_every=0, **settings))
    return [r["objective"] for r in result.history]


def test_identity_features_without_penalty_give_the_plain_trace(tmp_path, monkeypatch):
    """The parameterisation is then exactly as expressive as the plain table, so EM takes the
    same path (the optimiser run to convergence)."""
    monkeypatch.setattr(features, "MAX_ITERATIONS", 2000)
    plain = objectives(problem_from_lines(tmp_path, PLAIN, LINES))
    featured = objectives(problem_from_lines(tmp_path, IDENTITY, LINES))
    np.testing.assert_allclose(featured, plain, rtol=1e-6)


@pytest.mark.parametrize("algorithm", ["batch", "hard"])
def test_em_never_lowers_the_regularised_objective(tmp_path, algorithm):
    problem = problem_from_lines(tmp_path, FEATURED, LINES)
    values = objectives(problem, algorithm=algorithm)
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(values, values[1:])), values
    assert values[-1] > values[0]


def test_the_objective_is_the_log_likelihood_minus_the_penalty(tmp_path):
    problem = problem_from_lines(tmp_path, FEATURED, LINES)
    result = fit(problem, FitSettings(iterations=3, tolerance=0, eval_every=0))
    from emc.runtime.executor import LocalExecutor
    from emc.structures.semiring import SUM

    all_examples = np.arange(problem.n_examples)
    log_z = LocalExecutor(problem).estep(result.params, all_examples, SUM, np.ones(problem.n_examples)).log_z
    block = problem.layout.table("emit").featured
    penalty = 0.25 * float(np.sum(result.params.features["emit"] ** 2))
    assert penalty > 0
    assert result.objective == pytest.approx(float(log_z.sum()) - penalty, rel=1e-12)


def test_the_estep_over_featured_probabilities_equals_enumeration(tmp_path):
    problem = problem_from_lines(tmp_path, FEATURED, ["A dog walked", "the cat-s 12", "walked"])
    params = random_params(problem, np.random.default_rng(7))
    for example in range(problem.n_examples):
        check_against_enumeration(problem, params, example, chain_structures(problem, example))


def test_variational_bayes_refuses_featured_blocks(tmp_path):
    problem = problem_from_lines(tmp_path, FEATURED, LINES)
    with pytest.raises(EmcError, match="--algorithm vb cannot fit featured blocks \\(emit\\)"):
        fit(problem, FitSettings(algorithm="vb", iterations=1, passes=1))


def test_smoothing_a_featured_block_from_the_command_line_is_refused(tmp_path):
    problem = problem_from_lines(tmp_path, FEATURED, LINES)
    with pytest.raises(EmcError, match="regularised by its l2"):
        fit(problem, FitSettings(iterations=1, regularizers={"emit": Prior(0.1)}))


@pytest.mark.parametrize("algorithm", ["annealed", "skewed"])
def test_annealed_variants_fit_featured_blocks(tmp_path, algorithm):
    problem = problem_from_lines(tmp_path, FEATURED, LINES)
    result = fit(problem, FitSettings(algorithm=algorithm, iterations=3, tolerance=0, eval_every=0,
                                      beta_min=0.5, beta_factor=2.0))
    weights = result.params.weights(problem.layout)
    emit = problem.layout.table("emit")
    np.testing.assert_allclose(emit.matrix(weights), np.exp(emit.featured.log_probabilities(result.params.features["emit"])))


def fit_saved_run(tmp_path):
    spec = tmp_path / "f.em"
    spec.write_text(FEATURED)
    data = tmp_path / "train.txt"
    data.write_text("\n".join(LINES) + "\n")
    run = tmp_path / "run"
    assert main(["fit", str(spec), str(data), "--iterations", "4", "--out", str(run)]) == 0
    return run


@pytest.mark.parametrize("spec", ["FEATURED", "PLAIN"])
def test_a_fit_from_a_saved_model_starts_where_it_ended_and_never_falls(tmp_path, spec):
    """--init RUN: the featured table's weights come from the saved ones (or are fitted to the saved
    plain table), so the first objective is the saved model's and batch EM goes up from there."""
    run = fit_saved_run(tmp_path)
    if spec == "PLAIN":  # a featured fit started from a plain run of the same data
        (tmp_path / "plain.em").write_text(PLAIN)
        assert main(["fit", str(tmp_path / "plain.em"), str(tmp_path / "train.txt"), "--iterations", "4",
                     "--out", str(tmp_path / "plain"), "--quiet"]) == 0
        run = tmp_path / "plain"
    again = tmp_path / "again"
    assert main(["fit", str(tmp_path / "f.em"), str(tmp_path / "train.txt"), "--iterations", "4", "--init", str(run),
                 "--out", str(again), "--quiet"]) == 0
    history = [json.loads(line)["objective"] for line in (again / "log.jsonl").read_text().splitlines()]
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(history, history[1:]))
    if spec == "FEATURED":
        saved = json.loads((run / "run.json").read_text())["objective"]
        assert history[0] == pytest.approx(saved, rel=1e-9)


def test_a_saved_featured_model_decodes_unseen_words_from_their_features(tmp_path, capsys):
    from emc.runtime.decode import bind_saved
    from emc.runtime.model_dir import load_run

    run = fit_saved_run(tmp_path)
    saved = load_run(run)
    assert saved.features["emit"].shape[1] == 3
    new = tmp_path / "new.txt"
    new.write_text("The dog jumped\nthe Bird walks 77\n")  # Bird, walks, 77: never seen in training
    capsys.readouterr()
    assert main(["decode", str(run), str(new)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2

    problem, params = bind_saved(saved, str(new), {})
    emit = problem.layout.table("emit")
    space = emit.outcome_spaces[0]
    vocab = problem.vocabs[space]
    trained = saved.info["vocab_sizes"][space]
    table = emit.matrix(params.weights(problem.layout))
    block = emit.featured
    weights = saved.features["emit"]
    log_z = np.log(np.exp(block.phi[:trained, :len(weights)][block.active[:trained]] @ weights).sum(axis=0))
    columns = {name: i for i, name in enumerate(block.feature_names)}
    for word in ("Bird", "walks", "77"):
        i = vocab.index[word]
        assert i >= trained  # kept its own id, not <unk>
        keys = [f"{f.text}={apply_views(word, f.views)}" for f in block.features]
        seen = [columns[k] for k in keys if columns.get(k, len(weights)) < len(weights)]
        assert seen and len(seen) < len(keys)  # the word's identity was never seen; some of its spelling was
        np.testing.assert_allclose(table[i], np.exp(weights[seen].sum(axis=0) - log_z), rtol=1e-10)
    # different spellings, different scores: not one <unk> column
    assert not np.allclose(table[vocab.index["walks"]], table[vocab.index["77"]])
    # the training words keep their saved probabilities
    with np.load(run / "params.npz") as npz:
        np.testing.assert_allclose(table[1:trained], npz["table_emit"][1:], rtol=1e-12)


def test_info_on_a_run_lists_the_heaviest_features_per_row(tmp_path, capsys):
    run = fit_saved_run(tmp_path)
    capsys.readouterr()
    assert main(["info", str(run)]) == 0
    out = capsys.readouterr().out
    assert "block emit:" in out and "l2(0.5)" in out
    rows = [line for line in out.splitlines() if line.startswith("  row ")]
    assert len(rows) == 3
    assert all(line.count(" +") + line.count(" -") >= 8 for line in rows)
    assert "x.suffix(2)=" in out


@pytest.mark.parametrize("msteps_per_pass", [10, 1])
def test_stepwise_em_runs_the_gradient_m_step_on_its_statistics(tmp_path, monkeypatch, msteps_per_pass):
    """Against the textbook update over whole tables: mu <- (1 - eta) mu + eta s per mini-batch,
    then the plain rows normalised and the featured block's weights by the gradient M-step on its
    mu scaled to a pass (mini-batches per pass). On 6 sentences in mini-batches of 2 every slice of
    a pass is one mini-batch, so the variant's M-step per slice is one per mini-batch here; with one
    M-step per pass it folds the pass's three updates into mu at once, which must be exact."""
    import emc.runtime.variants.online_state as online_state
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.initialize import initial_params
    from emc.runtime.variants.online_state import start_mass, statistics_state
    from emc.structures.semiring import SUM

    monkeypatch.setattr(online_state, "FEATURED_MSTEPS_PER_PASS", msteps_per_pass)
    problem = problem_from_lines(tmp_path, FEATURED, LINES)
    settings = FitSettings(algorithm="stepwise", passes=2, batch_size=2, tolerance=0, eval_every=0, seed=3)
    batches_per_mstep = 1 if msteps_per_pass == 10 else 3
    result = fit(problem, settings)

    layout = problem.layout
    trans, emit = layout.table("trans"), layout.table("emit")
    rng = np.random.default_rng(settings.seed)
    executor = LocalExecutor(problem)
    start = initial_params(problem, settings, executor, rng)
    weights = start.features["emit"]
    mu = statistics_state(start, layout, np.zeros(len(layout.tables)), start_mass(problem, settings)).theta.copy()
    k = 0

    # between M-steps the E-step reads the featured block as statistics that started from its
    # probabilities (one count per row) and took the mini-batches' updates since
    shown = np.exp(emit.featured.log_probabilities(weights))

    def current() -> np.ndarray:
        theta = problem.fixed_theta.copy()
        m = trans.matrix(mu)
        trans.matrix(theta)[:] = m / m.sum(axis=0)
        emit.matrix(theta)[:] = shown / shown.sum(axis=0)
        return theta

    for _ in range(settings.passes):
        order = rng.permutation(problem.n_examples).astype(np.int64)
        for start_at in range(0, len(order), settings.batch_size):
            batch = order[start_at:start_at + settings.batch_size]
            counts = executor.estep(ParamState.plain(current(), layout), batch, SUM, np.ones(len(batch))).counts
            eta = (k + 2.0) ** -settings.alpha
            mu = (1 - eta) * mu + eta * counts
            shown = (1 - eta) * shown + eta * emit.matrix(counts)
            k += 1
            if k % batches_per_mstep == 0:  # mu averages a mini-batch's counts: the M-step sees a pass's
                weights = emit.featured.maximize(emit.matrix(mu) * (problem.n_examples / settings.batch_size), weights)
                shown = np.exp(emit.featured.log_probabilities(weights))
    np.testing.assert_allclose(result.params.weights(layout), current(), rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(result.params.features["emit"], weights, rtol=1e-5, atol=1e-8)


def test_restarts_keep_the_best_runs_weights(tmp_path):
    from emc.runtime.fit import fit_with_restarts

    problem = problem_from_lines(tmp_path, FEATURED, LINES)
    result = fit_with_restarts(problem, FitSettings(iterations=3, tolerance=0, eval_every=0, restarts=2))
    emit = problem.layout.table("emit")
    np.testing.assert_allclose(emit.matrix(result.params.weights(problem.layout)),
                               np.exp(emit.featured.log_probabilities(result.params.features["emit"])), rtol=1e-12)
    best = max((r for r in result.history if r["restart"] in (0, 1)), key=lambda r: r["objective"])
    assert result.objective >= best["objective"] - 1e-9 * abs(best["objective"])


def test_resuming_a_featured_fit_ends_like_an_uninterrupted_one(tmp_path):
    from emc.runtime.checkpoint import load_checkpoint, save_checkpoint

    problem = problem_from_lines(tmp_path, FEATURED, LINES)
    settings = FitSettings(iterations=4, tolerance=0, eval_every=0)
    whole = fit(problem, settings)
    saved = {}

    def keep(state):
        if state.step == 2:
            save_checkpoint(tmp_path / "run", state, {})
            saved["done"] = True

    fit(problem, FitSettings(iterations=2, tolerance=0, eval_every=0), after_step=keep)
    _, state = load_checkpoint(tmp_path / "run")
    assert "emit" in state.params.features
    resumed = fit(problem, settings, state=state)
    np.testing.assert_array_equal(resumed.params.theta, whole.params.theta)
    np.testing.assert_array_equal(resumed.params.features["emit"], whole.params.features["emit"])


def test_the_python_api_fits_saves_reloads_and_decodes_a_featured_model(tmp_path):
    import emc

    fitted = emc.load(FEATURED).fit(LINES, iterations=3, tolerance=0)
    fitted.save(tmp_path / "run")
    again = emc.load_run(tmp_path / "run")
    np.testing.assert_array_equal(again.saved.features["emit"], fitted.params.features["emit"])
    new = ["the Bird walks 77", "A dog jumped"]  # Bird, walks, 77: never seen in training
    assert again.decode(new) == fitted.decode(new)
    # an unseen word is scored from its features: two unseen words of different spelling differ
    posteriors = again.decode(["Bird", "77"], posteriors=True)
    assert len(posteriors) == 2 and posteriors[0] != posteriors[1]


def write_vectors(path, lines: str) -> str:
    path.write_text(lines, encoding="utf-8")
    return str(path)


def test_word_vectors_from_a_file_are_real_valued_features(tmp_path):
    path = write_vectors(tmp_path / "v.txt", "3 2\nwalked 0.5 -1.0\ncat 2.0 0.0\n12 0.25 0.75\n")
    dense = Feature(f'x.lower.vectors("{path}")', (("lower", None), ("vectors", path)))
    words = ["<unk>", "Walked", "cat", "dog", "12"]
    block = features.build("emit", 2, 0.5, (Feature("x", ()), dense), words)
    phi = block.phi.toarray()
    columns = {name: i for i, name in enumerate(block.feature_names)}
    first, second = columns[f"{dense.text}[0]"], columns[f"{dense.text}[1]"]
    assert phi[1, first] == 0.5 and phi[1, second] == -1.0  # Walked -> walked's vector
    assert phi[2, first] == 2.0 and second not in np.flatnonzero(phi[2])  # a 0 value is no entry
    assert np.flatnonzero(phi[3]).tolist() == [columns["x=dog"]]  # no vector: its identity alone
    # the gradient with real values still equals finite differences
    rng = np.random.default_rng(0)
    counts = rng.gamma(0.8, size=(len(words), 2)) * block.active[:, None]
    weights = rng.normal(size=(block.n_features, 2))
    _, gradient = block.objective(weights, counts)
    for i in (first, second):
        step = np.zeros_like(weights)
        step[i, 1] = 1e-6
        numeric = (block.objective(weights + step, counts)[0] - block.objective(weights - step, counts)[0]) / 2e-6
        assert gradient[i, 1] == pytest.approx(numeric, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("text, where, message", [
    ("a 1 2\nb 1 x\n", ":2:", "'x' is not a number"),
    ("a 1 2\nb 1\n", ":2:", "has 1 values; the lines before have 2"),
    ("a 1 2\na 3 4\n", ":2:", "has a vector already (line 1)"),
    ("a\n", ":1:", "has no values"),
    ("a 1 nan\n", ":1:", "not finite"),
    ("\n\n", "", "has no vectors"),
])
def test_a_bad_vectors_file_is_reported_by_line(tmp_path, text, where, message):
    from emc.io.vectors import read_vectors

    path = write_vectors(tmp_path / f"bad{abs(hash(text))}.txt", text)
    with pytest.raises(EmcError, match=re.escape(message)) as error:
        read_vectors(path)
    assert f"{path}{where}" in str(error.value)


def test_a_spec_takes_word_vectors_as_a_feature_and_fits(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_vectors(tmp_path / "vectors.txt", "the 1.0 0.0\ndog -0.5 2.0\ncat -0.4 1.8\nwalked 0.3 -1.0\n")
    text = CHAIN + 'multinomial emit : P(x | z) features(x, x.lower.vectors("vectors.txt")) l2(0.5)\n'
    block = check(parse_text(text)).factors[-1]
    vectors = os.path.join(os.getcwd(), "vectors.txt")  # the checked model holds the file's absolute path
    assert block.features[1] == Feature('x.lower.vectors("vectors.txt")', (("lower", None), ("vectors", vectors)))
    problem = problem_from_lines(tmp_path, text, LINES)
    emit = problem.layout.table("emit")
    assert 'x.lower.vectors("vectors.txt")[1]' in emit.featured.feature_names
    history = objectives(problem)
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(history, history[1:]))  # batch EM never falls


def test_a_saved_model_with_word_vectors_decodes_from_another_directory(tmp_path, monkeypatch, capsys):
    """The vectors file is named relative to where the fit ran: decoding and `emc info` elsewhere
    still find it, and an unseen word is scored with its vector."""
    fitted_in, elsewhere = tmp_path / "fit", tmp_path / "elsewhere"
    fitted_in.mkdir(), elsewhere.mkdir()
    write_vectors(fitted_in / "vectors.txt", "the 1.0 0.0\ndog -0.5 2.0\ncat -0.4 1.8\nwalked 0.3 -1.0\n")
    (fitted_in / "model.em").write_text(CHAIN + 'multinomial emit : P(x | z) features(x, x.vectors("vectors.txt")) l2(0.5)\n')
    (fitted_in / "train.txt").write_text("".join(line + "\n" for line in LINES))
    monkeypatch.chdir(fitted_in)
    assert main(["fit", "model.em", "train.txt", "--iterations", "3", "--out", "run", "--quiet"]) == 0
    monkeypatch.chdir(elsewhere)
    (elsewhere / "new.txt").write_text("the dog\n")
    capsys.readouterr()
    assert main(["decode", str(fitted_in / "run"), "new.txt"]) == 0
    assert capsys.readouterr().out.startswith("the/")
    assert main(["info", str(fitted_in / "run")]) == 0
    assert 'x.vectors("vectors.txt")[1]' in capsys.readouterr().out
    (fitted_in / "vectors.txt").unlink()
    assert main(["decode", str(fitted_in / "run"), "new.txt"]) == 1
    assert f"no such file of word vectors: 'vectors.txt' ({fitted_in / 'vectors.txt'})" in capsys.readouterr().err


@pytest.mark.parametrize("options, column, message", [
    ('features(x, x.vectors("missing.txt"))', 43, "no such file of word vectors: 'missing.txt'"),
    ('features(x, x.vectors(3))', 43, "the view 'vectors' takes a file name"),
    ('features(x, x.vectors("vectors.txt").lower)', 43, "nothing can follow '.vectors(...)'"),
    ('features(x, x.suffix("vectors.txt"))', 43, "the view 'suffix' takes a number, not a file name"),
])
def test_bad_word_vector_features_are_reported_with_their_position(tmp_path, monkeypatch, options, column, message):
    monkeypatch.chdir(tmp_path)
    write_vectors(tmp_path / "vectors.txt", "the 1.0 0.0\n")
    with pytest.raises(SpecError) as error:
        check(parse_text(CHAIN + f"multinomial emit : P(x | z) {options}\n"))
    assert error.value.first.pos.line == 5 and error.value.first.pos.column == column
    assert message in error.value.first.message


def test_word_vectors_outside_features_are_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_vectors(tmp_path / "vectors.txt", "the 1.0 0.0\n")
    with pytest.raises(SpecError, match="which only a feature can be"):
        check(parse_text(CHAIN + 'multinomial emit : P(x.vectors("vectors.txt") | z)\n'))


@pytest.mark.parametrize("block_size", [1, 2])
def test_incremental_em_runs_the_gradient_m_step_on_its_statistics(tmp_path, block_size):
    """Against the textbook update: each block's counts replace its old ones in mu; the featured
    block's weights by the gradient M-step on its mu after each block (on 6 sentences every slice
    of a pass is one block) and at the end of each pass, when after the first the rows the data
    reached drop their starting pseudo-counts; between M-steps the E-step reads the featured
    block's probabilities from the last one."""
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.initialize import initial_params
    from emc.runtime.variants.online_state import start_mass
    from emc.structures.semiring import SUM
    from reference import pseudo_counts

    problem = problem_from_lines(tmp_path, FEATURED, LINES)
    settings = FitSettings(algorithm="incremental", passes=3, block_size=block_size, tolerance=0, eval_every=0, seed=2)
    result = fit(problem, settings)

    layout = problem.layout
    trans, emit = layout.table("trans"), layout.table("emit")
    rng = np.random.default_rng(settings.seed)
    executor = LocalExecutor(problem, threads=1)
    start = initial_params(problem, settings, executor, rng)
    weights = start.features["emit"]
    members = rng.permutation(problem.n_examples) if block_size > 1 else np.arange(problem.n_examples)
    blocks = [members[g:g + block_size] for g in range(0, problem.n_examples, block_size)]
    mu = pseudo_counts(start, layout, start_mass(problem, settings))
    pseudo = mu.copy()
    stats: dict[int, np.ndarray] = {}

    def current() -> np.ndarray:
        theta = problem.fixed_theta.copy()
        trans.matrix(theta)[:] = trans.matrix(mu) / trans.matrix(mu).sum(axis=0)
        emit.matrix(theta)[:] = np.exp(emit.featured.log_probabilities(weights))
        return theta

    for p in range(settings.passes):
        order = rng.permutation(len(blocks))
        for i, g in enumerate(order):
            s = executor.estep(ParamState.plain(current(), layout), blocks[g], SUM, np.ones(len(blocks[g]))).counts
            mu += s - stats.get(g, np.zeros_like(s))
            stats[g] = s
            if i + 1 < len(order):
                weights = emit.featured.maximize(emit.matrix(mu).copy(), weights)
        if p == 0:
            total = sum(stats.values())
            for t in (trans, emit):
                reached = t.matrix(total).sum(axis=0) > 0
                t.matrix(mu)[:, reached] -= t.matrix(pseudo)[:, reached]
        weights = emit.featured.maximize(np.maximum(emit.matrix(mu), 0.0), weights)
    np.testing.assert_allclose(result.params.features["emit"], weights, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(result.params.weights(layout), current(), rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("algorithm", ["batch", "stepwise", "incremental"])
def test_mstep_iterations_caps_every_featured_m_step(tmp_path, monkeypatch, algorithm):
    """--mstep-iterations N reaches each featured M-step of every variant (its own budget
    otherwise), and the fit's objective follows from it."""
    problem = problem_from_lines(tmp_path, FEATURED, LINES)
    budgets = []
    original = features.FeaturedBlock.maximize

    def recording(self, counts, start, max_iterations=None, probabilities=None):
        budgets.append(max_iterations)
        return original(self, counts, start, max_iterations, probabilities)

    monkeypatch.setattr(features.FeaturedBlock, "maximize", recording)
    settings = dict(algorithm=algorithm, iterations=3, passes=2, tolerance=0, eval_every=0)
    one = fit(problem, FitSettings(**settings, mstep_iterations=1)).history[-1]["objective"]
    assert budgets and set(budgets) == {1}
    budgets.clear()
    fit(problem, FitSettings(**settings))
    assert budgets and set(budgets) == {None}
    budgets.clear()
    many = fit(problem, FitSettings(**settings, mstep_iterations=20)).history[-1]["objective"]
    assert set(budgets) == {20} and many != one


def test_mstep_iterations_below_one_is_refused(tmp_path, capsys):
    run = tmp_path / "run"
    spec, data = tmp_path / "f.em", tmp_path / "train.txt"
    spec.write_text(FEATURED)
    data.write_text("\n".join(LINES) + "\n")
    assert main(["fit", str(spec), str(data), "--mstep-iterations", "0", "--out", str(run)]) != 0
    assert "--mstep-iterations 0: a featured block's M-step needs at least one iteration" in capsys.readouterr().err


def test_mstep_iterations_help_names_the_blocks_defaults():
    """The flag's help is written where numba is not imported, so it states the blocks' budgets
    in words: they must be the ones the blocks use."""
    from emc.runtime.blocks import pair_features
    from emc.runtime.settings import fit_options

    text = next(f for f in fit_options() if f.name == "mstep_iterations").metadata["help"]
    assert f"{features.MAX_ITERATIONS} L-BFGS iterations per row" in text
    assert f"a pair table's {pair_features.ROUNDS} turns" in text
