"""Speed and memory of the CCM's E-step + M-step (issue 6): seconds per batch EM iteration and peak
memory, for models 1 and 2 (specs/ccm.em, specs/ccm2.em) on WSJ10 (555 sentences of at most 10
tags) and on sentences of length 40 (the 171 sentences of the shared PTB sample with at least 40
tags, cut to their first 40, written to a temporary file outside the repository).

Each (model, data) pair runs in a fresh process: the model is compiled (or loaded from numba's
cache) and warmed up, then batch EM runs --iterations iterations; the reported time is the median
iteration, and separately the median E-step alone (the DP; the rest is the M-step over the
parameter vector). Memory: the process's resident set after warm-up and its peak (ru_maxrss, which
includes Python, numba and LLVM), and the parameter vector itself. Measure single-threaded:

    NUMBA_NUM_THREADS=1 .venv/bin/python bench/spantree_speed.py [--iterations 5]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TREES = ROOT.parent / "shared" / "data" / "ptb-sample" / "wsj_sample_trees.txt"


def resident_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(spec: str, data: str, fmt: str, max_length: int, iterations: int) -> dict:
    """One (model, data) pair, in this process."""
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.fit import fit
    from emc.runtime.params import random_init
    from emc.runtime.problem import Model, bind
    from emc.runtime.settings import FitSettings
    from emc.structures.semiring import SUM

    model = Model.from_file(spec)
    options = {"format": fmt, "max_length": max_length}
    vocabs: dict = {}
    problem = bind(model, model.read(data, options, vocabs), vocabs, options)
    executor = LocalExecutor(problem, 1)
    t0 = time.perf_counter()
    executor.warm_up(random_init(problem.layout, problem.fixed_theta, np.random.default_rng(0), 1.0))
    warm_up = time.perf_counter() - t0
    after_warm_up = resident_mb()
    result = fit(problem, FitSettings(iterations=iterations, tolerance=0, eval_every=0, init="random-split", threads=1),
                 executor=executor)
    seconds = [r["seconds"] for r in result.history]
    examples = np.arange(problem.n_examples)
    estep = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        executor.estep(result.params, examples, SUM, np.ones(len(examples)))
        estep.append(time.perf_counter() - t0)
    lengths = problem.corpus.lengths()
    return {"sentences": problem.n_examples, "max_length": int(lengths.max()), "tokens": int(lengths.sum()),
            "parameters": problem.layout.size, "seconds_per_iteration": float(np.median(seconds)),
            "estep_seconds": float(np.median(estep)),
            "warm_up": warm_up, "rss_after_warm_up_mb": after_warm_up,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "params_mb": problem.layout.size * 8 / 2**20}


def length40_file(directory: Path) -> Path:
    from emc.io.ptb import read_tree

    lines = []
    for line in TREES.read_text(encoding="utf-8").splitlines():
        tags = read_tree(line).tags
        if len(tags) >= 40:
            lines.append(" ".join(tags[:40]))
    path = directory / "length40.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--one", nargs=4, metavar=("SPEC", "DATA", "FORMAT", "MAX_LENGTH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        spec, data, fmt, max_length = args.one
        print(json.dumps(measure(spec, data, fmt, int(max_length), args.iterations)))
        return 0
    print(f"threads: NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'unset (all cores)')}; "
          f"median of {args.iterations} batch EM iterations (E-step + M-step)")
    print()
    print("| model | data | sentences | tokens | parameters | s / iteration | E-step s | E-step ms / sentence | "
          "warm-up s | RSS after warm-up MB | peak RSS MB | params MB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        datasets = [("WSJ10", str(TREES), "ptb", 10), ("length 40", str(length40_file(Path(tmp))), "tokens", 0)]
        for name in ("ccm", "ccm2"):
            for label, data, fmt, max_length in datasets:
                out = subprocess.run([sys.executable, __file__, "--iterations", str(args.iterations), "--one",
                                      str(ROOT / "specs" / f"{name}.em"), data, fmt, str(max_length)],
                                     check=True, capture_output=True, text=True).stdout
                r = json.loads(out.splitlines()[-1])
                print(f"| {name} | {label} | {r['sentences']} | {r['tokens']} | {r['parameters']} | "
                      f"{r['seconds_per_iteration']:.3f} | {r['estep_seconds']:.3f} | "
                      f"{1000 * r['estep_seconds'] / r['sentences']:.2f} | "
                      f"{r['warm_up']:.1f} | {r['rss_after_warm_up_mb']:.0f} | {r['peak_rss_mb']:.0f} | "
                      f"{r['params_mb']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
