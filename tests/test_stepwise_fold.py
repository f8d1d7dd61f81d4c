"""Stepwise EM with m = 1 through the chain's estep_fold (emc/runtime/online.py: each sentence's
counts go straight into the statistics as its E-step makes them) makes the same updates as the
tracked E-step and its sparse update (which test_variants holds to the textbook update): on
chains with STOP on and off, several emission factors, one whose row is not the state, a
featured block, smoothing, a tag dictionary (the pruned DP) and rescaling."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import emc.runtime.online as online
from conftest import ROOT
from emc.priors import Prior
from emc.runtime.fit import fit
from emc.runtime.settings import FitSettings
from helpers import problem_from_lines

CHAIN = """
model fold
observed x : tokens
latent z : chain(x, states=3, stop={stop})
multinomial trans : P(z | z.prev)
multinomial emit : P(x | z)
multinomial sfx : P(x.suffix(1) | z)
multinomial back : P(z | x.shape)
"""
WORDS = ["a", "b", "c", "dd", "ee", "Ff", "g1"]
BASE = FitSettings(algorithm="stepwise", passes=3, batch_size=1, alpha=0.7, tolerance=0, eval_every=0, seed=3)


def sentences(seed: int, count: int = 40) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(1, 9))) for _ in range(count)]


def both_passes(problem, settings, monkeypatch) -> tuple[np.ndarray, np.ndarray]:
    """The fitted weights through estep_fold, and through the tracked pass (estep_fold hidden);
    the passes' objectives (the log Z met on the way) agree too."""
    used = []
    fold_pass, compiled = online._fold_pass, online._compiled
    monkeypatch.setattr(online, "_fold_pass", lambda *a: used.append("fold") or fold_pass(*a))
    monkeypatch.setattr(online, "_compiled", lambda name: used.append(name) or compiled(name))
    folded = fit(problem, settings)
    assert used and set(used) == {"fold"}
    monkeypatch.delattr(problem.model.module, "estep_fold")
    tracked = fit(problem, settings)
    assert used[-1] == "stepwise_tracked_pass"
    np.testing.assert_allclose([r["objective"] for r in folded.history], [r["objective"] for r in tracked.history],
                               rtol=1e-12)
    return folded.params.weights(problem.layout), tracked.params.weights(problem.layout)


@pytest.mark.parametrize("stop", ["yes", "no"])
def test_fold_pass_updates_as_the_tracked_pass(tmp_path, monkeypatch, stop):
    problem = problem_from_lines(tmp_path, CHAIN.format(stop=stop), sentences(1))
    settings = replace(BASE, regularizers={"sfx": Prior(0.5)})
    np.testing.assert_allclose(*both_passes(problem, settings, monkeypatch), rtol=1e-12, atol=1e-15)


def test_fold_pass_with_a_tag_dictionary_and_rescaling(tmp_path, monkeypatch):
    (tmp_path / "dict.txt").write_text("a N V\nb N\n")
    options = {"dictionary": str(tmp_path / "dict.txt")}
    problem = problem_from_lines(tmp_path, CHAIN.format(stop="yes"), sentences(2), options)
    monkeypatch.setattr(online, "RESCALE_BELOW", 0.5)  # alpha = 1 halves the scale within two updates
    settings = replace(BASE, alpha=1.0, start_mass="row")
    np.testing.assert_allclose(*both_passes(problem, settings, monkeypatch), rtol=1e-12, atol=1e-15)


def test_fold_pass_on_a_featured_chain(tmp_path, monkeypatch):
    spec = (ROOT / "specs" / "hmm_features.em").read_text()
    problem = problem_from_lines(tmp_path, spec, sentences(4), overrides={"states": 3})
    np.testing.assert_allclose(*both_passes(problem, BASE, monkeypatch), rtol=1e-10, atol=1e-14)
