"""The symmetry constraint (issue 31, `constraint NAME : E[a] agree`; emc/runtime/symmetry.py): both
directions' projected link posteriors against a brute-force KL projection over every enumerated
(forward, reverse) pair of alignments, the fit's objective (log p(x) - KL) never falling, a
constraint that already holds leaving the two directions' fits bit for bit, the spec's checks,
the refusals, and fit / decode through the CLI."""
from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.optimize import minimize

from conftest import ROOT
from emc.cli import main
from emc.runtime.example_constraints import attach
from emc.runtime.executor import LocalExecutor
from emc.runtime.fit import fit, run_steps
from emc.runtime.modes.agreement import Direction, _both_params
from emc.runtime.modes.symmetric import Symmetric
from emc.runtime.settings import FitSettings
from emc.runtime.state import FitState
from emc.runtime.symmetry import SymmetricProjection
from emc.spec.check import check
from emc.spec.errors import EmcError, SpecError
from emc.spec.parse import parse_text
from helpers import problem_from_lines, random_params, structure_scores
from reference import alignment_structures

HMM = (ROOT / "specs" / "hmm_align.em").read_text().replace("maxjump=20", "maxjump=2")
SYMMETRIC = HMM + "constraint symmetric : E[a] agree\n"
PAIRS = ["a b ||| x y", "b ||| y x", "b a ||| x y"]


def both_bijective(bound: float) -> str:
    return SYMMETRIC + f"constraint bijective : E[count per a.source] <= {bound}\n"


def directions(tmp_path, spec: str, lines: list[str], settings: FitSettings) -> list[Direction]:
    """The forward and reverse problems of the lines, each executor carrying the link shifts."""
    out = []
    for reverse in (False, True):
        folder = tmp_path / ("reverse" if reverse else "forward")
        folder.mkdir(exist_ok=True)
        problem = problem_from_lines(folder, spec, lines, {"reverse": reverse})
        d = Direction(problem, LocalExecutor(problem, threads=1))
        attach(d.executor, problem, settings)
        out.append(d)
    return out


def enumerated(problem, params, example: int) -> tuple[np.ndarray, list]:
    structures = list(alignment_structures(problem, example))
    scores = structure_scores(problem, params, structures)
    return scores / scores.sum(), [form for _, form in structures]


def brute_force(pair: list, params: list, example: int, bound: float | None) -> list[np.ndarray]:
    """The KL projection, by scipy over every (forward, reverse) alignment pair, of p_f(a) p_r(b)
    onto E_q[link_f(i, j)] = E_q[link_r(i, j)] (and, with a bound, each direction's expected links
    per source position <= bound); both directions' link marginals under it (target words x
    source positions, NULL last)."""
    (pf, forms_f), (pr, forms_r) = (enumerated(d.problem, p, example) for d, p in zip(pair, params))
    m, l = len(forms_f[0]), len(forms_r[0])
    link_f = np.array([[[form[j] == i for j in range(m)] for i in range(l)] for form in forms_f], float)
    link_r = np.array([[[form[i] == j for j in range(m)] for i in range(l)] for form in forms_r], float)
    p = np.outer(pf, pr).ravel()
    gap = (link_f[:, None] - link_r[None, :]).reshape(len(p), l * m)  # phi_f(a) - phi_r(b), link by link
    constraints = [{"type": "eq", "fun": lambda q: q.sum() - 1.0}, {"type": "eq", "fun": lambda q: q @ gap}]
    if bound is not None:
        count_f = np.repeat(link_f.sum(axis=2), len(pr), axis=0)  # links of each source word i (forward)
        count_r = np.tile(link_r.sum(axis=1), (len(pf), 1))  # links of each target word j (reverse's sources)
        counts = np.concatenate([count_f, count_r], axis=1)
        constraints.append({"type": "ineq", "fun": lambda q: bound - q @ counts})
    kl = lambda q: float(np.sum(q * (np.log(np.maximum(q, 1e-300)) - np.log(p))))
    q = minimize(kl, p, jac=lambda q: np.log(np.maximum(q, 1e-300)) - np.log(p) + 1.0, method="SLSQP",
                 bounds=[(0.0, 1.0)] * len(p), constraints=constraints, options={"ftol": 1e-15, "maxiter": 2000}).x
    q = (np.maximum(q, 0.0) / np.maximum(q, 0.0).sum()).reshape(len(pf), len(pr))
    out = []
    for weights, forms, width, targets in ((q.sum(axis=1), forms_f, l + 1, m), (q.sum(axis=0), forms_r, m + 1, l)):
        marginals = np.zeros((targets, width))
        for prob, form in zip(weights, forms):
            for t, s in enumerate(form):
                marginals[t, width - 1 if s == -1 else s] += prob
        out.append(marginals)
    return out


@pytest.mark.parametrize("bound", [None, 0.8], ids=["symmetric", "symmetric+bijective"])
def test_projected_posteriors_equal_the_brute_force_kl_projection(tmp_path, bound):
    spec = SYMMETRIC if bound is None else both_bijective(bound)
    pair = directions(tmp_path, spec, PAIRS, FitSettings())
    params = [random_params(d.problem, np.random.default_rng(seed)) for d, seed in zip(pair, (4, 5))]
    every = np.arange(len(PAIRS))
    plain = [d.executor.posterior(p, every)[0] for d, p in zip(pair, params)]
    projection = SymmetricProjection(*pair, max_esteps=5000, tolerance=1e-10)
    projection.project(params)
    projected = [d.executor.posterior(p, every)[0] for d, p in zip(pair, params)]
    for ex in every:
        expected = brute_force(pair, params, ex, bound)
        for got, want, before in zip(projected, expected, plain):
            np.testing.assert_allclose(got[ex].reshape(want.shape), want, atol=1e-6)
            assert not np.allclose(before[ex].reshape(want.shape), want, atol=1e-3)  # the constraint bites
    (record, *rest) = projection.last["example_constraints"]
    assert record["before"] > 1e-2 and record["after"] < 1e-8 and record["dual"] > 0
    assert len(rest) == (0 if bound is None else 1)


def _fit(pair: list[Direction], settings: FitSettings, tolerance: float | None = None):
    variant = Symmetric(pair, settings)
    if tolerance is not None:
        variant.projection.tolerance = tolerance
    state = FitState(params=None, rng=np.random.default_rng(settings.seed))
    variant.start(state)
    return state, run_steps(variant, state, settings, pair[0].problem.n_examples)


@pytest.mark.parametrize("bound", [None, 0.8], ids=["symmetric", "symmetric+bijective"])
def test_the_objective_never_falls(tmp_path, bound):
    """PR-EM's objective, log p(x) - KL(q || p) of both directions, with the projection solved tightly."""
    settings = FitSettings(iterations=6, tolerance=0, eval_every=0, threads=1, init="random", seed=3,
                           constraint_esteps=3000)
    spec = SYMMETRIC if bound is None else both_bijective(bound)
    result = _fit(directions(tmp_path, spec, PAIRS, settings), settings, tolerance=1e-9)[1]
    values = [r["objective"] for r in result.history] + [result.objective]
    assert all(b >= a - 1e-7 * abs(a) for a, b in zip(values, values[1:])), values
    assert all(r["example_constraints"][0]["after"] < 1e-6 for r in result.history)


@pytest.mark.parametrize("lines, tolerance", [(["a ||| x", "b ||| y", "a ||| y"], None), (PAIRS, np.inf)],
                         ids=["one-word pairs", "a tolerance every pair meets"])
def test_a_constraint_that_holds_leaves_both_fits_bit_for_bit(tmp_path, lines, tolerance):
    """Pairs whose directions agree already (one word each side, no NULL), or a tolerance no pair
    misses: no dual moves, and each direction's fit is its plain EM fit bit for bit."""
    spec = both_bijective(1.0)
    if tolerance is None:
        spec = spec.replace("null=yes", "null=no")
    settings = FitSettings(iterations=4, tolerance=0, eval_every=0, threads=1, init="uniform")
    state, result = _fit(directions(tmp_path, spec, lines, settings), settings, tolerance)
    for r in result.history:
        assert all(c["lambda"] == 0.0 and c["dual"] == 0.0 for c in r["example_constraints"])
    off = FitSettings(**{**settings.__dict__, "constraints": "off"})
    for reverse, params in zip((False, True), _both_params(state)):
        folder = tmp_path / f"plain{int(reverse)}"
        folder.mkdir()
        plain = fit(problem_from_lines(folder, spec, lines, {"reverse": reverse}), off)
        assert np.array_equal(plain.params.theta, params.theta)


@pytest.mark.parametrize("line, at, message", [
    ("constraint s : E[b] agree", "b]", "'b' is not the latent structure"),
    ("constraint trans : E[a] agree", "trans", "the name 'trans' is already used"),
    ("constraint s : E[a] agree\nconstraint t : E[a] agree", "constraint t", "a spec has one symmetry constraint"),
])
def test_spec_errors_point_at_the_constraint(line, at, message):
    text = HMM + line + "\n"
    with pytest.raises(SpecError) as err:
        check(parse_text(text))
    (d,) = err.value.diagnostics
    assert message in d.message
    lines = text.splitlines()
    assert lines[d.pos.line - 1][d.pos.column - 1:].startswith(at)


def test_a_structure_without_two_directions_refuses():
    text = (ROOT / "specs" / "hmm.em").read_text() + "constraint s : E[z] agree\n"
    with pytest.raises(SpecError, match="a chain has no two directions whose posteriors could agree"):
        check(parse_text(text))


def test_one_direction_alone_refuses_unless_constraints_off(tmp_path):
    problem = problem_from_lines(tmp_path, SYMMETRIC, PAIRS)
    settings = FitSettings(iterations=1, tolerance=0, eval_every=0, threads=1)
    with pytest.raises(EmcError, match="constraint 'symmetric' ties the alignment's two directions"):
        fit(problem, settings)
    fit(problem, FitSettings(**{**settings.__dict__, "constraints": "off"}))


def test_fit_log_and_decode_through_the_cli(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "sym.em"
    spec.write_text(both_bijective(1.0))
    data = tmp_path / "pairs.txt"
    data.write_text("".join(p + "\n" for p in PAIRS * 2))
    common = ["--iterations", "2", "--threads", "1", "--init", "uniform"]
    assert main(["fit", str(spec), str(data), "--out", "agree", "--agree", *common]) != 0
    assert "trains both directions together itself" in capsys.readouterr().err
    assert main(["fit", str(spec), str(data), "--out", "run", *common]) == 0
    assert "symmetric disagreement" in capsys.readouterr().err
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert [c["name"] for c in log[0]["example_constraints"]] == ["symmetric", "bijective"]
    assert (tmp_path / "run" / "reverse" / "run.json").exists()
    assert main(["decode", "run", str(data)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 * len(PAIRS) and all(all(len(link.split("-")) == 2 for link in line.split()) for line in lines)
    assert main(["decode", "run", str(data), "--posteriors"]) == 0  # the forward direction's, projected
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 2 * len(PAIRS) and all(0.0 < float(cell.split(":")[1]) <= 1.0 for row in rows for cell in row.split())
    # --constraints off: the two directions fitted apart, each the plain HMM aligner
    assert main(["fit", str(spec), str(data), "--out", "off", "--constraints", "off", *common]) == 0
    assert "example_constraints" not in json.loads((tmp_path / "off" / "log.jsonl").read_text().splitlines()[0])


def test_a_symmetric_fit_without_a_schedule_takes_its_default(tmp_path, capsys, monkeypatch):
    """No --init, --iterations, --constraint-esteps: IBM 1 first, then one iteration of constrained
    EM with at most 10 passes a projection (the Hansards bench's best; emc/runtime/modes/symmetric.py),
    said on stderr and recorded in run.json; flags on the command line are kept."""
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "sym.em"
    spec.write_text(both_bijective(1.0))
    data = tmp_path / "pairs.txt"
    data.write_text("".join(p + "\n" for p in PAIRS * 2))
    assert main(["fit", str(spec), str(data), "--out", "run", "--threads", "1"]) == 0
    assert "constraint 'symmetric': --init ibm1 --iterations 1 --constraint-esteps 10" in capsys.readouterr().err
    settings = json.loads((tmp_path / "run" / "run.json").read_text())["settings"]
    assert (settings["init"], settings["iterations"], settings["constraint_esteps"]) == ("ibm1", 1, 10)
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert [r["label"].split()[0] for r in log if "example_constraints" in r] == ["symmetric"]
    assert main(["fit", str(spec), str(data), "--out", "given", "--threads", "1", "--iterations", "2", "--init",
                 "uniform"]) == 0
    assert "constraint 'symmetric': --constraint-esteps 10 (" in capsys.readouterr().err
    settings = json.loads((tmp_path / "given" / "run.json").read_text())["settings"]
    assert (settings["init"], settings["iterations"]) == ("uniform", 2)
