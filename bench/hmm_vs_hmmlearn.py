"""Seconds per EM iteration: emc's generated HMM vs hmmlearn's CategoricalHMM (scaling), same process.

    python bench/hmm_vs_hmmlearn.py [--threads 1] [--iterations 3]

Both fit the same model (start distribution, no stop transition: the spec below) on CoNLL-2000
train (212k tokens, 45 states) from the same starting parameters; the log-likelihoods of their
first iterations must agree to 1e-6 relative. Also: the arithmetic floor's share of the machine's
peak, and the cold-cache compile time and warm start time of `emc fit`.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from common import ROOT, peak_gflops_per_core, require_data

SPEC = """
model hmm_nostop
observed x : tokens
latent   z : chain(x, states=45, stop=no)
multinomial trans : P(z | z.prev)
multinomial emit  : P(x | z)
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=3)
    args = parser.parse_args()
    os.environ["NUMBA_NUM_THREADS"] = str(args.threads)
    os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    data = require_data() / "conll2000" / "train.txt.gz"

    from hmmlearn import hmm

    from emc.runtime.executor import LocalExecutor
    from emc.runtime.mstep import maximize
    from emc.runtime.params import random_init
    from emc.runtime.problem import Model, bind
    from emc.structures.semiring import SUM

    model = Model.from_text(SPEC, "hmm_nostop.em")
    vocabs: dict = {}
    problem = bind(model, model.read(str(data), {"format": "conll"}, vocabs), vocabs, {})
    K, V = problem.args["states"], problem.sizes["vocab:x"]
    tokens = int(problem.corpus.lengths().sum())
    params = random_init(problem.layout, problem.fixed_theta, np.random.default_rng(1), 1.0)
    executor = LocalExecutor(problem, threads=args.threads)
    executor.warm_up(params)

    examples = np.arange(problem.n_examples)
    weights = np.ones(problem.n_examples)
    emc_ll, emc_times, p = [], [], params
    for _ in range(args.iterations):
        t0 = time.perf_counter()
        result = executor.estep(p, examples, SUM, weights)
        p = maximize(problem.layout, result.counts, p)
        emc_times.append(time.perf_counter() - t0)
        emc_ll.append(float(result.log_z.sum()))

    theta = params.weights(problem.layout)
    trans = problem.layout.table("trans").matrix(theta)  # (outcomes K, rows K + 1: START last)
    emit = problem.layout.table("emit").matrix(theta)  # (outcomes V, rows K)
    learner = hmm.CategoricalHMM(n_components=K, n_iter=args.iterations, tol=-np.inf, implementation="scaling",
                                 init_params="", params="ste")
    learner.n_features = V
    learner.startprob_ = trans[:, K].copy()
    learner.transmat_ = trans[:, :K].T.copy()
    learner.emissionprob_ = emit.T.copy()
    X = problem.corpus.fields["x"].ids.reshape(-1, 1).astype(np.int64)
    lengths = problem.corpus.lengths()
    t0 = time.perf_counter()
    learner.fit(X, lengths)
    hmm_seconds = (time.perf_counter() - t0) / args.iterations
    hmm_ll = list(learner.monitor_.history)

    emc_seconds = float(np.mean(emc_times))
    flops = 3 * K * K * 2 * tokens  # 3 K^2 multiply-adds per token
    peak = peak_gflops_per_core() * args.threads
    print(f"corpus: {problem.n_examples} sentences, {tokens} tokens, {V - 1} types; {K} states; "
          f"{args.threads} thread(s)")
    print(f"hmmlearn CategoricalHMM (scaling): {hmm_seconds:.3f} s per iteration")
    print(f"emc generated code:                {emc_seconds:.3f} s per iteration (E-step + M-step)")
    print(f"speed-up: {hmm_seconds / emc_seconds:.1f}x")
    rel = abs(emc_ll[0] - hmm_ll[0]) / abs(hmm_ll[0])
    print(f"log-likelihood of iteration 1: emc {emc_ll[0]:.6f}, hmmlearn {hmm_ll[0]:.6f} (relative difference {rel:.1e})")
    later = max(abs(a - b) / abs(b) for a, b in zip(emc_ll, hmm_ll))
    print(f"largest relative difference over {args.iterations} iterations: {later:.1e}")
    print(f"arithmetic floor {flops / 1e9:.2f} GFLOP per iteration: {flops / emc_seconds / 1e9:.1f} GFLOP/s, "
          f"{100 * flops / emc_seconds / 1e9 / peak:.0f}% of the {peak:.0f} GFLOP/s peak of {args.threads} core(s)")
    compile_times(data)


def compile_times(data) -> None:
    """`emc fit` from a cold numba cache (every function compiled) and then warm (loaded)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, EMC_CACHE_DIR=cache)
        spec = os.path.join(cache, "hmm.em")
        with open(spec, "w") as f:
            f.write(SPEC)
        command = [sys.executable, "-m", "emc.cli", "fit", spec, str(data), "--format", "conll",
                   "--iterations", "1", "--quiet", "--eval-every", "0"]
        for label in ("cold cache (compiles everything)", "warm cache (second run)"):
            t0 = time.perf_counter()
            subprocess.run(command, env=env, check=True, cwd=ROOT)
            print(f"emc fit, 1 iteration, {label}: {time.perf_counter() - t0:.1f} s wall")


if __name__ == "__main__":
    main()
