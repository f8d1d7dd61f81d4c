"""Per-example constraints (issue 31, emc/runtime/example_constraints.py): the HMM aligner's and IBM
1's projected link posteriors against a brute-force KL projection over every enumerated alignment,
a constraint that holds leaving EM bit for bit, the duals carried by a checkpoint (a resumed fit is
exact), the algorithms that refuse, the spec's checks, and decoding under the constraint."""
from __future__ import annotations

import re

import json

import numpy as np
import pytest
from scipy.optimize import minimize

from conftest import ROOT
from emc.cli import main
from emc.runtime.checkpoint import load_checkpoint, save_checkpoint
from emc.runtime.example_constraints import STATE_KEY, ExampleProjection
from emc.runtime.executor import LocalExecutor
from emc.runtime.fit import fit, run_steps
from emc.runtime.settings import FitSettings
from emc.runtime.state import FitState
from emc.runtime.variants import make_variant
from emc.spec.check import check
from emc.spec.errors import EmcError, SpecError
from emc.spec.parse import parse_text
from emc.structures.semiring import SUM
from helpers import problem_from_lines, random_params, structure_scores
from reference import alignment_structures

HMM = (ROOT / "specs" / "hmm_align.em").read_text().replace("maxjump=20", "maxjump=2")
IBM1 = (ROOT / "specs" / "ibm1.em").read_text()
PAIRS = ["the cat sat ||| le chat assis la", "a cat ||| un chat chat", "the tea ||| le the le the"]


def constrained(spec: str, bound: str) -> str:
    return spec + f"constraint bijective : E[count per a.source] {bound}\n"


def brute_force(problem, params, example: int, op: str, bound: float) -> tuple[np.ndarray, float]:
    """The KL projection of the pair's posterior onto E_q[links of each source position] op bound,
    over every enumerated alignment: its link marginals (target words x source positions, NULL
    last) and its KL from the posterior. Found through the dual over the enumeration (q = p
    exp(-sign lambda . links) / Z, lambda >= 0, by scipy), then certified: such a q is stationary
    for the Lagrangian by its form, so q feasible, lambda >= 0 and complementary slackness (the
    KKT conditions, asserted here) make it the projection, KL being convex. (The primal by SLSQP
    over the 256 alignments of the first pair took minutes of CPU a test.)"""
    structures = list(alignment_structures(problem, example))
    scores = structure_scores(problem, params, structures)
    p = scores / scores.sum()
    links = [form for _, form in structures]
    l, m = _source_length(problem, example), len(links[0])
    counts = np.array([[sum(1 for i in form if i == k) for k in range(l)] for form in links], float)
    sign = 1.0 if op == "<=" else -1.0
    log_p = np.log(np.maximum(p, 1e-300))

    def projected(lam):
        log_q = log_p - sign * (counts @ lam)
        top = log_q.max()
        log_z = top + np.log(np.exp(log_q - top).sum())
        return np.exp(log_q - log_z), log_z

    def dual(lam):  # log Z(lambda) + sign lambda . bound, minimised over lambda >= 0; its gradient
        q, log_z = projected(lam)
        return log_z + sign * bound * lam.sum(), sign * (bound - q @ counts)

    lam = minimize(dual, np.zeros(l), jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * l,
                   options={"ftol": 1e-300, "gtol": 1e-13, "maxiter": 10000}).x
    for _ in range(20):  # Newton's steps on the positions whose lambda is not 0, to machine precision
        q = projected(lam)[0]
        free = lam > 0
        if not free.any():
            break
        centred = counts[:, free] - q @ counts[:, free]
        step = np.linalg.solve((q[:, None] * centred).T @ centred, dual(lam)[1][free])
        lam[free] = np.maximum(lam[free] - step, 0.0)
    q = projected(lam)[0]
    excess = sign * (q @ counts - bound)  # > 0: the bound broken at that position
    assert (lam >= 0).all() and excess.max() < 1e-9, (lam, excess)
    np.testing.assert_allclose(lam * excess, 0.0, atol=1e-9)
    kl = float(np.sum(q * (np.log(np.maximum(q, 1e-300)) - log_p)))
    width = l + 1
    marginals = np.zeros((m, width))
    for prob, form in zip(q, links):
        for j, i in enumerate(form):
            marginals[j, width - 1 if i == -1 else i] += prob
    return marginals, kl


def _source_length(problem, example: int) -> int:
    offsets = problem.model.module.dual_offsets(problem.ints, problem.array_bounds)
    return int(offsets[example + 1] - offsets[example])


@pytest.mark.parametrize("spec", [HMM, IBM1], ids=["hmm", "ibm1"])
@pytest.mark.parametrize("op, bound", [("<=", 0.8), (">=", 1.2)])
def test_projected_posteriors_equal_the_brute_force_kl_projection(tmp_path, spec, op, bound):
    problem = problem_from_lines(tmp_path, constrained(spec, f"{op} {bound}"), PAIRS)
    params = random_params(problem, np.random.default_rng(4))
    executor = LocalExecutor(problem, threads=1)
    every = np.arange(problem.n_examples)
    plain, plain_log_z = executor.posterior(params, every)
    executor.example_projection = ExampleProjection(problem, max_esteps=500, tolerance=1e-10)
    projected, log_z = executor.posterior(params, every)
    moved = 0
    for ex in every:
        expected, kl = brute_force(problem, params, ex, op, bound)
        np.testing.assert_allclose(projected[ex].reshape(expected.shape), expected, atol=1e-6)
        # the E-step's value is the dual's: log p(x) - KL(q || p)
        assert log_z[ex] == pytest.approx(plain_log_z[ex] - kl, abs=1e-6)
        moved += kl > 1e-4 and not np.allclose(plain[ex].reshape(expected.shape), expected, atol=1e-3)
    assert moved >= 1  # the bound bites
    # the E-step projects the same way: its log Z is the dual's value and its duals are kept
    result = executor.estep(params, every, SUM, np.ones(len(every)))
    np.testing.assert_allclose(result.log_z, log_z, atol=1e-9)
    assert executor.example_projection.duals.max() > 0
    record = executor.example_projection.last["example_constraints"][0]
    assert record["before"] > 1e-3 and record["after"] < 1e-6


def test_a_constraint_that_holds_leaves_em_bit_for_bit(tmp_path):
    settings = FitSettings(iterations=4, tolerance=0, eval_every=0, threads=1, init="random")
    plain = fit(problem_from_lines(tmp_path, HMM, PAIRS), settings)
    loose = fit(problem_from_lines(tmp_path, constrained(HMM, "<= 10"), PAIRS), settings)
    assert [r["objective"] for r in plain.history] == [r["objective"] for r in loose.history]
    assert np.array_equal(plain.params.theta, loose.params.theta)
    for r in loose.history:
        (c,) = r["example_constraints"]
        assert c["lambda"] == 0.0 and c["esteps"] == 1.0 and c["dual"] == 0.0


def test_constraints_off_is_plain_em_and_on_projects(tmp_path):
    settings = FitSettings(iterations=3, tolerance=0, eval_every=0, threads=1, init="random")
    plain = fit(problem_from_lines(tmp_path, HMM, PAIRS), settings)
    problem = problem_from_lines(tmp_path, constrained(HMM, "<= 0.7"), PAIRS)
    off = fit(problem, FitSettings(**{**settings.__dict__, "constraints": "off"}))
    on = fit(problem, settings)
    assert np.array_equal(plain.params.theta, off.params.theta) and "example_constraints" not in off.history[0]
    c = on.history[-1]["example_constraints"][0]
    assert c["lambda"] > 0 and c["after"] < c["before"] and c["dual"] > 0
    assert on.objective < off.objective  # log p(x) - KL


def _steps(problem, settings, state, steps):
    """(the state, the result) of the settings' algorithm run to `steps` iterations (an online one's:
    passes) from `state` (None: a random start)."""
    settings = FitSettings(**{**settings.__dict__, "iterations": steps, "passes": steps})
    variant = make_variant(settings.algorithm, problem, LocalExecutor(problem, threads=1), settings)
    if state is None:
        state = FitState(params=random_params(problem, np.random.default_rng(2)), rng=np.random.default_rng(2))
        variant.start(state)
    return state, run_steps(variant, state, settings, problem.n_examples)


def test_the_duals_ride_in_the_checkpoint_so_a_resumed_fit_is_exact(tmp_path):
    problem = problem_from_lines(tmp_path, constrained(HMM, "<= 0.7"), PAIRS)
    settings = FitSettings(tolerance=0, eval_every=0, threads=1, constraint_esteps=3)
    whole = _steps(problem, settings, None, 4)[1]
    half = _steps(problem, settings, None, 2)[0]
    save_checkpoint(tmp_path, half, {})
    resumed_state = load_checkpoint(tmp_path)[1]
    assert resumed_state.extra[STATE_KEY].max() > 0
    resumed = _steps(problem, settings, resumed_state, 4)[1]
    assert np.array_equal(whole.params.theta, resumed.params.theta)
    # without them the resumed projections start from lambda = 0, and the fit differs
    cold_state = load_checkpoint(tmp_path)[1]
    del cold_state.extra[STATE_KEY]
    assert not np.array_equal(whole.params.theta, _steps(problem, settings, cold_state, 4)[1].params.theta)


# the online algorithms project each mini-batch's posteriors: tests/test_constraints_online.py
@pytest.mark.parametrize("algorithm, why", [("hard", "it does not use posteriors")])
def test_an_algorithm_that_cannot_project_says_so(tmp_path, algorithm, why):
    problem = problem_from_lines(tmp_path, constrained(HMM, "<= 0.7"), PAIRS)
    settings = FitSettings(algorithm=algorithm, iterations=1, passes=1, tolerance=0, eval_every=0, threads=1)
    with pytest.raises(EmcError) as err:
        fit(problem, settings)
    assert str(err.value) == (f"--algorithm {algorithm} cannot project onto the per-example constraint 'bijective' "
                              f"({why}): use batch, annealed, skewed, vb, stepwise or incremental, or --constraints off")
    fit(problem, FitSettings(**{**settings.__dict__, "constraints": "off"}))  # off: it fits


@pytest.mark.parametrize("line, at, message", [
    ("constraint c : E[count per a.target] <= 1", "a.target",
     "a per-example constraint cannot group the parts of a alignment by the positions of 'a.target'"),
    ("constraint c : E[count per a.source] <= -1", "-1", "the bound -1 is not a number of parts"),
    ("constraint trans : E[count per a.source] <= 1", "trans", "the name 'trans' is already used"),
    ("constraint c : E[count per a.source] <= 1\nconstraint d : E[count per a.source] <= 2", "constraint d",
     "a spec has one per-example constraint ('c' is one)"),
    ("constraint c : E[number per a.source] <= 1", "number", "unexpected 'number'"),
])
def test_spec_errors_point_at_the_constraint(line, at, message):
    text = IBM1 + line + "\n"
    with pytest.raises(SpecError) as err:
        check(parse_text(text))
    (d,) = err.value.diagnostics
    assert message in d.message
    lines = text.splitlines()
    assert lines[d.pos.line - 1][d.pos.column - 1:].startswith(at)


def test_a_latent_variable_named_count_can_be_constrained():
    """`count` is the per-example form's word, not a keyword: a latent variable may have the name."""
    text = re.sub(r"\ba\.", "count.", re.sub(r"latent +a :", "latent count :", IBM1))
    checked = check(parse_text(constrained(text, "<= 1").replace("a.source", "count.source")))
    (constraint,) = checked.example_constraints
    assert constraint.attr.text == "count.source"


def test_a_structure_without_positions_to_group_refuses():
    text = (ROOT / "specs" / "hmm.em").read_text() + "constraint c : E[count per z] <= 1\n"
    with pytest.raises(SpecError, match="the chain structure compiles the projection for none of its attributes"):
        check(parse_text(text))


def test_fit_log_info_and_projected_posteriors_through_the_cli(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "pr.em"
    spec.write_text(constrained(HMM, "<= 0.6"))
    data = tmp_path / "pairs.txt"
    data.write_text("".join(p + "\n" for p in PAIRS))
    assert main(["fit", str(spec), str(data), "--out", "run", "--iterations", "3", "--forward-only", "--threads", "1",
                 "--seed", "1"]) == 0
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert all(r["example_constraints"][0]["name"] == "bijective" for r in log)
    assert "bijective excess" in capsys.readouterr().err
    assert main(["info", "run"]) == 0
    assert "a per-example constraint's expected parts beyond its bound" in capsys.readouterr().out
    assert main(["decode", "run", str(data), "--posteriors"]) == 0
    for line in capsys.readouterr().out.splitlines():  # each source word's expected links, projected
        per_source: dict[str, float] = {}
        for cell in line.split():
            link, p = cell.split(":")
            per_source[link.split("-")[0]] = per_source.get(link.split("-")[0], 0.0) + float(p)
        assert max(per_source.values()) <= 0.6 + 0.02
