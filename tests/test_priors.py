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
