"""Posterior sparsity (issue 31, emc/runtime/sparsity.py; Graca, Ganchev, Taskar & Pereira 2009):
the projected posteriors of a tiny HMM against a brute-force solution of the penalised KL problem
over every enumerated state sequence of the corpus, the dual objective never falling, sigma = 0 and
--constraints off being plain EM bit for bit, the algorithms that refuse, the spec's checks with
their positions, and a fit through the CLI."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from conftest import ROOT
from emc.cli import main
from emc.runtime.executor import LocalExecutor
from emc.runtime.fit import fit
from emc.runtime.settings import FitSettings
from emc.runtime.sparsity import PARALLEL_ROWS, PosteriorSparsity, _kernel
from emc.spec.check import check
from emc.spec.errors import EmcError, SpecError
from emc.spec.parse import parse_text
from emc.structures.semiring import SUM
from helpers import problem_from_lines, random_params, structure_scores
from reference import chain_structures

HMM = (ROOT / "specs" / "hmm.em").read_text()
SPARSE = (ROOT / "specs" / "hmm_sparse.em").read_text()
LINES = ["a b a", "b a", "a c b", "c a"]


def with_penalty(sigma: float) -> str:
    return SPARSE.replace("penalty 1.0", f"penalty {sigma}")


def brute_force(problem, params, sigma: float) -> tuple[np.ndarray, float]:
    """argmin over q of sum_x KL(q_x || p_x) + sigma sum_{w,t} max_{i: x_i = w} q(z_i = t), by scipy
    (SLSQP on the epigraph: a variable c_{w,t} >= every marginal of w's tokens) over every state
    sequence of every sentence: the token marginals (tokens x K) and the minimum."""
    K = problem.args["states"]
    words = problem.corpus.fields["x"]
    blocks, paths = [], []
    for ex in range(problem.n_examples):
        structures = list(chain_structures(problem, ex))
        scores = structure_scores(problem, params, structures)
        blocks.append(scores / scores.sum())
        paths.append([form for _, form in structures])
    sizes = [len(p) for p in blocks]
    starts = np.concatenate([[0], np.cumsum(sizes)])
    n_q, types = int(starts[-1]), int(words.ids.max()) + 1
    p = np.concatenate(blocks)
    # marginal[token, k] = M[token * K + k] @ q
    M = np.zeros((len(words.ids) * K, n_q))
    for ex, forms in enumerate(paths):
        for s, form in enumerate(forms):
            for t, k in enumerate(form):
                M[(words.offsets[ex] + t) * K + k, starts[ex] + s] = 1.0
    kl = lambda v: float(np.sum(v[:n_q] * (np.log(np.maximum(v[:n_q], 1e-300)) - np.log(p))))
    objective = lambda v: kl(v) + sigma * v[n_q:].sum()
    gradient = lambda v: np.concatenate([np.log(np.maximum(v[:n_q], 1e-300)) - np.log(p) + 1.0,
                                         np.full(types * K, sigma)])
    epigraph = np.zeros((len(words.ids) * K, types * K))
    for token, w in enumerate(words.ids):
        for k in range(K):
            epigraph[token * K + k, w * K + k] = 1.0
    constraints = [{"type": "eq", "fun": (lambda v, a=a, b=b: v[a:b].sum() - 1.0)} for a, b in zip(starts, starts[1:])]
    constraints.append({"type": "ineq", "fun": lambda v: epigraph @ v[n_q:] - M @ v[:n_q],
                        "jac": lambda v: np.hstack([-M, epigraph])})
    start = np.concatenate([p, np.ones(types * K)])
    v = minimize(objective, start, jac=gradient, method="SLSQP", constraints=constraints,
                 bounds=[(0.0, 1.0)] * (n_q + types * K), options={"ftol": 1e-15, "maxiter": 2000}).x
    q = np.maximum(v[:n_q], 0.0)
    for a, b in zip(starts, starts[1:]):
        q[a:b] /= q[a:b].sum()
    marginals = (M @ q).reshape(len(words.ids), K)
    maxima = np.zeros((types, K))
    np.maximum.at(maxima, words.ids, marginals)
    return marginals, float(np.sum(q * (np.log(np.maximum(q, 1e-300)) - np.log(p)))) + sigma * maxima.sum()


def projected(problem, params, max_esteps: int = 3000, tolerance: float = 1e-11):
    """The projection of the model's posteriors: (the sparsity object, the E-step's objective, plain log Z)."""
    executor = LocalExecutor(problem, threads=1)
    every = np.arange(problem.n_examples)
    plain_log_z = executor.estep(params, every, SUM, np.ones(len(every))).log_z.sum()
    sparsity = PosteriorSparsity(problem, np.ones(len(every)), max_esteps, tolerance)
    executor.example_projection = sparsity

    def run(current):
        result = executor.estep(current, every, SUM, np.ones(len(every)))
        return result, float(result.log_z.sum())

    return sparsity, sparsity.estep(params, run)[1], plain_log_z


@pytest.mark.parametrize("sigma", [0.3, 1.0])
def test_projected_posteriors_equal_the_brute_force_penalised_kl_projection(tmp_path, sigma):
    problem = problem_from_lines(tmp_path, with_penalty(sigma), LINES, overrides={"states": 2})
    params = random_params(problem, np.random.default_rng(5))
    sparsity, objective, plain_log_z = projected(problem, params)
    expected, minimum = brute_force(problem, params, sigma)
    np.testing.assert_allclose(sparsity.q, expected, atol=1e-6)
    # the E-step's value is the dual's, at its optimum log p(x) - KL(q || p) - sigma sum max q
    assert objective == pytest.approx(plain_log_z - minimum, abs=1e-6)
    assert minimum > 1e-3  # the penalty bites
    # the dual objective G(0) - G(lambda) never falls from one accepted step to the next
    assert all(b >= a for a, b in zip(sparsity.duals, sparsity.duals[1:])) and len(sparsity.duals) > 3
    record = sparsity.last["sparsity"]
    assert record["after"] < record["before"] and record["dual"] > 0


def test_the_duals_lie_in_the_capped_simplexes(tmp_path):
    problem = problem_from_lines(tmp_path, with_penalty(0.3), LINES, overrides={"states": 2})
    sparsity = projected(problem, random_params(problem, np.random.default_rng(5)), max_esteps=20)[0]
    words = problem.corpus.fields["x"].ids
    assert sparsity.lam.min() >= 0.0 and sparsity.lam.max() > 0.0
    for w in set(words.tolist()):  # the duals are held in type order
        assert (sparsity.lam[np.sort(words) == w].sum(axis=0) <= 0.3 + 1e-12).all()


def test_a_zero_penalty_and_constraints_off_are_plain_em_bit_for_bit(tmp_path):
    settings = FitSettings(iterations=4, tolerance=0, eval_every=0, threads=1, init="random", seed=2)
    plain = fit(problem_from_lines(tmp_path, HMM, LINES, overrides={"states": 3}), settings)
    zero = fit(problem_from_lines(tmp_path, with_penalty(0), LINES, overrides={"states": 3}), settings)
    assert np.array_equal(plain.params.theta, zero.params.theta)
    assert [r["objective"] for r in plain.history] == [r["objective"] for r in zero.history]
    assert all(r["sparsity"]["lambda"] == 0.0 and r["sparsity"]["dual"] == 0.0 for r in zero.history)
    problem = problem_from_lines(tmp_path, SPARSE, LINES, overrides={"states": 3})
    off = fit(problem, FitSettings(**{**settings.__dict__, "constraints": "off"}))
    assert np.array_equal(plain.params.theta, off.params.theta) and "sparsity" not in off.history[0]
    on = fit(problem, settings)
    assert not np.array_equal(plain.params.theta, on.params.theta)
    assert on.history[-1]["sparsity"]["lambda"] > 0 and on.objective < off.objective


@pytest.mark.parametrize("algorithm", ["hard"])  # the online ones project: tests/test_constraints_online.py
def test_an_algorithm_that_cannot_project_says_so(tmp_path, algorithm):
    problem = problem_from_lines(tmp_path, SPARSE, LINES, overrides={"states": 2})
    settings = FitSettings(algorithm=algorithm, iterations=1, passes=1, tolerance=0, eval_every=0, threads=1)
    with pytest.raises(EmcError) as err:
        fit(problem, settings)
    assert str(err.value) == (f"--algorithm {algorithm} cannot project onto the posterior sparsity 'sparse' (its "
                              f"posteriors are not projected): use batch, annealed, skewed, vb, stepwise or incremental, or "
                              f"--constraints off")
    fit(problem, FitSettings(**{**settings.__dict__, "constraints": "off"}))  # off: it fits


@pytest.mark.parametrize("line, at, message", [
    ("constraint c : E[max z per x] penalty -1", "-1", "the penalty -1 is not a weight"),
    ("constraint c : E[max x per x] penalty 1", "x per", "posterior sparsity of a chain is written E[max z per x]"),
    ("constraint c : E[max z per z] penalty 1", "z] penalty", "posterior sparsity of a chain is written"),
    ("constraint emit : E[max z per x] penalty 1", "emit :", "the name 'emit' is already used"),
    ("constraint c : E[max z per x] penalty 1\nconstraint d : E[max z per x] penalty 2", "constraint d",
     "posterior sparsity is a spec's only constraint"),
])
def test_spec_errors_point_at_the_constraint(line, at, message):
    text = HMM + line + "\n"
    with pytest.raises(SpecError) as err:
        check(parse_text(text))
    (d,) = err.value.diagnostics
    assert message in d.message
    assert text.splitlines()[d.pos.line - 1][d.pos.column - 1:].startswith(at)


@pytest.mark.parametrize("spec, message", [
    (HMM.replace("states=45)", "states=45, order=2)"), "the chain structure of order 2 does not compile posterior"),
    ((ROOT / "specs" / "dmv.em").read_text(), "the deptree structure does not compile posterior sparsity"),
])
def test_a_structure_without_the_projection_refuses(spec, message):
    with pytest.raises(SpecError, match=message):
        check(parse_text(spec + "constraint c : E[max z per x] penalty 1\n"))


def test_fit_log_and_info_through_the_cli(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data.txt"
    data.write_text("".join(line + "\n" for line in LINES * 3))
    assert main(["fit", str(ROOT / "specs" / "hmm_sparse.em"), str(data), "--out", "run", "--states", "3",
                 "--iterations", "3", "--threads", "1", "--seed", "1"]) == 0
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert all(r["sparsity"]["name"] == "sparse" and math.isfinite(r["sparsity"]["dual"]) for r in log)
    assert "sparse states per word" in capsys.readouterr().err
    assert main(["info", "run"]) == 0
    assert "posterior sparsity's states per word type" in capsys.readouterr().out


def test_the_dual_kernels_take_one_thread_for_few_rows():
    """Waking numba's workers for a few token rows cost more than the rows (40-80 ms a call on a
    loaded machine): few rows run on one thread, the caller's threads are restored after."""
    import numba

    threads = numba.get_num_threads()
    seen = []
    for rows in (3, PARALLEL_ROWS):
        _kernel(lambda lam: seen.append(numba.get_num_threads()), np.zeros((rows, 2)))
        assert numba.get_num_threads() == threads
    assert seen == [1, threads]
