"""An interrupted alignment fit (both directions, or by agreement) is saved so far, and
`emc fit --resume RUN` finishes it with exactly the parameters of an uninterrupted fit, however far
it had got: inside the forward fit, inside the reverse one, or inside the joint one; a featured joint
fit killed with SIGKILL resumes from its checkpoint as exactly."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import emc.runtime.variants.base as variant_base
from conftest import ROOT
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
    for sub in ("", "reverse"):
        with np.load(a / sub / "params.npz") as x, np.load(b / sub / "params.npz") as y:
            assert np.array_equal(x["theta"], y["theta"]), sub


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


def test_agreement_resumes(setup, tmp_path, monkeypatch, capsys):
    spec, bitext = setup
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


def steps_done(run) -> int:
    """The iterations the checkpoint in RUN holds (0 while there is none or it is being replaced)."""
    try:
        with np.load(run / "checkpoint.npz") as npz:
            return json.loads(bytes(npz["meta"]).decode())["step"]
    except Exception:
        return 0


def test_a_featured_agreement_fit_killed_and_resumed_ends_like_an_uninterrupted_one(tmp_path):
    """SIGKILL (no chance to save) mid-fit: the checkpoint holds both models' feature weights, and
    the resumed fit's M-steps start from them as the uninterrupted fit's did."""
    rng = np.random.default_rng(0)
    words = [f"w{k}" for k in range(40)]
    bitext = tmp_path / "train.txt"
    bitext.write_text("".join(" ".join(rng.choice(words, 4)) + " ||| " + " ".join(rng.choice(words, 4)) + "\n"
                              for _ in range(300)))
    # subprocesses run in the test's folder (see tests/test_resume.py), on PYTHONPATH's emc
    command = [sys.executable, "-m", "emc.cli", "fit", str(ROOT / "specs" / "ibm1_features.em"), str(bitext),
               "--agree", "--init", "uniform", "--iterations", "60", "--tolerance", "0", "--threads", "1", "--quiet"]
    subprocess.run([*command, "--out", str(tmp_path / "whole")], check=True, cwd=tmp_path)
    killed = tmp_path / "killed"
    process = subprocess.Popen([*command, "--out", str(killed)], cwd=tmp_path)
    deadline = time.time() + 300
    while steps_done(killed) < 3 and time.time() < deadline and process.poll() is None:
        time.sleep(0.02)
    assert process.poll() is None, "the fit finished before it could be killed: make it longer"
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert steps_done(killed) >= 3
    subprocess.run([sys.executable, "-m", "emc.cli", "fit", "--resume", str(killed), "--quiet"], check=True,
                   cwd=tmp_path)
    same_models(tmp_path / "whole", killed)
    for sub in ("", "reverse"):
        with np.load(tmp_path / "whole" / sub / "params.npz") as x, np.load(killed / sub / "params.npz") as y:
            features = [k for k in x.files if k.startswith("features_")]
            assert features and all(np.array_equal(x[k], y[k]) for k in features), sub
