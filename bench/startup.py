"""Start-up of `emc fit --iterations 1` for every reference spec (specs/*.em and specs/rules/*.em):
wall seconds from a cold cache (empty numba and emc caches: every function compiled) and warm
(the second run, loading what the first compiled), one line per spec: `SPEC cold S warm S`.

Each spec runs on its structure's tiny data (tests/helpers.py TINY, the sizes the spec declares),
so the time is the start-up: parsing, compiling or loading, reading, one iteration, saving. The
load average before and after is printed: numbers taken while the machine runs other work are
inflated (`--cpu` adds the CPU seconds, which vary less). Run from the repository:
`python bench/startup.py [--specs hmm dmv] [--threads 1] [--cpu] [--phases]`.

`--phases` runs each spec's warm fit a third time and says where its CPU seconds went: Python's
start, numpy, numba, emc's imports, the spec read into its model (parse, check, render, data),
numba's first cached function (which loads numba's typing and lowering registries, and scipy.linalg
for BLAS), the iteration-cost prediction emc says before a fit, and the rest (the other cached
functions, one iteration, saving), and after main returns, the interpreter's teardown (the
process's CPU seconds less the phases').
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from helpers import TINY  # noqa: E402  (the tests' tiny data per structure)

from emc.spec.check import check  # noqa: E402
from emc.spec.parse import parse_file  # noqa: E402

SPECS = sorted((ROOT / "specs").glob("*.em")) + sorted((ROOT / "specs" / "rules").glob("*.em"))
# the files of a spec's fixed blocks, by spec name
FIXED = {"interpolate": ["--fixed", f"lm={ROOT / 'tests' / 'data' / 'interpolate_lm.txt'}"]}


def spec_name(spec: Path) -> str:
    return spec.relative_to(ROOT / "specs").as_posix()


def tiny_lines(spec: Path) -> list[str]:
    """The spec's structure's tiny data (as tests/helpers.py tiny_problem picks it)."""
    checked = check(parse_file(spec))
    structure = checked.structure.name
    if getattr(checked.structure, "program", None) is not None:  # written as rules
        kind = checked.observed[next(iter(checked.binding.observed.values()))]
        return TINY["segmentation" if kind == "symbols" else "chain"]
    fields = len(checked.binding.observed)
    if structure == "label" and fields > 1:
        return [" ||| ".join(line.split(" ||| ")[:fields]) for line in TINY["tuples"]]
    return TINY[structure]


class StartupFailed(Exception):
    """A spec's `emc fit` exited with an error (its line says so; the other specs still run)."""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fit_seconds(spec: Path, data: Path, out: Path, env: dict, threads: int | None) -> tuple[float, float]:
    """(wall, CPU) seconds of one `emc fit` run."""
    command = [sys.executable, "-m", "emc.cli", "fit", str(spec), str(data), "--iterations", "1", "--quiet",
               "--out", str(out), "--overwrite", *FIXED.get(spec.stem, [])]
    if threads:
        command += ["--threads", str(threads)]
    cpu, t0 = _children_cpu(), time.perf_counter()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    seconds, cpu = time.perf_counter() - t0, _children_cpu() - cpu
    if done.returncode:
        raise StartupFailed(f"{spec_name(spec)} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    return seconds, cpu


# A warm fit in one process, its CPU seconds (time.process_time) read at each phase's end.
PHASES = """
import sys, time
marks = [("python", time.process_time())]
import numpy; marks.append(("numpy", time.process_time()))
import numba; marks.append(("numba", time.process_time()))
import emc.cli, emc.dist.executor, emc.runtime.job as job; marks.append(("emc-imports", time.process_time()))
from numba.core import caching
load, say_cost, first = caching.Cache.load_overload, job.say_iteration_cost, []
def timed_load(self, sig, context):
    if first:
        return load(self, sig, context)
    first.append(time.process_time()); done = load(self, sig, context); first.append(time.process_time())
    return done
def timed_cost(*args, **kwargs):
    started = time.process_time(); say_cost(*args, **kwargs); first.append(time.process_time() - started)
caching.Cache.load_overload, job.say_iteration_cost = timed_load, timed_cost
def report():  # an atexit handler: emc ends its process without returning here (emc/cli.py _end_process)
    end = time.process_time()
    cost = first[2] if len(first) > 2 else 0.0
    marks.extend([("spec-to-module", first[0]), ("first-load", first[1]), ("cost-prediction", first[1] + cost),
                  ("rest", end)])
    print(" ".join(f"{name} {at - before:.3f}" for (name, at), (_, before) in zip(marks, [("", 0.0)] + marks)))
import atexit; atexit.register(report)
sys.exit(emc.cli.main())  # as the emc script runs it
"""


def phase_seconds(spec: Path, data: Path, out: Path, env: dict, threads: int | None) -> str:
    """Where a warm fit's CPU seconds went, by phase (PHASES), as one line."""
    command = [sys.executable, "-c", PHASES, "fit", str(spec), str(data), "--iterations", "1", "--quiet",
               "--out", str(out), "--overwrite", *FIXED.get(spec.stem, [])] + (["--threads", str(threads)] if threads else [])
    cpu = _children_cpu()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    cpu = _children_cpu() - cpu
    if done.returncode:
        raise StartupFailed(f"{spec_name(spec)} phases failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    phases = done.stdout.strip().splitlines()[-1]
    measured = sum(float(seconds) for seconds in phases.split()[1::2])
    # the process's CPU seconds outside the phases: its start before the first mark, and the interpreter's
    # teardown when it runs one (emc ends its process without it: emc/cli.py _end_process)
    return f"{phases} teardown {cpu - measured:.3f}"


def fit_environment(scratch: Path) -> dict:
    """The fits' environment: numba's and emc's caches in `scratch` (empty for the cold run, filled
    by it for the warm one), and Python's bytecode written (into emc's __pycache__ folders, ignored
    by git) even where the caller's shell sets PYTHONDONTWRITEBYTECODE, as this project's sessions
    do: an installed emc has its .pyc files, and compiling every emc module from source on every
    run cost a warm fit 0.15-0.3 s that no user pays (bench/README.md, "Start-up, round 5")."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(scratch / "numba"), EMC_CACHE_DIR=str(scratch / "emc"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def startup(spec: Path, threads: int | None, phases: bool = False) -> tuple[tuple[float, float], tuple[float, float], str]:
    """(cold, warm) (wall, CPU) seconds of `emc fit SPEC DATA --iterations 1` on tiny data, and
    with `phases` a warm fit's CPU seconds by phase (else "")."""
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        env = fit_environment(scratch)
        data = scratch / "data.txt"
        data.write_text("".join(line + "\n" for line in tiny_lines(spec)), encoding="utf-8")
        cold = fit_seconds(spec, data, scratch / "run", env, threads)
        warm = fit_seconds(spec, data, scratch / "run", env, threads)
        where = phase_seconds(spec, data, scratch / "run", env, threads) if phases else ""
    return cold, warm, where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--specs", nargs="*", help="spec names (e.g. hmm rules/chain); default: all")
    parser.add_argument("--threads", type=int, help="numba threads (default: all cores)")
    parser.add_argument("--cpu", action="store_true",
                        help="add each run's CPU seconds (user + system) to its line: on a shared machine they "
                             "vary less than wall seconds")
    parser.add_argument("--phases", action="store_true",
                        help="a third, warm run per spec: its CPU seconds by phase (imports, spec to module, numba's "
                             "first cached function, the cost prediction, the rest)")
    args = parser.parse_args()
    specs = [s for s in SPECS if not args.specs or spec_name(s).removesuffix(".em") in args.specs
             or s.stem in args.specs]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores "
          f"(numbers taken while other work runs are inflated)", flush=True)
    worst = 0.0
    for spec in specs:
        try:
            cold, warm, where = startup(spec, args.threads, args.phases)
        except StartupFailed as failed:
            print(failed, flush=True)
            continue
        worst = max(worst, cold[0])
        cpu = f" cpu-cold {cold[1]:.1f} cpu-warm {warm[1]:.1f}" if args.cpu else ""
        print(f"{spec_name(spec)} cold {cold[0]:.1f} warm {warm[0]:.1f}{cpu}", flush=True)
        if where:
            print(f"{spec_name(spec)} warm CPU s by phase: {where}", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; slowest cold start {worst:.1f} s")


if __name__ == "__main__":
    main()
