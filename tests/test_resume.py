"""Checkpoint and resume: a real `emc fit` killed with SIGKILL mid-run and resumed ends with exactly
the parameters of an uninterrupted run; Ctrl-C saves the model so far and exits cleanly."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import ROOT
from emc.cli import main

SPEC = str(ROOT / "specs" / "hmm.em")


# Subprocesses run in the test's folder, so `python -m emc.cli` imports the installed package,
# not the source tree beside the tests.
@pytest.fixture(scope="module")
def data(tmp_path_factory) -> str:
    """1500 sentences `emc sample` draws (one process for every test here: the same seed each time)."""
    folder = tmp_path_factory.mktemp("sampled")
    out = subprocess.run([sys.executable, "-m", "emc.cli", "sample", SPEC, "--examples", "1500", "--seed", "7",
                          "--states", "6", "--vocab-size", "300"], capture_output=True, text=True, check=True,
                         cwd=folder)
    path = folder / "data.txt"
    path.write_text(out.stdout)
    return str(path)


def fit_command(data, run, *extra):
    return [sys.executable, "-m", "emc.cli", "fit", SPEC, data, "--states", "6", "--threads", "1", "--seed", "3",
            "--tolerance", "0", "--out", str(run), "--quiet", *extra]


def steps_done(run) -> int:
    log = run / "checkpoint.npz"
    if not log.exists():
        return 0
    try:
        with np.load(log) as npz:
            return json.loads(bytes(npz["meta"]).decode())["step"]
    except Exception:  # being replaced right now
        return 0


@pytest.mark.parametrize("extra", [["--iterations", "40"], ["--algorithm", "stepwise", "--passes", "12"],
                                   ["--algorithm", "incremental", "--passes", "12"]],
                         ids=["batch", "stepwise", "incremental"])
def test_sigkill_then_resume_ends_like_an_uninterrupted_run(tmp_path, data, extra):
    whole = tmp_path / "whole"
    subprocess.run(fit_command(data, whole, *extra), check=True, cwd=tmp_path)

    killed = tmp_path / "killed"
    process = subprocess.Popen(fit_command(data, killed, *extra), cwd=tmp_path)
    deadline = time.time() + 300
    while steps_done(killed) < 3 and time.time() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert process.poll() is None, "the fit finished before it could be killed: make it longer"
    process.send_signal(signal.SIGKILL)
    process.wait()
    interrupted_at = steps_done(killed)
    assert interrupted_at >= 3

    subprocess.run([sys.executable, "-m", "emc.cli", "fit", "--resume", str(killed), "--quiet"], check=True,
                   cwd=tmp_path)
    with np.load(whole / "params.npz") as a, np.load(killed / "params.npz") as b:
        assert np.array_equal(a["theta"], b["theta"])
    log = [json.loads(line) for line in (killed / "log.jsonl").read_text().splitlines()]
    steps = [r.get("iteration") or r.get("pass") for r in log]
    assert steps == list(range(1, len(steps) + 1))


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_saves_and_exits_cleanly(tmp_path, data, stop):
    """Ctrl-C, or SIGTERM (`kill`, a batch system's time limit), mid-fit: the model so far is saved
    and the message says how to resume."""
    run = tmp_path / "run"
    # far more iterations than it can run before the signal: on a loaded machine 1000 tiny ones
    # could finish between the poll and the signal
    # -X faulthandler: should the fit not stop, SIGABRT makes it print where it is. The child gets
    # SIGINT's default back: a suite started in the background of a script (`make test &`) ignores
    # SIGINT, the fit inherits that, and Python then never raises KeyboardInterrupt (seen here)
    command = fit_command(data, run, "--iterations", "1000000")
    process = subprocess.Popen([command[0], "-X", "faulthandler", *command[1:]], stderr=subprocess.PIPE,
                               text=True, cwd=tmp_path,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 300
    while steps_done(run) < 2 and time.time() < deadline:
        time.sleep(0.05)
    assert steps_done(run) >= 2, "the fit did not get going in time"
    process.send_signal(stop)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
        pytest.fail(f"the fit did not end within 60 s of {stop!r}; where it was:\n{process.communicate()[1]}")
    assert process.returncode == 130, err
    assert "interrupted after" in err and "--resume" in err and "Traceback" not in err
    assert (run / "params.npz").exists() and (run / "run.json").exists()


def test_a_fit_resumed_from_another_directory_reads_the_files_where_it_started(tmp_path, monkeypatch, capsys):
    started, elsewhere = tmp_path / "started", tmp_path / "elsewhere"
    started.mkdir(), elsewhere.mkdir()
    (started / "d.txt").write_text("a b c\nb c a\n")
    (elsewhere / "d.txt").write_text("x y\n")  # the same name, other data: must not be read
    monkeypatch.chdir(started)
    assert main(["fit", SPEC, "d.txt", "--states", "2", "--iterations", "4", "--out", "run", "--quiet"]) == 0
    with np.load(started / "run" / "params.npz") as npz:
        fitted = npz["theta"]
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    assert main(["fit", "--resume", str(started / "run")]) == 0
    assert f"resuming in {started}" in capsys.readouterr().err
    assert os.getcwd() == str(elsewhere)
    with np.load(started / "run" / "params.npz") as npz:
        assert np.array_equal(npz["theta"], fitted)


def test_resume_without_checkpoint(tmp_path, capsys):
    assert main(["fit", "--resume", str(tmp_path)]) == 1
    assert "no checkpoint to resume from" in capsys.readouterr().err


def test_live_log(tmp_path, capsys):
    data = tmp_path / "d.txt"
    data.write_text("a b c\nb c a\n")
    log = tmp_path / "live.jsonl"
    assert main(["fit", SPEC, str(data), "--states", "2", "--iterations", "4", "--log", str(log), "--quiet"]) == 0
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["iteration"] for r in records] == [1, 2, 3, 4]
    assert {"algorithm", "objective", "seconds_total", "examples_seen"} <= set(records[0])


def test_a_closed_stderr_does_not_lose_the_fit(tmp_path, data):
    """`emc fit ... 2>&1 | head` closes the progress reader early: the fit must still finish and save."""
    run = tmp_path / "run"
    command = [c for c in fit_command(data, run, "--iterations", "5") if c != "--quiet"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, cwd=tmp_path)
    process.stderr.close()
    assert process.wait(timeout=300) == 0
    assert (run / "params.npz").exists()


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
@pytest.mark.parametrize("writer", ["checkpoint", "file"])
def test_a_ctrl_c_while_a_file_is_written_waits_for_the_file(tmp_path, monkeypatch, writer, stop):
    """Ctrl-C (or SIGTERM, with the handler the `emc` command sets) landing inside a checkpoint's
    (or any run file's) write is held back until the file is whole and renamed, then raised: no
    temporary file is left, and no half-made zip file (its __del__ printed a traceback after an
    interrupted fit had been saved)."""
    from emc.cli import _stop_as_ctrl_c
    from emc.runtime.checkpoint import load_checkpoint, save_checkpoint
    from emc.io.atomic import atomic_write
    from emc.runtime.params import ParamState
    from emc.runtime.state import FitState

    real_fsync = os.fsync

    def interrupted_fsync(fd):  # the signal arrives in the middle of the write
        os.kill(os.getpid(), stop)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", interrupted_fsync)
    handler = signal.default_int_handler if stop == signal.SIGINT else _stop_as_ctrl_c
    previous = signal.signal(stop, handler)  # even if the suite ignores it
    try:
        with pytest.raises(KeyboardInterrupt):
            if writer == "checkpoint":
                params = ParamState(np.arange(3.0), np.ones(1), np.zeros(1), np.zeros(1), np.ones(1))
                save_checkpoint(tmp_path, FitState(params, np.random.default_rng(0), step=4), {"spec": "x"})
            else:
                atomic_write(tmp_path / "run.json", "{}")
    finally:
        signal.signal(stop, previous)
    written = "checkpoint.npz" if writer == "checkpoint" else "run.json"
    assert [p.name for p in tmp_path.iterdir()] == [written]
    if writer == "checkpoint":
        job, state = load_checkpoint(tmp_path)
        assert job == {"spec": "x"} and state.step == 4 and np.array_equal(state.params.theta, np.arange(3.0))


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_one(tmp_path):
    from emc.io.atomic import atomic_file
    from emc.spec.errors import EmcError

    target = tmp_path / "params.npz"
    target.write_bytes(b"old")
    with pytest.raises(EmcError, match="params.npz: cannot write [(]disk full[)]; the previous file is kept"):
        with atomic_file(target) as f:
            f.write(b"half of the new")
            raise OSError("disk full")
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["params.npz"]
