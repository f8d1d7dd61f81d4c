"""The Python API refuses the settings `emc fit` refuses, with the same one-line message, before it
reads the data (issue 33); a keyword that is neither a setting nor a data option is refused, not
passed on unread."""
from __future__ import annotations

import pytest

import emc
from emc.cli import main
from emc.spec.errors import EmcError

from conftest import ROOT

SPEC = ROOT / "specs" / "hmm.em"
LINES = ["a b c", "b c a", "c a b a"]

BAD_SETTINGS = [
    {"iterations": -3}, {"algorithm": "foo"}, {"algorithm": "annealed", "beta_factor": 1.0},
    {"algorithm": "annealed", "beta_factor": 1.0000001}, {"algorithm": "annealed", "beta_min": 0.0},
    {"algorithm": "skewed", "beta_factor": float("nan")}, {"tolerance": float("nan")}, {"restarts": 0},
    {"seed": -1}, {"threads": 0}, {"threads": 1000}, {"algorithm": "stepwise", "alpha": 2.0},
    {"labeled_weight": float("inf")}, {"vb_alpha": 0.0}, {"mstep_iterations": 0}, {"samples_growth": 0.5},
]


@pytest.fixture(scope="module")
def model():
    return emc.load(SPEC, states=2)


def cli_message(tmp_path, setting: dict, capsys) -> str:
    flags = [part for name, value in setting.items() for part in ("--" + name.replace("_", "-"), str(value))]
    data = tmp_path / "data.txt"
    data.write_text("\n".join(LINES) + "\n")
    assert main(["fit", str(SPEC), str(data), "--states", "2", "--out", str(tmp_path / "run"), "--quiet", *flags]) == 1
    return capsys.readouterr().err.strip()


@pytest.mark.parametrize("setting", BAD_SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_the_api_refuses_what_the_cli_refuses_with_the_same_message(tmp_path, model, capsys, setting):
    expected = cli_message(tmp_path, setting, capsys)
    with pytest.raises(EmcError) as refused:
        model.fit(tmp_path / "never-read.txt", **setting)  # refused before the (missing) data are read
    assert str(refused.value) == expected
    assert "\n" not in expected and expected.startswith("--")


def test_a_choice_outside_its_choices_is_refused_by_the_api(model):
    with pytest.raises(EmcError, match=r"^--start-mass sideways: choose from entry, row$"):
        model.fit(LINES, algorithm="stepwise", start_mass="sideways")


def test_a_keyword_that_is_neither_a_setting_nor_a_data_option_is_refused(model):
    with pytest.raises(EmcError, match=r"^fit\(iteratons=\.\.\.\): not a data option of emc fit nor a fit setting"):
        model.fit(LINES, iteratons=3)
    fitted = model.fit(LINES, iterations=2, seed=3)
    with pytest.raises(EmcError, match=r"^decode\(gold_colum=\.\.\.\): not a data option of emc decode"):
        fitted.decode(["a b"], gold_colum=2)
    assert len(fitted.decode(["a b"])) == 1


def test_a_programmatic_fit_refuses_an_unknown_algorithm(tmp_path):
    from emc.runtime.fit import fit
    from emc.runtime.settings import FitSettings
    from helpers import tiny_problem

    with pytest.raises(EmcError, match=r"^--algorithm foo: unknown algorithm \(choose from batch, "):
        fit(tiny_problem(tmp_path, SPEC), FitSettings(algorithm="foo"))
