"""Run as the process's command line, emc ends the process without the interpreter's teardown
(emc/cli.py: _end_process; it cost a warm `emc fit` about 0.3 CPU s): what the command printed is
all there, its status is kept, atexit handlers still run, and a thread still running is waited for."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HMM = str(ROOT / "specs" / "hmm.em")

# a marker freed in the interpreter's teardown, an atexit handler, then emc as its script runs it
PROLOGUE = """
import atexit, sys, threading, time
class Teardown:
    def __del__(self):
        print("teardown ran", flush=True)
marker = Teardown()
atexit.register(lambda: print("atexit ran", flush=True))
"""
IMPORT_EMC = "from emc.cli import main\n"
RUN_EMC = "sys.exit(main())\n"


def _emc(*args: str, before: str = "") -> subprocess.CompletedProcess:
    """`emc ARGS` as its script runs it, after `before` (run once emc is imported)."""
    return subprocess.run([sys.executable, "-c", PROLOGUE + IMPORT_EMC + before + RUN_EMC, *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_the_command_line_ends_without_teardown_and_loses_nothing():
    done = _emc("check", HMM)
    assert done.returncode == 0, done.stderr
    # stdout is a pipe (block-buffered): the last line is there only if it was flushed before the end
    assert "emit         P(x | z)" in done.stdout
    assert "atexit ran" in done.stdout
    assert "teardown ran" not in done.stdout


def test_the_status_of_a_failed_command_is_kept():
    done = _emc("check", str(ROOT / "specs" / "no_such_spec.em"))
    assert done.returncode == 1
    assert "cannot read the spec" in done.stderr
    assert "atexit ran" in done.stdout and "teardown ran" not in done.stdout


def test_a_running_thread_is_waited_for():
    # still running when the check ends: it waits for the command to return, then a while longer
    late = ("import emc.cli\n"
            "returned, command = threading.Event(), emc.cli._command\n"
            "emc.cli._command = lambda argv: (command(argv), returned.set())[0]\n"
            "threading.Thread(target=lambda: (returned.wait(), time.sleep(1.0), print('thread done', flush=True)))"
            ".start()\n")
    done = _emc("check", HMM, before=late)
    assert done.returncode == 0, done.stderr
    assert "thread done" in done.stdout and "atexit ran" in done.stdout
    assert "teardown ran" in done.stdout  # the ordinary exit: nothing was cut short


def test_main_called_with_arguments_returns():
    from emc.cli import main

    assert main(["check", HMM]) == 0  # a caller's process (the tests') goes on


def test_a_profiled_run_keeps_its_profile(tmp_path):
    """cProfile writes its numbers after the command returns: with a profiler watching, the
    ordinary exit takes over."""
    profile = tmp_path / "emc.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "emc.cli", "check", HMM],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert profile.stat().st_size > 0
