"""Interpolating two fixed unigram models (specs/interpolate.em): the mixing weight EM finds is the
one a direct numerical maximisation of the likelihood finds; the fixed blocks are read from files
(`--fixed lm=FILE`) in the documented format, and their mistakes are reported by file and line."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from conftest import ROOT
from emc.cli import main
from emc.runtime.fit import fit
from emc.runtime.state import FitError
from emc.runtime.problem import Model, bind
from emc.runtime.settings import FitSettings
from emc.spec.errors import DataError, EmcError

SPEC = ROOT / "specs" / "interpolate.em"
WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]
MODEL_A = np.array([0.4, 0.3, 0.1, 0.1, 0.05, 0.05])
MODEL_B = np.array([0.05, 0.05, 0.1, 0.2, 0.3, 0.3])


def write_models(path, a=MODEL_A, b=MODEL_B):
    lines = ["# word model probability"]
    lines += [f"{w} 0 {float(p)!r}" for w, p in zip(WORDS, a)]
    lines += [f"{w} 1 {float(p)!r}" for w, p in zip(WORDS, b)]
    path.write_text("\n".join(lines) + "\n")
    return path


def problem(tmp_path, lines, models):
    model = Model.from_file(SPEC)
    data = tmp_path / "data.txt"
    data.write_text("".join(line + "\n" for line in lines))
    options = {"fixed": {"lm": str(models)}}
    vocabs: dict = {}
    return bind(model, model.read(str(data), options, vocabs), vocabs, options)


def sample_tokens(rng, n, lam):
    chosen = np.where(rng.random(n) < lam, 0, 1)
    return [WORDS[rng.choice(len(WORDS), p=MODEL_A if c == 0 else MODEL_B)] for c in chosen]


def em_lambda(prob) -> float:
    result = fit(prob, FitSettings(iterations=2000, tolerance=1e-13, eval_every=0, seed=4))
    mix = prob.layout.table("mix")
    return float(mix.matrix(result.params.weights(prob.layout))[0, 0])


def direct_lambda(log_likelihood) -> float:
    best = minimize_scalar(lambda lam: -log_likelihood(lam), bounds=(1e-9, 1 - 1e-9), method="bounded",
                           options={"xatol": 1e-12})
    return float(best.x)


def test_per_token_interpolation_weight_matches_direct_maximisation(tmp_path):
    """One token per line: each token chooses model A with probability lambda."""
    tokens = sample_tokens(np.random.default_rng(1), 400, lam=0.3)
    prob = problem(tmp_path, tokens, write_models(tmp_path / "lm.txt"))
    pa = MODEL_A[[WORDS.index(t) for t in tokens]]
    pb = MODEL_B[[WORDS.index(t) for t in tokens]]
    expected = direct_lambda(lambda lam: np.log(lam * pa + (1 - lam) * pb).sum())
    assert em_lambda(prob) == pytest.approx(expected, abs=1e-6)
    assert 0.15 < expected < 0.45


def test_per_document_interpolation_weight_matches_direct_maximisation(tmp_path):
    """One short document per line: the whole document comes from model A or model B."""
    rng = np.random.default_rng(2)
    docs = [sample_tokens(rng, 3, lam=1.0 if rng.random() < 0.6 else 0.0) for _ in range(150)]
    prob = problem(tmp_path, [" ".join(d) for d in docs], write_models(tmp_path / "lm.txt"))
    log_a = np.array([np.log(MODEL_A[[WORDS.index(t) for t in d]]).sum() for d in docs])
    log_b = np.array([np.log(MODEL_B[[WORDS.index(t) for t in d]]).sum() for d in docs])
    expected = direct_lambda(lambda lam: np.logaddexp(np.log(lam) + log_a, np.log(1 - lam) + log_b).sum())
    assert em_lambda(prob) == pytest.approx(expected, abs=1e-6)


def test_fixed_block_is_never_reestimated(tmp_path):
    prob = problem(tmp_path, sample_tokens(np.random.default_rng(3), 50, lam=0.5), write_models(tmp_path / "lm.txt"))
    result = fit(prob, FitSettings(iterations=5, eval_every=0))
    lm = prob.layout.table("lm")
    weights = lm.matrix(result.params.weights(prob.layout))
    vocab = prob.vocabs["vocab:s"]
    for w, pa, pb in zip(WORDS, MODEL_A, MODEL_B):
        if w in vocab.index:
            assert weights[vocab.index[w]].tolist() == [pa, pb]


def test_a_word_both_models_rule_out_is_reported_with_its_line(tmp_path):
    models = write_models(tmp_path / "lm.txt", a=np.array([0.5, 0.5, 0, 0, 0, 0]), b=np.array([0, 0, 0.5, 0.5, 0, 0]))
    prob = problem(tmp_path, ["alpha", "gamma", "eps", "beta"], models)
    with pytest.raises(FitError, match=r"data.txt:3: error: the example on this line has probability 0"):
        fit(prob, FitSettings(iterations=2))


@pytest.mark.parametrize("content, message", [
    ("alpha 0\n", r"lm.txt:1: error: block 'lm' needs 2 value\(s\) and a probability per line"),
    ("alpha 0 0.5\nbeta 0 half\n", r"lm.txt:2: error: 'half' is not a number"),
    ("alpha 0 -0.1\n", r"lm.txt:1: error: the probability -0.1 is not a finite number >= 0"),
    ("alpha 0 nan\n", r"lm.txt:1: error: the probability nan is not a finite number >= 0"),
    ("# models\nalpha 0 0.5\nalpha 0 0.2\n", r"lm.txt:3: error: this entry of block 'lm' was given before"),
    ("alpha 0 0.7\nbeta 1 0.9\nbeta 0 0.7\n", r"lm.txt:3: error: the probabilities of block 'lm' given 0 sum to more than 1"),
    ("alpha 2 0.5\n", r"lm.txt:1: error: '2' is not a class of 'm' \(a class id 0..1\)"),
    ("# nothing\n", r"lm.txt: error: the file of fixed block 'lm' has no entries"),
])
def test_bad_fixed_files_are_reported_by_line(tmp_path, content, message):
    models = tmp_path / "lm.txt"
    models.write_text(content)
    with pytest.raises(DataError, match=message):
        problem(tmp_path, ["alpha beta"], models)


def test_fixed_block_without_a_file(tmp_path):
    model = Model.from_file(SPEC)
    data = tmp_path / "data.txt"
    data.write_text("alpha beta\n")
    vocabs: dict = {}
    with pytest.raises(EmcError, match=r"block 'lm' is fixed: give its file with --fixed lm=FILE"):
        bind(model, model.read(str(data), {}, vocabs), vocabs, {})


def test_cli_fixed_option(tmp_path, capsys):
    models = write_models(tmp_path / "lm.txt")
    data = tmp_path / "tokens.txt"
    data.write_text("\n".join(sample_tokens(np.random.default_rng(5), 100, lam=0.7)) + "\n")
    run = tmp_path / "run"
    assert main(["fit", str(SPEC), str(data), "--fixed", f"lm={models}", "--iterations", "50", "--out", str(run)]) == 0
    with np.load(run / "params.npz") as params:
        assert 0.4 < params["table_mix"][0, 0] < 0.95
    with pytest.raises(SystemExit):
        main(["fit", str(SPEC), str(data), "--fixed", str(models)])
    assert "write NAME=FILE" in capsys.readouterr().err


@pytest.mark.parametrize("algorithm", ["incremental", "stepwise", "hard", "annealed", "vb"])
def test_every_variant_leaves_the_fixed_models_alone(tmp_path, algorithm):
    """tests/test_every_variant_on_every_spec.py skips specs with fixed blocks; here they are."""
    prob = problem(tmp_path, sample_tokens(np.random.default_rng(6), 60, lam=0.4), write_models(tmp_path / "lm.txt"))
    before = prob.fixed_theta[prob.layout.table("lm").entries].copy()
    result = fit(prob, FitSettings(algorithm=algorithm, iterations=3, passes=2, tolerance=0, eval_every=0,
                                   beta_min=0.5, beta_factor=2.0, batch_size=4))
    assert np.isfinite(result.objective)
    weights = result.params.weights(prob.layout)
    np.testing.assert_array_equal(weights[prob.layout.table("lm").entries], before)
    mix = prob.layout.table("mix").matrix(weights).sum()
    assert mix == pytest.approx(1.0) if algorithm != "vb" else 0 < mix <= 1.0
