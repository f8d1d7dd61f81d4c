"""Seconds per M-step of a featured translation table (emc/runtime/blocks/pair_features.py) on the
Hansards text of bench/alignment_hansards.py: specs/ibm1_features.em, English->French, the
expected counts of the E-step after 3 batch iterations from uniform tables; the M-step from the
weights those iterations left, as EM runs it, and how far it gets towards the M-step's optimum
(the same M-step run for 200 turns).

    NUMBA_NUM_THREADS=1 python bench/pair_mstep_speed.py [--repeats 3]

(Commit aaf594f's M-step, scipy's L-BFGS-B over all the weights, took 2.8 to 4.7 s on such an
M-step, ending 0.41 below its optimum, where the block-coordinate one took 0.3 to 0.6 s, ending
0.01 below it, timed in one process on a shared machine.)
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from alignment_hansards import DATA, ROOT, TRAIN, bitext
from emc.runtime.executor import LocalExecutor
from emc.runtime.fit import fit
from emc.runtime.problem import Model, bind
from emc.runtime.settings import FitSettings
from emc.structures.semiring import SUM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    spec = ROOT / "specs" / "ibm1_features.em"
    model = Model.from_text(spec.read_text(), spec.name, None)
    with tempfile.TemporaryDirectory() as tmp:
        pairs = bitext(args.data, TRAIN, Path(tmp) / "train.txt")
        vocabs: dict = {}
        problem = bind(model, model.read(str(Path(tmp) / "train.txt"), {}, vocabs), vocabs, {})
    settings = FitSettings(iterations=3, tolerance=0, eval_every=0, init="uniform")
    params = fit(problem, settings).params
    examples = np.arange(problem.n_examples)
    t = problem.layout.table("trans")
    counts = t.values(LocalExecutor(problem).estep(params, examples, SUM, np.ones(len(examples))).counts).copy()
    block, start = t.featured, params.features["trans"]
    block.maximize(counts, start, 1)  # compiles (or loads) the M-step
    optimum = block.objective(block.maximize(counts, start, 200), counts)[0]
    print(f"{pairs} pairs, {block.n_features} weights; objective {block.objective(start, counts)[0]:.2f} at the "
          f"start, {optimum:.2f} at the optimum")
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        weights = block.maximize(counts, start)
        seconds = time.perf_counter() - t0
        print(f"M-step {seconds:.2f} s, objective {block.objective(weights, counts)[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
