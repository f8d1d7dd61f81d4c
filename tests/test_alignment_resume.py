"""An interrupted alignment fit (both directions, or by agreement) is saved so far, and
`emc fit --resume RUN` finishes it with exactly the parameters of an uninterrupted fit, however far
it had got: inside the forward fit, inside the reverse one, or inside the joint one, plain or featured."""
from __future__ import annotations

import numpy as np
import pytest

import emc.runtime.variants.base as variant_base
from emc.cli import main
from emc.runtime.modes import agreement
from helpers_alignment import spec_copy

PAIRS = ["the house ||| la maison", "the blue house ||| la maison bleue", "the flower ||| la fleur",
         "a blue flower ||| une fleur bleue", "a house ||| une maison", "small ||| petite"] * 2
ITERATIONS = 6


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("resume")
    bitext = tmp / "train.txt"
    bitext.write_text("".join(p + "\n" for p in PAIRS))
    return spec_copy(tmp, "ibm1.em"), bitext


def fit(spec, bitext, out, *extra) -> int:
    return main(["fit", spec, str(bitext), "--out", str(out), "--iterations", str(ITERATIONS), "--tolerance", "0",
                 "--quiet", *extra])


def interrupt_at(monkeypatch, module, call: int) -> None:
    """Ctrl-C during the `call`-th M-step the module runs."""
    original, calls = module.maximize, []

    def maximize(*args, **kwargs):
        calls.append(1)
        if len(calls) == call:
            raise KeyboardInterrupt
        return original(*args, **kwargs)
    monkeypatch.setattr(module, "maximize", maximize)


def same_models(a, b) -> None:
    """The same parameters in both directions, feature weights included."""
    for sub in ("", "reverse"):
        with np.load(a / sub / "params.npz") as x, np.load(b / sub / "params.npz") as y:
            assert x.files == y.files and all(np.array_equal(x[k], y[k]) for k in x.files), sub


# M-step calls: the forward fit makes ITERATIONS of them, then the reverse fit
@pytest.mark.parametrize("call", [3, ITERATIONS + 3], ids=["in the forward fit", "in the reverse fit"])
def test_both_directions_resume(setup, tmp_path, monkeypatch, capsys, call):
    spec, bitext = setup
    assert fit(spec, bitext, tmp_path / "whole") == 0
    with monkeypatch.context() as patch:
        interrupt_at(patch, variant_base, call)
        assert fit(spec, bitext, tmp_path / "cut") == 130
    # the whole request resumes from RUN, whichever of its fits was cut
    assert f"`emc fit --resume {tmp_path / 'cut'}`" in capsys.readouterr().err
    assert main(["fit", "--resume", str(tmp_path / "cut"), "--quiet"]) == 0
    same_models(tmp_path / "whole", tmp_path / "cut")


@pytest.mark.parametrize("featured", [False, True], ids=["plain", "featured"])
def test_agreement_resumes(setup, tmp_path, monkeypatch, capsys, featured):
    """A featured fit's checkpoint holds both models' feature weights: the resumed M-steps start
    from them as the uninterrupted fit's did (same_models compares the weights too)."""
    spec, bitext = setup
    if featured:
        spec = spec_copy(tmp_path, "ibm1_features.em")
    assert fit(spec, bitext, tmp_path / "whole", "--agree") == 0
    with monkeypatch.context() as patch:
        interrupt_at(patch, agreement, 2 * 3 + 1)  # two M-steps per iteration: during the fourth
        assert fit(spec, bitext, tmp_path / "cut", "--agree") == 130
    err = capsys.readouterr().err
    assert f"`emc fit --resume {tmp_path / 'cut'}`" in err and "Traceback" not in err
    assert (tmp_path / "cut" / "reverse" / "params.npz").exists()
    assert main(["fit", "--resume", str(tmp_path / "cut"), "--quiet"]) == 0
    same_models(tmp_path / "whole", tmp_path / "cut")
    log = (tmp_path / "cut" / "log.jsonl").read_text().splitlines()
    assert len(log) == ITERATIONS
