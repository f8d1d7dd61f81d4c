"""Every EM variant: a test that could fail for each, on the HMM (the loop over every spec and
algorithm is in test_every_variant_on_every_spec.py)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings as hsettings
from hypothesis import strategies as st

from conftest import ROOT
from emc.runtime.executor import LocalExecutor
from emc.runtime.fit import fit, fit_with_restarts
from emc.runtime.initialize import init_noise, initial_params
from emc.runtime.params import ParamState, random_init
from emc.runtime.settings import FitSettings
from emc.runtime.variants import VARIANTS
from emc.runtime.variants.online_state import start_mass
from emc.priors import Dirichlet, Prior, SmoothedL0
from emc.priors.smoothed_l0 import FLOOR, maximize_row, objective
from emc.structures.semiring import SUM
from helpers import problem_from_lines
from reference import dense_incremental, normalise, pseudo_counts

HMM = (ROOT / "specs" / "hmm.em").read_text()
SENTENCES = ["a b c d", "b c a", "d d a b c", "c a", "a b b c d a", "b", "d c b a", "a c"] * 3


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    return problem_from_lines(tmp_path_factory.mktemp("v"), HMM, SENTENCES, overrides={"states": 3})


def base(**kw) -> FitSettings:
    return replace(FitSettings(tolerance=0, eval_every=0, seed=4), **kw)


def objectives(result):
    return [r["objective"] for r in result.history]


def monotone(values, rel=1e-9):
    return all(b >= a - rel * abs(a) for a, b in zip(values, values[1:]))


# --- stepwise ---------------------------------------------------------------------------------

def dense_stepwise(problem, settings: FitSettings) -> np.ndarray:
    """The textbook update, mu <- (1 - eta) mu + eta s over the whole table, then normalise."""
    rng = np.random.default_rng(settings.seed)
    layout = problem.layout
    params = random_init(layout, problem.fixed_theta, rng, init_noise(problem, settings))
    mu = pseudo_counts(params, layout, start_mass(problem, settings))
    learned = layout.learned_mask()
    executor = LocalExecutor(problem, threads=1)
    k = 0
    for _ in range(settings.passes):
        order = rng.permutation(problem.n_examples)
        for start in range(0, len(order), settings.batch_size):
            batch = order[start:start + settings.batch_size]
            weights = ParamState.plain(normalise(mu, layout, settings), layout)
            s = executor.estep(weights, batch, SUM, np.ones(len(batch))).counts
            eta = (k + 2.0) ** -settings.alpha
            mu[learned] = (1 - eta) * mu[learned] + eta * s[learned]
            k += 1
    return normalise(mu, layout, settings)


@pytest.mark.parametrize("batch_size,alpha,smoothing,mass", [(1, 0.7, 0.0, None), (3, 0.6, 0.0, "entry"),
                                                             (2, 1.0, 0.5, "row")])
def test_sparse_stepwise_update_equals_the_dense_update(problem, batch_size, alpha, smoothing, mass):
    s = base(algorithm="stepwise", passes=3, batch_size=batch_size, alpha=alpha, start_mass=mass,
             regularizers={"emit": Prior(smoothing)})
    sparse = fit(problem, s).params.weights(problem.layout)
    np.testing.assert_allclose(sparse, dense_stepwise(problem, s), rtol=1e-9, atol=1e-12)


def test_stepwise_rescales_without_losing_precision(problem, monkeypatch):
    import emc.runtime.online as online
    s = base(algorithm="stepwise", passes=4, alpha=1.0)
    expected = dense_stepwise(problem, s)
    # alpha = 1 shrinks the scale as 1/k; a threshold this high forces many rescalings
    monkeypatch.setattr(online, "RESCALE_BELOW", 0.5)
    scales: list[float] = []
    result = fit(problem, s, after_step=lambda state: scales.append(float(state.params.scale[0])))
    np.testing.assert_allclose(result.params.weights(problem.layout), expected, rtol=1e-9, atol=1e-12)
    # the compiled pass did rescale: unrescaled, the scale would be prod(1 - 1/(k + 2)) = 2/(k + 2)
    # after k updates, far below 0.5 after the first pass
    assert min(scales) >= 0.5


def test_stepwise_rejects_an_alpha_out_of_range(problem):
    from emc.spec.errors import EmcError
    with pytest.raises(EmcError, match="0.5 < alpha <= 1"):
        fit(problem, base(algorithm="stepwise", alpha=0.4))


# --- incremental ------------------------------------------------------------------------------

@pytest.mark.parametrize("mass,block_size", [("entry", 1), ("row", 1), ("entry", 5), ("row", 64)])
def test_incremental_keeps_each_blocks_statistics(problem, mass, block_size):
    """Blocks of 1 (the textbook update), several blocks with a shorter last one (each block's
    E-step batched), and one block holding the 24 examples."""
    s = base(algorithm="incremental", passes=3, start_mass=mass, block_size=block_size)
    np.testing.assert_allclose(fit(problem, s).params.weights(problem.layout), dense_incremental(problem, s),
                               rtol=1e-8, atol=1e-12)


def pool_sum(problem, extra) -> np.ndarray:
    """The sum of the statistics the incremental variant keeps, scattered onto their entries."""
    out = np.zeros(problem.layout.size)
    for e in range(len(extra["first_run"])):
        v = extra["first_value"][e]
        for r in range(extra["first_run"][e], extra["last_run"][e]):
            cell, length = extra["run_cell"][r], extra["run_length"][r]
            out[cell:cell + length] += extra["pool_value"][v:v + length]
            v += length
    return out


def listed_entries(extra, e) -> set[int]:
    return {int(c) + u for r in range(extra["first_run"][e], extra["last_run"][e])
            for c, length in [(extra["run_cell"][r], extra["run_length"][r])] for u in range(length)}


@pytest.mark.parametrize("block_size", [1, 3])
def test_incremental_lists_afresh_after_a_block_writes_outside_its_list(problem, block_size):
    """Replay passes walk each block's list; a write outside it (after an underflow, in real
    fits) stays in the dense counts, and the next pass must list every block again."""
    learned = problem.layout.learned_mask()
    lists, seen = {}, []

    def after(state):
        x = state.extra
        seen.append(x["list_next"])
        if state.step == 1:
            np.testing.assert_allclose(state.params.theta[learned], pool_sum(problem, x)[learned], rtol=1e-12)
            lists.update({e: listed_entries(x, e) for e in range(len(x["first_run"]))})
            x["last_run"] -= 1  # every block forgets its last run
        if state.step == 3:
            assert all(listed_entries(x, e) >= lists[e] for e in lists)

    fit(problem, base(algorithm="incremental", passes=4, block_size=block_size), after_step=after)
    assert seen == [False, True, False, False]


@pytest.mark.parametrize("block_size,passes", [(1, 200), (3, 1000)])
def test_incremental_converges_like_batch_em(problem, block_size, passes):
    """Incremental EM's fixed points are EM's: after many passes it sits where batch EM ends (the
    24 examples in blocks of 1 or 3, whose 8 updates a pass need more passes; the default 64 would
    make it batch EM itself)."""
    incremental = fit(problem, base(algorithm="incremental", passes=passes, block_size=block_size))
    batch = fit(problem, base(iterations=300, init="random"), init=incremental.params)
    assert abs(incremental.objective - batch.objective) < 1e-7 * abs(batch.objective)


# --- hard, annealed, skewed, vb ----------------------------------------------------------------

def test_hard_em_never_lowers_the_best_structures_score(problem):
    result = fit(problem, base(algorithm="hard", iterations=15))
    assert monotone(objectives(result))
    assert result.objective >= objectives(result)[-1] - 1e-9


def test_annealing_at_beta_one_is_plain_em(problem):
    batch = fit(problem, base(iterations=10))
    annealed = fit(problem, base(algorithm="annealed", iterations=10, beta_min=1.0, anneal_tolerance=0))
    np.testing.assert_array_equal(batch.params.theta, annealed.params.theta)


def test_annealing_schedule(problem):
    result = fit(problem, base(algorithm="annealed", beta_min=0.01, beta_factor=2.0, iterations=30))
    betas = [r["beta"] for r in result.history]
    assert betas[0] == 0.01 and betas[-1] == 1.0 and betas == sorted(betas)
    stages = {}
    for r in result.history:
        stages.setdefault(r["beta"], []).append(r["objective"])
    assert all(monotone(values) for values in stages.values())
    # at a high temperature the posterior is near uniform: the annealed run ends elsewhere than EM
    assert not np.allclose(result.params.theta, fit(problem, base(iterations=len(betas))).params.theta)


def test_skewed_annealing_at_beta_one_is_plain_em_and_leans_on_the_skew(problem):
    batch = fit(problem, base(iterations=8))
    skewed = fit(problem, base(algorithm="skewed", iterations=8, beta_min=1.0, anneal_tolerance=0))
    np.testing.assert_array_equal(batch.params.theta, skewed.params.theta)
    # a skew toward a fixed model pulls the first low-beta iterations to it
    start = fit(problem, base(iterations=20, seed=9)).params
    leaning = fit(problem, base(algorithm="skewed", beta_min=0.01, beta_factor=10.0, iterations=1), init=start)
    ordinary = fit(problem, base(algorithm="annealed", beta_min=0.01, beta_factor=10.0, iterations=1), init=start)
    distance = lambda r: np.abs(r.params.theta - start.theta).sum()  # noqa: E731
    assert distance(leaning) < distance(ordinary)


def test_vb_lower_bound_never_decreases_and_weights_are_subnormalised(problem):
    result = fit(problem, base(algorithm="vb", iterations=15, vb_alpha=0.5))
    assert monotone(objectives(result)[1:])
    emit = problem.layout.table("emit")
    assert (emit.matrix(result.params.theta).sum(axis=0) < 1.0).all()


# --- MAP: smoothing, Dirichlet, the smoothed-L0 prior ----------------------------------------

def test_smoothing_and_dirichlet_map(problem):
    # two rows of three outcomes, outcome-major: row 0 has counts 3, 1, 0 and row 1 none
    counts, rows = np.array([3.0, 0.0, 1.0, 0.0, 0.0, 0.0]), np.array([0, 1, 0, 1, 0, 1])
    np.testing.assert_allclose(Prior(1.0).maximize(counts, rows, 2, np.empty(6))[::2], [4 / 7, 2 / 7, 1 / 7])
    np.testing.assert_allclose(Dirichlet(alpha=0.5).maximize(counts, rows, 2, np.empty(6))[::2], [5 / 6, 1 / 6, 0.0])
    np.testing.assert_allclose(Prior().maximize(counts, rows, 2, np.empty(6))[1::2], [1 / 3] * 3)
    result = fit(problem, base(iterations=15, regularizers={"trans": Prior(0.3), "emit": Dirichlet(alpha=2.0)}))
    assert monotone(objectives(result))


@hsettings(max_examples=60, deadline=None)
@given(counts=st.lists(st.floats(0, 50), min_size=2, max_size=12), alpha=st.floats(0.1, 100), beta=st.floats(0.01, 1))
def test_sparse_prior_row_is_feasible_and_beats_the_warm_start(counts, alpha, beta):
    c = np.array(counts)
    p = maximize_row(c, alpha, beta)
    assert abs(p.sum() - 1) < 1e-9 and p.min() >= FLOOR * (1 - 1e-9)
    total = c.sum()
    warm = np.maximum(c / total, FLOOR) if total > 0 else np.full(len(c), 1 / len(c))
    warm /= warm.sum()
    assert objective(p, c, alpha, beta) >= objective(np.maximum(warm, FLOOR), c, alpha, beta) - 1e-9


def test_sparse_prior_gives_a_sparser_transition_table(problem):
    plain = fit(problem, base(iterations=20))
    sparse = fit(problem, base(iterations=20, regularizers={"trans": SmoothedL0(alpha=20.0, beta=0.05)}))
    trans = problem.layout.table("trans")
    near_zero = lambda r: int((trans.matrix(r.params.theta) < 1e-4).sum())  # noqa: E731
    assert near_zero(sparse) > near_zero(plain)


# --- semi-supervised, restarts, determinism --------------------------------------------------

def test_labeled_examples_keep_their_structure_and_initialise(tmp_path):
    from emc.runtime.problem import Model, bind
    model = Model.from_text(HMM, "hmm.em")
    unlabeled = tmp_path / "u.conll"
    unlabeled.write_text("the D\ndog N\n\na D\ncat N\nruns V\n\n")
    labeled = tmp_path / "l.conll"
    labeled.write_text("the D\ncat N\nsleeps V\n\n")
    options = {"format": "conll", "gold_column": 2}
    vocabs: dict = {}
    corpus = model.read(str(unlabeled), options, vocabs).concat(model.read(str(labeled), options, vocabs), labeled=True)
    problem = bind(model, corpus, vocabs, options)
    assert problem.labels["states"] == ["D", "N", "V"] and problem.args["states"] == 3
    settings = base(init="labeled", iterations=5, labeled_weight=2.0, unlabeled_weight=0.5)
    params = initial_params(problem, settings, LocalExecutor(problem), np.random.default_rng(0))
    emit = problem.layout.table("emit")
    cat = problem.vocabs["vocab:x"].index["cat"]
    assert emit.matrix(params.theta)[cat, 1] > 0.5  # the labeled N emitted only "cat"
    assert (emit.matrix(params.theta)[1:] > 0).all()  # and unlabeled words keep some probability
    result = fit(problem, settings)
    decoded, _ = LocalExecutor(problem).decode(result.params, np.array([2]))
    assert decoded[0].tolist() == [0, 1, 2]


def test_restarts_keep_the_best_and_log_all(problem):
    single = [fit(problem, base(iterations=5, seed=s)).objective for s in (4, 5, 6)]
    result = fit_with_restarts(problem, base(iterations=5, restarts=3))
    assert result.objective == pytest.approx(max(single))
    assert sorted({r["restart"] for r in result.history}) == [0, 1, 2]


@pytest.mark.parametrize("algorithm", list(VARIANTS))
def test_same_seed_same_parameters_and_threads_agree(problem, algorithm):
    s = base(algorithm=algorithm, iterations=4, passes=2, beta_min=0.3, beta_factor=2.0)
    two = [fit(problem, replace(s, threads=2)).params.weights(problem.layout) for _ in range(2)]
    one = fit(problem, replace(s, threads=1)).params.weights(problem.layout)
    assert np.array_equal(two[0], two[1])
    np.testing.assert_allclose(one, two[0], rtol=1e-9, atol=1e-15)
