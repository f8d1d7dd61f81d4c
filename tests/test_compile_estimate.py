"""The first run's compile notice takes its estimate from bench/startup.py's table: a model with
featured blocks compiles their M-step too, a structure written as rules its generated DP, and
each is told so."""
from __future__ import annotations

import pytest

from conftest import ROOT
from emc.runtime.job import COMPILE_SECONDS, FEATURED_COMPILE_SECONDS, RULES_COMPILE_SECONDS, compile_estimate
from helpers import tiny_problem


@pytest.mark.parametrize("spec, estimate", [("hmm", COMPILE_SECONDS), ("naive_bayes", COMPILE_SECONDS),
                                            ("hmm_features", FEATURED_COMPILE_SECONDS),
                                            ("ibm1_features", FEATURED_COMPILE_SECONDS),
                                            ("rules/dmv", RULES_COMPILE_SECONDS)])
def test_each_kind_of_model_is_told_its_own_estimate(tmp_path, spec, estimate):
    assert compile_estimate(tiny_problem(tmp_path, ROOT / "specs" / f"{spec}.em")) == estimate
    assert len({COMPILE_SECONDS, RULES_COMPILE_SECONDS, FEATURED_COMPILE_SECONDS}) == 3
