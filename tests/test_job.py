"""Fits as jobs: the fit message names every data file, and `emc fit --resume` reads the job from
the checkpoint's small `meta` entry and the fit state once."""
from __future__ import annotations

import numpy as np

from conftest import ROOT
from emc.cli import main
from emc.runtime import checkpoint, job
from emc.runtime.checkpoint import NAME, load_checkpoint, load_job

SPEC = str(ROOT / "specs" / "naive_bayes.em")


def fit(tmp_path, *extra) -> list[str]:
    files = []
    for name, text in (("f1.txt", "a b a\nb c\n"), ("f2.txt", "c d\nd a\n")):
        (tmp_path / name).write_text(text)
        files.append(str(tmp_path / name))
    assert main(["fit", SPEC, *files, "--classes", "2", "--iterations", "3", "--threads", "1", *extra]) == 0
    return files


def test_the_fit_message_names_every_data_file(tmp_path, capsys):
    files = fit(tmp_path)
    assert f"4 examples from {files[0]}, {files[1]};" in capsys.readouterr().err


def test_load_job_reads_only_the_meta_entry(tmp_path, monkeypatch):
    run = tmp_path / "run"
    fit(tmp_path, "--out", str(run), "--quiet")
    record, _ = load_checkpoint(run)
    read = []
    real_load = np.load

    class Recording:
        def __init__(self, npz):
            self.npz = npz

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.npz.close()

        def __getitem__(self, key):
            read.append(key)
            return self.npz[key]

    monkeypatch.setattr(checkpoint.np, "load", lambda path: Recording(real_load(path)))
    assert load_job(run) == record and read == ["meta"]


def test_resume_loads_the_checkpoint_once(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    fit(tmp_path, "--out", str(run), "--quiet")
    assert (run / NAME).exists()
    loads = []

    def counting(path):
        loads.append(path)
        return load_checkpoint(path)

    monkeypatch.setattr(job, "load_checkpoint", counting)
    assert main(["fit", "--resume", str(run)]) == 0
    assert len(loads) == 1 and "resuming" in capsys.readouterr().err


def test_a_fit_checks_its_spec_once_even_in_two_directions(tmp_path, monkeypatch):
    """The spec is parsed and checked once on the way to a fit: make_job keeps the checked model,
    and every step (alignment's two directions included) reuses it."""
    from emc.runtime import problem

    checks = []

    def counting(real):
        def checked(*args, **kwargs):
            checks.append(args)
            return real(*args, **kwargs)
        return checked

    monkeypatch.setattr(job, "check", counting(job.check))
    monkeypatch.setattr(problem, "check", counting(problem.check))
    fit(tmp_path, "--quiet")
    assert len(checks) == 1
    bitext = tmp_path / "pairs.txt"
    bitext.write_text("the house ||| la maison\na house ||| une maison\n")
    assert main(["fit", str(ROOT / "specs" / "ibm1.em"), str(bitext), "--iterations", "2", "--quiet",
                 "--out", str(tmp_path / "ibm1")]) == 0
    assert (tmp_path / "ibm1" / "reverse" / "params.npz").exists() and len(checks) == 2
