"""The HMM's cost as the model grows: seconds per EM iteration and GFLOP/s at K states on CoNLL-2000
train, beside the machine's measured dgemm rate on the same threads.

    python bench/hmm_states.py [--states 45 128 256 512 1024] [--threads 1] [--iterations 2]
    python bench/hmm_states.py --states 45 --tokens 50000 200000 1000000   # the corpus repeated

One line per run: `K=256 tokens=211727 s/iter=... GFLOP/s=... peak%=... MiB=...`, counting 6 K^2
flops per token (the forward, backward and edge-marginal products, 2 K^2 each), peak% against the
dgemm rate numpy reaches here with the same threads (a 2000 x 2000 product, best of 3), MiB the
process's peak resident memory so far. The first iteration compiles and is not timed.
"""
from __future__ import annotations

import argparse
import gzip
import os
import sys
import tempfile
import time

import numpy as np

from common import peak_rss_mib, require_data

SPEC = """
model hmm_states
observed x : tokens
latent   z : chain(x, states=45)
multinomial trans : P(z | z.prev)
multinomial emit  : P(x | z)
"""


def dgemm_gflops(size: int = 2000, runs: int = 3) -> float:
    """The best of `runs` size x size matrix products, in GFLOP/s."""
    rng = np.random.default_rng(0)
    a, b = rng.random((size, size)), rng.random((size, size))
    best = np.inf
    for _ in range(runs):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2 * size ** 3 / best / 1e9


def repeated(lines: list[str], tokens: int | None) -> list[str]:
    """Whole sentences of `lines`, repeated in order, until `tokens` tokens (all of them once: None)."""
    if tokens is None:
        return lines
    out, count = [], 0
    while count < tokens:
        for line in lines:
            out.append(line)
            count += len(line.split())
            if count >= tokens:
                break
    return out


def seconds_per_iteration(states: int, lines: list[str], threads: int, iterations: int, scratch: str) -> tuple:
    """(tokens, median seconds of an E-step + M-step over `iterations` timed iterations)."""
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.mstep import maximize
    from emc.runtime.params import random_init
    from emc.runtime.problem import Model, bind
    from emc.structures.semiring import SUM

    path = os.path.join(scratch, f"corpus_{len(lines)}.txt")
    if not os.path.exists(path):
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
    model = Model.from_text(SPEC, "hmm_states.em", {"states": states})
    vocabs: dict = {}
    problem = bind(model, model.read(path, {}, vocabs), vocabs, {})
    params = random_init(problem.layout, problem.fixed_theta, np.random.default_rng(1), 1.0)
    executor = LocalExecutor(problem, threads=threads)
    examples, weights = np.arange(problem.n_examples), np.ones(problem.n_examples)
    times = []
    for step in range(iterations + 1):
        t0 = time.perf_counter()
        params = maximize(problem.layout, executor.estep(params, examples, SUM, weights).counts, params)
        if step:  # the first compiles (or loads) the model
            times.append(time.perf_counter() - t0)
    return int(problem.corpus.lengths().sum()), float(np.median(times))


def conll_sentences() -> list[str]:
    """CoNLL-2000 train's sentences, as lines of words."""
    sentences, words = [], []
    with gzip.open(require_data() / "conll2000" / "train.txt.gz", "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                words.append(line.split()[0])
            elif words:
                sentences.append(" ".join(words))
                words = []
    if words:
        sentences.append(" ".join(words))
    return sentences


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--states", type=int, nargs="+", default=[45, 128, 256, 512, 1024])
    parser.add_argument("--tokens", type=int, nargs="+", help="the corpus repeated to these sizes (default: once)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=2, help="timed iterations per run (median)")
    args = parser.parse_args()
    threads = str(args.threads)
    if os.environ.get("OPENBLAS_NUM_THREADS") != threads:  # BLAS reads them when numpy is imported: start again
        env = dict(os.environ, NUMBA_NUM_THREADS=threads, OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads)
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    sentences = conll_sentences()
    dgemm = dgemm_gflops()
    print(f"dgemm (numpy, {args.threads} thread(s)): {dgemm:.1f} GFLOP/s; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} (a shared machine's numbers are inflated)", flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        for states in args.states:
            for size in args.tokens or [None]:
                tokens, seconds = seconds_per_iteration(states, repeated(sentences, size), args.threads,
                                                        args.iterations, scratch)
                gflops = 6 * states * states * tokens / seconds / 1e9
                print(f"K={states} tokens={tokens} s/iter={seconds:.3f} GFLOP/s={gflops:.1f} "
                      f"peak%={100 * gflops / dgemm:.0f} MiB={peak_rss_mib():.0f}", flush=True)


if __name__ == "__main__":
    main()
