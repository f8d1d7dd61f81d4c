"""Posterior regularization (emc/runtime/constraints.py, issue 31): the projected posterior against a
brute-force KL projection over every enumerated tree, the dual never falling, a constraint that
holds leaving EM bit for bit unchanged, the spec's checks, and the CLI end to end."""
from __future__ import annotations

import json
import math
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar

from conftest import ROOT
from emc.cli import main
from emc.runtime.constraints import Projection
from emc.runtime.executor import LocalExecutor
from emc.runtime.fit import fit
from emc.runtime.settings import FitSettings
from emc.runtime.state import FitState
from emc.runtime.variants import make_variant
from emc.spec.check import check
from emc.spec.errors import EmcError, SpecError
from emc.spec.parse import parse_text
from emc.structures.semiring import SUM
from helpers import Entries, problem_from_lines, random_params, structure_scores
from reference import deptree_structures

DMV = (ROOT / "specs" / "dmv.em").read_text()
SENTENCES = ["D N V", "N V", "D A N V", "V D N"]


RULES = Path(tempfile.mkdtemp(prefix="emc-rules-"))  # one folder a session: equal specs share compiled code


def constrained(bound: str, rules: str = "N D\nV N\nN A\n") -> str:
    path = RULES / f"rules{zlib.crc32(rules.encode())}.txt"
    path.write_text(rules)
    return DMV + f'constraint rules : E[d.head, d.dependent in "{path}"] {bound}\n'


def enumerated(problem, params):
    """Over the enumerated trees of every sentence: p(z | x), psi(z) (the constraint's feature summed
    over the tree's attachments), the table entries each tree fires, and each sentence's slice."""
    entries = Entries(problem)
    table = problem.layout.table("rules")
    psi_of_entry = Projection(problem).constraints[0].psi
    blocks, p, psi, fired = [], [], [], []
    for ex in range(problem.n_examples):
        structures = list(deptree_structures(problem, ex))
        scores = structure_scores(problem, params, structures)
        start = len(p)
        for (firings, _), score in zip(structures, scores):
            indices = entries.of(firings)
            p.append(score / scores.sum())
            psi.append(sum(psi_of_entry[i - table.offset] for i in indices if table.offset <= i < table.offset + table.size))
            fired.append(indices)
        blocks.append(slice(start, len(p)))
    return np.array(p), np.array(psi), fired, blocks


def brute_force_projection(problem, params) -> tuple[np.ndarray, float]:
    """Expected counts (every table) under the KL projection of the enumerated posteriors onto
    sum_x E_q[psi] <= 0, and its KL: the dual's lambda by scipy over the enumerated distribution
    (q_lambda(z) ~ p(z) exp(-lambda psi(z)) for each sentence); an independent primal solve (SLSQP
    on q itself) finds no feasible q closer to p."""
    p, psi, fired, blocks = enumerated(problem, params)

    def tilted(lam: float) -> np.ndarray:
        q = p * np.exp(-lam * (psi - psi.max()))
        for b in blocks:
            q[b] /= q[b].sum()
        return q

    def dual(lam: float) -> float:  # sum_x log E_p[exp(-lambda psi)], to be minimised over lambda >= 0
        return sum(float(np.log(np.sum(p[b] * np.exp(-lam * psi[b])))) for b in blocks)

    lam = 0.0 if float(p @ psi) <= 0 else minimize_scalar(dual, bounds=(0.0, 50.0), method="bounded",
                                                           options={"xatol": 1e-13}).x
    q = tilted(lam)
    assert float(q @ psi) <= 1e-8 and (lam == 0.0 or abs(float(q @ psi)) < 1e-6)  # feasible, and tight
    kl = lambda v: float(np.sum(np.where(v > 0, v * np.log(np.maximum(v, 1e-300) / p), 0.0)))  # noqa: E731
    constraints = [{"type": "eq", "fun": (lambda v, b=b: v[b].sum() - 1.0)} for b in blocks]
    constraints.append({"type": "ineq", "fun": lambda v: -float(v @ psi), "jac": lambda v: -psi})
    kl_gradient = lambda v: np.log(np.maximum(v, 1e-300) / p) + 1.0  # noqa: E731
    primal = minimize(kl, p, jac=kl_gradient, method="SLSQP", bounds=[(0.0, 1.0)] * len(p), constraints=constraints,
                      options={"ftol": 1e-12, "maxiter": 500}).x
    if float(primal @ psi) <= 1e-9 and all(abs(primal[b].sum() - 1.0) < 1e-9 for b in blocks):
        assert kl(primal) >= kl(q) - 1e-7
    counts = np.zeros(problem.layout.size)
    for value, indices in zip(q, fired):
        for i in indices:
            counts[i] += value
    return counts, kl(q)


@pytest.mark.parametrize("bound", [">= 0.8", "<= 0.1"])
def test_projected_posterior_equals_brute_force_kl_projection(tmp_path, bound):
    problem = problem_from_lines(tmp_path, constrained(bound), SENTENCES)
    params = random_params(problem, np.random.default_rng(3))
    executor = LocalExecutor(problem, threads=1)
    projection = Projection(problem, max_esteps=200, tolerance=1e-12)
    every = np.arange(problem.n_examples)

    def run(current):
        result = executor.estep(current, every, SUM, np.ones(len(every)))
        return result, float(result.log_z.sum())

    plain, _ = run(params)
    result, _ = projection.estep(params, run)
    assert projection.lam[0] > 0  # the constraint did not hold: the posterior moved
    expected, kl = brute_force_projection(problem, params)
    assert kl > 1e-3 and math.isclose(projection.last["dual"], kl, rel_tol=1e-6)  # the dual's value is the KL
    learned = problem.layout.learned_mask() | _entries_mask(problem, "rules")
    np.testing.assert_allclose(result.counts[learned], expected[learned], atol=1e-6)
    assert not np.allclose(plain.counts[learned], expected[learned], atol=1e-3)
    assert np.all(params.theta[problem.layout.table("rules").entries] == 1.0)  # the table is left neutral


def _entries_mask(problem, name: str) -> np.ndarray:
    mask = np.zeros(problem.layout.size, bool)
    mask[problem.layout.table(name).entries] = True
    return mask


def test_the_dual_never_falls_and_pr_em_never_falls(tmp_path):
    problem = problem_from_lines(tmp_path, constrained(">= 0.9"), SENTENCES * 3)
    settings = FitSettings(iterations=8, tolerance=0, eval_every=0, init="random", constraint_esteps=40)
    variant = make_variant("batch", problem, LocalExecutor(problem, threads=1), settings)
    variant.projection.tolerance = 1e-9
    state = FitState(params=random_params(problem, np.random.default_rng(5)), rng=np.random.default_rng(5))
    objectives = []
    for _ in range(8):
        record = variant.step(state)
        duals = variant.projection.duals
        assert all(b >= a for a, b in zip(duals, duals[1:])), duals
        assert record["dual"] >= 0 and record["constraints"][0]["after"] >= 0.9 - 1e-6
        objectives.append(record["objective"])
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(objectives, objectives[1:])), objectives


@pytest.mark.parametrize("bound", [">= 0", "<= 0.99"])
def test_a_constraint_that_holds_leaves_em_bit_for_bit(tmp_path, bound):
    settings = FitSettings(iterations=5, tolerance=0, eval_every=0, threads=1)
    plain = problem_from_lines(tmp_path, DMV, SENTENCES)
    with_constraint = problem_from_lines(tmp_path, constrained(bound), SENTENCES)
    a, b = fit(plain, settings), fit(with_constraint, settings)
    assert [r["objective"] for r in a.history] == [r["objective"] for r in b.history]
    assert a.objective == b.objective
    for r in b.history:
        assert r["constraints"][0]["lambda"] == 0.0 and r["projection_esteps"] == 1
    for t in plain.layout.learned():
        assert np.array_equal(a.params.theta[t.entries], b.params.theta[with_constraint.layout.table(t.name).entries])


def test_constraints_off_is_plain_em(tmp_path):
    settings = FitSettings(iterations=4, tolerance=0, eval_every=0, threads=1)
    plain = fit(problem_from_lines(tmp_path, DMV, SENTENCES), settings)
    problem = problem_from_lines(tmp_path, constrained(">= 0.9"), SENTENCES)
    on = fit(problem, settings)
    off = fit(problem, FitSettings(**{**settings.__dict__, "constraints": "off"}))
    assert [r["objective"] for r in off.history] == [r["objective"] for r in plain.history]
    assert "constraints" not in off.history[0] and on.history[0]["constraints"][0]["lambda"] > 0


def test_an_algorithm_that_cannot_project_says_so(tmp_path):
    problem = problem_from_lines(tmp_path, constrained(">= 0.9"), SENTENCES)
    plain = problem_from_lines(tmp_path, DMV, SENTENCES)
    for algorithm in ("hard", "stochastic"):
        with pytest.raises(EmcError, match="does not project posteriors onto the spec's constraints"):
            fit(problem, FitSettings(algorithm=algorithm, iterations=1))
        settings = FitSettings(algorithm=algorithm, iterations=2, tolerance=0, eval_every=0, threads=1)
        off = fit(problem, FitSettings(**{**settings.__dict__, "constraints": "off"}))
        assert off.objective == fit(plain, settings).objective


SPEC_ERRORS = [
    # (constraint, the text the error points at, message)
    ('constraint r : E[d.head, d.dependnt in "r.txt"] >= 0.8', "dependnt", "unknown attribute 'd.dependnt'"),
    ('constraint r : E[d.head, d.dependent in "r.txt"] >= 1.5', "1.5", "the bound 1.5 is not a share of parts"),
    ('constraint r : E[d.head, d.dependent in "missing.txt"] >= 0.8', '"missing', "no such file of listed values"),
    ('constraint attach : E[d.head, d.dependent in "r.txt"] >= 0.8', "attach", "the name 'attach' is already used"),
    ('constraint r : E[d.root, d.dependent in "r.txt"] >= 0.8', "constraint", "a deptree block scores the root"),
    ('constraint r : E[d.head, d.dependent in "r.txt"] > 0.8', ">", "unexpected character '>'"),
]


@pytest.mark.parametrize("line,at,message", SPEC_ERRORS, ids=[e[2] for e in SPEC_ERRORS])
def test_spec_errors_point_at_the_constraint(tmp_path, line, at, message):
    (tmp_path / "r.txt").write_text("N D\n")
    text = DMV + line + "\n"
    with pytest.raises(SpecError) as info:
        check(parse_text(text, "bad.em"), base_dir=str(tmp_path))
    first = info.value.first
    assert (first.pos.line, first.pos.column) == (len(text.splitlines()), line.index(at) + 1), str(info.value)
    assert message in first.message, str(info.value)


def test_a_rule_file_with_a_wrong_line_is_named(tmp_path, capsys):
    data = tmp_path / "data.txt"
    data.write_text("\n".join(SENTENCES) + "\n")
    spec = tmp_path / "bad.em"
    spec.write_text(constrained(">= 0.8", rules="N D\nV\n"))
    assert main(["fit", str(spec), str(data), "--iterations", "1"]) != 0
    err = capsys.readouterr().err
    assert ".txt:2: error: constraint 'rules' lists 2 value(s) a line" in err and "Traceback" not in err


def test_fit_decode_and_info_record_the_projection(tmp_path, capsys):
    data = ROOT / "tests" / "data" / "tiny.conllu"
    spec = tmp_path / "pr.em"
    spec.write_text(constrained(">= 0.9", rules="NOUN DET\nVERB NOUN\nNOUN ADJ\nVERB PRON\n"))
    run = tmp_path / "run"
    assert main(["fit", str(spec), str(data), "--format", "conllu", "--iterations", "3", "--out", str(run)]) == 0
    assert "rules 0." in capsys.readouterr().err
    records = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    for r in records:
        (c,) = r["constraints"]
        assert set(c) == {"name", "bound", "before", "after", "lambda"} and c["bound"] == ">= 0.9"
        assert math.isfinite(r["dual"]) and r["projection_esteps"] >= 1
    assert main(["decode", str(run), str(data), "--format", "conllu", "--output", "conllu"]) == 0
    assert capsys.readouterr().out.count("\t") > 0
    assert main(["info", str(run)]) == 0
    out = capsys.readouterr().out
    assert "posterior regularization, per iteration" in out and "iter    3  rules" in out


def test_universal_rules_guide_the_dmv_on_ud_english(tmp_path, shared_data):
    """specs/dmv_rules.em on the first 400 sentences of UD English EWT (no punctuation, at most 10
    words, as bench/dmv_ud_rules.py reads it): the rules raise directed accuracy well above the
    plain DMV's, and the projected posteriors meet the bound."""
    import importlib
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        bench = importlib.import_module("dmv_ud_rules")
    finally:
        sys.path.remove(str(ROOT / "bench"))
    whole = tmp_path / "ud10.conllu"
    bench.write_ud10(shared_data, whole)
    data = tmp_path / "ud400.conllu"
    data.write_text("\n\n".join(whole.read_text().split("\n\n")[:400]) + "\n\n")
    settings = FitSettings(iterations=20, tolerance=0, eval_every=0)
    plain = bench.score("dmv.em", data, {"format": "conllu"}, settings)
    rules = bench.score("dmv_rules.em", data, {"format": "conllu"}, settings)
    assert rules["directed"] > plain["directed"] + 0.1, (plain, rules)
    assert rules["share"] >= 0.75 - 1e-3


def test_the_duals_ride_in_the_checkpoint_so_a_resumed_fit_is_exact(tmp_path):
    from emc.runtime.checkpoint import load_checkpoint, save_checkpoint
    from emc.runtime.fit import run_steps

    # a bound the rules cannot meet keeps lambda > 0 from iteration to iteration
    problem = problem_from_lines(tmp_path, constrained(">= 0.5", "N A\nV N\n"), SENTENCES)
    settings = FitSettings(tolerance=0, eval_every=0, threads=1, constraint_esteps=3)

    def steps(state, n):
        current = FitSettings(**{**settings.__dict__, "iterations": n})
        variant = make_variant("batch", problem, LocalExecutor(problem, threads=1), current)
        if state is None:
            state = FitState(params=random_params(problem, np.random.default_rng(5)), rng=np.random.default_rng(5))
        return state, run_steps(variant, state, current, problem.n_examples)

    whole = steps(None, 4)[1]
    half, _ = steps(None, 2)
    save_checkpoint(tmp_path, half, {})
    resumed = steps(load_checkpoint(tmp_path)[1], 4)[1]
    assert np.array_equal(whole.params.theta, resumed.params.theta)
    cold = load_checkpoint(tmp_path)[1]
    assert cold.extra.pop("constraint_duals")[0] > 0  # without them the warm start is lost, and the fit differs
    assert not np.array_equal(whole.params.theta, steps(cold, 4)[1].params.theta)
