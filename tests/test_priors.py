"""Priors as objects (emc/priors): one parser for the spec, --smooth / --prior and saved runs, each
prior's M-step maximising its own MAP objective, and the overrides the command line records."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings as hsettings
from hypothesis import strategies as st

from conftest import ROOT
from emc.cli import main
from emc.priors import Dirichlet, Prior, SmoothedL0
from emc.priors import smoothed_l0 as l0
from emc.priors.normalize import normalize_table
from emc.priors.smoothed_l0 import FLOOR, maximize_row, objective
from emc.priors.text import PriorError, prior_from_expression, prior_from_text
from emc.runtime.job import resolve_regularizers
from emc.runtime.settings import FitSettings
from emc.spec.check import check
from emc.spec.parse import parse_text
from helpers import tiny_problem

HMM2 = ROOT / "specs" / "hmm2.em"  # both blocks `smooth add(0.1)`
positive = st.floats(1e-3, 1e3)


@given(smoothing=st.floats(0, 10), alpha=positive, beta=positive)
def test_a_priors_text_reads_back_exactly(smoothing, alpha, beta):
    for prior in (Prior(smoothing), Dirichlet(smoothing, alpha=alpha), SmoothedL0(smoothing, alpha=alpha, beta=beta)):
        assert prior_from_text(prior.text(), base=Dirichlet(7.0, alpha=3.0)) == prior


def test_an_override_replaces_only_what_it_names():
    spec = SmoothedL0(0.1, alpha=80.0, beta=0.05)
    assert prior_from_text("smooth add(0.5)", spec) == SmoothedL0(0.5, alpha=80.0, beta=0.05)
    assert prior_from_text("prior none", spec) == Prior(0.1)
    assert prior_from_text("prior dirichlet(2.0)", spec) == Dirichlet(0.1, alpha=2.0)
    with pytest.raises(PriorError, match="cannot read the prior"):
        prior_from_text("prior dirichlet(2.0) extra", spec)


def test_spec_and_command_line_build_the_same_prior():
    text = HMM2.read_text().replace("smooth add(0.1)", "smooth add(0.25) prior sparse(beta=0.5, alpha=3)", 1)
    trans = check(parse_text(text, "hmm2.em")).tables()[0]
    assert trans.prior == SmoothedL0(0.25, alpha=3.0, beta=0.5)
    assert prior_from_text("smooth add(0.25)", prior_from_expression("sparse(3, 0.5)")) == trans.prior
    with pytest.raises(PriorError, match="sparse takes 2 finite positive number"):
        prior_from_expression("sparse(3)")


@hsettings(max_examples=40, deadline=None)
@given(counts=st.lists(st.floats(0, 20), min_size=6, max_size=6), smoothing=st.floats(0, 2),
       alpha=st.floats(1.0, 5), beta=st.floats(0.05, 1))
def test_each_m_step_beats_the_normalised_counts_on_its_own_objective(counts, smoothing, alpha, beta):
    """counts . log p + log_prior(p) over two rows of three outcomes (outcome-major): the prior's
    M-step scores at least as high as the plainly normalised counts (plus smoothing)."""
    c, rows = np.array(counts), np.array([0, 1, 0, 1, 0, 1])
    for prior in (Prior(smoothing), Dirichlet(smoothing, alpha=alpha), SmoothedL0(smoothing, alpha=alpha, beta=beta)):
        def score(p, prior=prior):
            return float(np.dot(c, np.log(np.maximum(p, 1e-300)))) + prior.log_prior(p)
        plain = Prior(smoothing + 1e-3).maximize(c, rows, 2, np.empty(6))
        best = prior.maximize(c, rows, 2, np.empty(6))
        np.testing.assert_allclose(np.bincount(rows, weights=best), 1.0)
        assert score(best) >= score(plain) - 1e-9 * abs(score(plain)), prior


def test_online_and_vb_refuse_the_priors_they_cannot_apply():
    assert Dirichlet(0.5, alpha=3.0).online_pseudo_count("emit", "stepwise") == 2.5
    assert Dirichlet(0.5, alpha=3.0).vb_alpha(0.1, "emit") == 3.5 and Prior(0.5).vb_alpha(0.1, "emit") == 0.6
    with pytest.raises(Exception, match="stepwise updates the parameters lazily.*'emit' has prior dirichlet"):
        Dirichlet(alpha=0.5).online_pseudo_count("emit", "stepwise")
    with pytest.raises(Exception, match="vb needs Dirichlet priors; block 'emit' has prior sparse"):
        SmoothedL0(alpha=1.0, beta=1.0).vb_alpha(0.1, "emit")


def test_runs_saved_before_priors_were_objects_still_load(tmp_path):
    problem = tiny_problem(tmp_path, HMM2)
    old = {"regularizers": {"trans": [None, {"kind": "sparse", "alpha": 80.0, "beta": 0.05}], "emit": [0.5, None]}}
    resolved = resolve_regularizers(FitSettings.from_json(old).regularizers, problem)
    assert resolved == {"trans": SmoothedL0(0.1, alpha=80.0, beta=0.05), "emit": Prior(0.5)}


def test_smoothing_alone_on_the_command_line_is_saved_with_the_specs_prior(tmp_path):
    data = tmp_path / "data.txt"
    data.write_text("a b c\nb c a\nc a b a\n")
    out = tmp_path / "run"
    assert main(["fit", str(HMM2), str(data), "--states", "2", "--iterations", "2", "--quiet", "--out", str(out),
                 "--smooth", "emit=0.5", "--prior", "trans=dirichlet(2)"]) == 0
    saved = json.loads((out / "run.json").read_text())["settings"]["regularizers"]
    assert {name: prior_from_text(text) for name, text in saved.items()} == {
        "emit": Prior(0.5), "trans": Dirichlet(0.1, alpha=2.0)}


# --- the compiled smoothed-L0 M-step (emc/priors/smoothed_l0.py) -----------------------------

def sorted_projection(p, direction, s, floor=FLOOR):
    """The diag(p) projection of p + s p direction onto {sum q = 1, q >= floor} the textbook way:
    sort the breakpoints, take the first free set whose tau is consistent."""
    a = p * (1.0 + s * direction)
    breakpoints = (a - floor) / p  # entry i is above the floor iff tau < breakpoint i
    order = np.argsort(-breakpoints)
    k = np.arange(1, len(p) + 1)
    taus = (np.cumsum(a[order]) + (len(p) - k) * floor - 1.0) / np.cumsum(p[order])
    consistent = np.append(breakpoints[order][1:] <= taus[:-1], True)
    return np.maximum(a - taus[np.argmax(consistent)] * p, floor)


def reference_ascent(c, p, alpha, beta, steps):
    """One row's M-step in numpy: scaled projected gradient with the Armijo test, sorted
    projections, a row at a time."""
    p = sorted_projection(np.maximum(p, 0.0) / np.maximum(p, 0.0).sum(), np.zeros(len(p)), 0.0)
    value, s = objective(p, c, alpha, beta), 1.0 / c.sum()
    for _ in range(max(steps, l0.WORK // len(c))):
        gradient = c / p - alpha / beta * np.exp(-p / beta)
        for _ in range(l0.TRIALS):
            q = sorted_projection(p, gradient, s)
            gain = float(gradient @ (q - p))
            trial = objective(q, c, alpha, beta)
            if gain <= 0 or trial >= value + l0.ARMIJO * gain:
                break
            s *= 0.5
        if gain <= 0 or trial < value + l0.ARMIJO * gain:
            break
        p, value, improvement = q, trial, trial - value
        if improvement <= l0.TOLERANCE * abs(value):
            break
    return p


def test_the_projection_is_exact():
    """Newton's (Michelot's) projection ends on the sorted one's tau, floors included."""
    rng = np.random.default_rng(3)
    for n in (2, 3, 7, 40):
        for _ in range(50):
            p = rng.dirichlet(np.full(n, 0.3)) + FLOOR
            p /= p.sum()
            direction, s = rng.normal(0, 10, n), rng.choice([1e-3, 0.1, 1.0])
            out = np.empty(n)
            l0._project_step(p, direction, s, FLOOR, out)
            np.testing.assert_allclose(out, sorted_projection(p, direction, s), rtol=1e-10, atol=1e-15)
            assert abs(out.sum() - 1.0) < 1e-12 and out.min() >= FLOOR


def test_the_compiled_m_step_matches_a_numpy_reference_row_by_row():
    """Rows of different widths (a sparse table's entries in shuffled order) go through the
    compiled rounds together; each ends where the numpy reference, run on it alone, ends."""
    rng = np.random.default_rng(5)
    for _ in range(10):
        widths = np.append(rng.integers(2, 9, size=5), 5000)  # the wide row stops after its `steps`
        rows = np.repeat(np.arange(6), widths)
        c = rng.gamma(0.5, 10, len(rows)) * (rng.random(len(rows)) < 0.8) + 1e-3
        start = np.concatenate([rng.dirichlet(np.ones(w)) for w in widths])
        alpha, beta, steps = rng.uniform(0.5, 80), rng.uniform(0.02, 1), int(rng.integers(1, 30))
        shuffle = rng.permutation(len(rows))
        out = np.empty(len(rows))
        l0.maximize_table(c[shuffle], start[shuffle], rows[shuffle], 6, alpha, beta, out, steps)
        result = np.empty(len(rows))
        result[shuffle] = out
        for r in range(6):
            row = rows == r
            expected = reference_ascent(c[row], start[row], alpha, beta, steps)
            np.testing.assert_allclose(result[row], expected, rtol=1e-6, atol=1e-8)  # a last, tiny step may differ
            reached, wanted = objective(result[row], c[row], alpha, beta), objective(expected, c[row], alpha, beta)
            assert reached == pytest.approx(wanted, rel=1e-12, abs=1e-9)


@hsettings(max_examples=30, deadline=None)
@given(counts=st.lists(st.floats(0, 20), min_size=3, max_size=6), alpha=st.floats(1.0, 5), beta=st.floats(0.05, 1))
def test_the_sparse_m_step_ends_where_scipy_finds_nothing_better_nearby(counts, alpha, beta):
    """From the M-step's row, scipy's SLSQP (bounds p >= FLOOR, sum p = 1) gains nothing: a local
    maximum of the row's objective."""
    from scipy.optimize import minimize

    c = np.array(counts) + 1e-2
    p = maximize_row(c, alpha, beta)
    found = minimize(lambda q: -objective(q, c, alpha, beta), p, method="SLSQP", bounds=[(FLOOR, 1.0)] * len(c),
                     constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1.0}], options={"ftol": 1e-12})
    if found.success and abs(found.x.sum() - 1) < 1e-9 and found.x.min() >= FLOOR * (1 - 1e-9):
        gained = -found.fun - objective(p, c, alpha, beta)
        assert gained <= 1e-6 * (1 + abs(objective(p, c, alpha, beta)))


def test_the_warm_started_m_step_never_scores_below_its_start_and_reads_any_layout():
    """Dense (outcome-major) and sparse layouts give the same rows, `out` may be the counts, and
    every row scores at least what the previous parameters scored (generalised EM)."""
    rng = np.random.default_rng(11)
    outcomes, rows, prior = 9, 4, SmoothedL0(0.0, alpha=20.0, beta=0.05)
    counts = rng.gamma(0.4, 30, (outcomes, rows))
    start = rng.dirichlet(np.ones(outcomes), rows).T
    dense = prior.maximize(counts.ravel(), None, rows, np.empty(counts.size), start=start.ravel())
    local_rows = np.tile(np.arange(rows), outcomes)
    shuffle = rng.permutation(counts.size)
    in_place = counts.ravel()[shuffle].copy()
    prior.maximize(in_place, local_rows[shuffle], rows, in_place, start=start.ravel()[shuffle])
    np.testing.assert_allclose(in_place, dense[shuffle], rtol=1e-12)
    result = dense.reshape(outcomes, rows)
    np.testing.assert_allclose(result.sum(axis=0), 1.0)
    for r in range(rows):
        assert objective(result[:, r], counts[:, r], 20.0, 0.05) >= objective(start[:, r], counts[:, r], 20.0, 0.05)


def test_the_warm_start_keeps_a_higher_maximum_than_the_normalised_counts_reach():
    """A row with two local maxima: from its normalised counts the ascent ends on the lower (the
    barrier the paper's method stalls on); started where the previous M-step left the row, on the
    higher, the M-step stays at least as high. Without the warm start, MAP-EM could fall."""
    c, alpha, beta = np.array([16.9, 1.2, 6.0]), 20.0, 0.05
    start = np.array([0.9753, 0.003, 0.0217])
    warm = SmoothedL0(alpha=alpha, beta=beta).maximize(c, None, 1, np.empty(3), start=start)
    cold = maximize_row(c, alpha, beta)
    assert objective(warm, c, alpha, beta) >= objective(start, c, alpha, beta) > objective(cold, c, alpha, beta) + 1


def test_map_em_with_the_sparse_prior_never_lowers_its_objective(tmp_path):
    """On this problem and seed, M-steps from the normalised counts (not warm-started) lower the
    objective by 7.5 nats at one iteration."""
    from emc.runtime.fit import fit

    problem = tiny_problem(tmp_path, HMM2)
    for regularizers in ({"trans": SmoothedL0(alpha=20.0, beta=0.05)}, {"emit": SmoothedL0(0.1, alpha=5.0, beta=0.05)}):
        result = fit(problem, FitSettings(iterations=25, tolerance=0, eval_every=0, seed=2, regularizers=regularizers))
        values = [r["objective"] for r in result.history] + [result.objective]
        assert all(b >= a - 1e-10 * abs(a) for a, b in zip(values, values[1:])), values


@pytest.mark.parametrize("dtype", [np.uint16, np.int64])
def test_a_sparse_tables_rows_are_normalized_in_place(dtype):
    """Entries in any order, a row whose counts are all 0 (uniform over its own entries), a row
    with no entries; `out` may be the counts themselves."""
    rng = np.random.default_rng(4)
    rows = rng.permutation(np.repeat(np.arange(5), [3, 1, 4, 2, 6]))
    rows = np.where(rows == 3, 5, rows).astype(dtype)  # row 3 keeps no entry; row 5 has two
    values = rng.random(len(rows))
    values[rows == 2] = 0.0
    expected = np.empty_like(values)
    for r in np.unique(rows):
        mine = rows == r
        total = values[mine].sum()
        expected[mine] = values[mine] / total if total > 0 else 1.0 / mine.sum()
    np.testing.assert_allclose(normalize_table(values, rows, 6), expected, rtol=1e-15)
    assert normalize_table(values, rows, 6, out=values) is values
    np.testing.assert_allclose(values, expected, rtol=1e-15)
