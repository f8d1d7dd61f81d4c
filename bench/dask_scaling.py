"""The E-step on Dask vs this process: seconds per batch EM iteration and bytes moved per iteration.

    python bench/dask_scaling.py [--iterations 5]

Fits the bigram HMM (45 states) to CoNLL-2000 train+test locally with 1 and 2 threads, and on a
LocalCluster of 2 single-threaded worker processes. Prints the constants of the cost model in
docs/scaling.md: E-step seconds per token, M-step seconds per parameter, and the seconds per MB
that moving parameters and counts costs on this machine.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from common import ROOT, require_data


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5)
    args = parser.parse_args()
    import numba

    from emc.dist.executor import DaskExecutor, connect, disconnect
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.mstep import maximize
    from emc.runtime.params import random_init
    from emc.runtime.problem import Model, bind
    from emc.structures.semiring import SUM

    data = require_data() / "conll2000"
    model = Model.from_file(ROOT / "specs" / "hmm.em")
    options = {"format": "conll"}
    vocabs: dict = {}
    corpus = model.read(str(data / "train.txt.gz"), options, vocabs).concat(
        model.read(str(data / "test.txt"), options, vocabs), labeled=False)
    problem = bind(model, corpus, vocabs, options)
    tokens = int(problem.corpus.lengths().sum())
    params = random_init(problem.layout, problem.fixed_theta, np.random.default_rng(1), 1.0)
    examples = np.arange(problem.n_examples)
    weights = np.ones(problem.n_examples)
    mb = params.theta.nbytes / 2**20

    def time_estep(executor) -> tuple[float, float]:
        executor.estep(params, examples, SUM, weights)  # compile / load, send the code
        estep, mstep = [], []
        p = params
        for _ in range(args.iterations):
            t0 = time.perf_counter()
            result = executor.estep(p, examples, SUM, weights)
            t1 = time.perf_counter()
            p = maximize(problem.layout, result.counts, p)
            estep.append(t1 - t0)
            mstep.append(time.perf_counter() - t1)
        return float(np.median(estep)), float(np.median(mstep))

    print(f"HMM, 45 states, {problem.n_examples} sentences, {tokens} tokens, {problem.layout.size} parameters "
          f"({mb:.1f} MB per array)")
    rows = {}
    for threads in (1, 2):
        numba.set_num_threads(threads)
        rows[f"this process, {threads} thread(s)"] = time_estep(LocalExecutor(problem, threads))
    client = connect(workers=2)
    try:
        executor = DaskExecutor(problem, client)
        rows["Dask LocalCluster, 2 worker processes"] = time_estep(executor)
        moved = executor.bytes_moved
    finally:
        disconnect(client)
    for label, (estep, mstep) in rows.items():
        print(f"  {label:40s} E-step {estep:.3f} s   M-step {mstep:.3f} s   iteration {estep + mstep:.3f} s")
    estep_1 = rows["this process, 1 thread(s)"][0]
    dask_estep = rows["Dask LocalCluster, 2 worker processes"][0]
    print(f"bytes moved per iteration on Dask: {moved / 2**20:.1f} MB (parameters to each worker, counts back)")
    print("cost-model constants (docs/scaling.md):")
    print(f"  E-step compute c = {1e9 * estep_1 / tokens:.0f} ns per token (1 thread)")
    print(f"  M-step m = {1e9 * rows['this process, 1 thread(s)'][1] / problem.layout.size:.1f} ns per parameter")
    overhead = dask_estep - estep_1 / 2
    print(f"  Dask overhead per iteration with 2 workers: {overhead:.3f} s = {overhead / (moved / 2**20):.4f} s per MB moved")


if __name__ == "__main__":
    main()
