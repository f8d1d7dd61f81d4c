"""IBM Model 1 speed and memory on a synthetic bitext: seconds per batch EM iteration, set-up time
(reading, vocabularies, the sparse t-table index) and peak memory, single-threaded.

    NUMBA_NUM_THREADS=1 python bench/alignment_speed.py [--pairs 25000 50000 100000] [--iterations 5]

The corpus (written to a temporary folder, never kept): 20,000-word Zipfian (exponent 1)
vocabularies per side; source lengths 1 + Poisson(19) (mean 20); each source word emits its
translation (80%, else a second one) or nothing (10%), 10% of target words are spurious frequent
words, and neighbours swap with probability 0.2, so target sentences also average 20 words.

Each size runs in a fresh process (peak memory is that process's maximum resident set), after one
warm-up process that compiles the model into numba's cache, so compile time and memory are not
counted. Seconds per iteration are the median over the iterations, as wall-clock time and as the
process's CPU time (which a machine shared with other jobs inflates less). Targets (issue 5):
at most 1.2 s per iteration and 600 MiB at 100k pairs.
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
SPEC = ROOT / "specs" / "ibm1.em"
VOCABULARY = 20000


def write_corpus(path: Path, pairs: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, VOCABULARY + 1)
    cdf = np.cumsum(zipf / zipf.sum())
    primary = np.arange(VOCABULARY)  # a source word of rank r translates mostly to the target word of rank r
    secondary = rng.integers(0, VOCABULARY, VOCABULARY)
    lengths = 1 + rng.poisson(19, pairs)
    words = np.searchsorted(cdf, rng.random(int(lengths.sum())))
    with path.open("w", encoding="utf-8") as out:
        start = 0
        for n in lengths:
            source = words[start:start + n]
            start += n
            kept = source[rng.random(n) >= 0.1]
            target = np.where(rng.random(len(kept)) < 0.8, primary[kept], secondary[kept])
            spurious = rng.random(len(target)) < 0.1
            target = np.insert(target, np.flatnonzero(spurious), rng.integers(0, 50, int(spurious.sum())))
            for j in range(len(target) - 1):
                if rng.random() < 0.2:
                    target[j], target[j + 1] = target[j + 1], target[j]
            out.write(" ".join(f"e{w}" for w in source) + " ||| " + " ".join(f"f{w}" for w in target) + "\n")


def measure(corpus: Path, iterations: int) -> dict:
    """One fit, in this process: set-up and per-iteration seconds, peak memory."""
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.fit import fit
    from emc.runtime.params import random_init
    from emc.runtime.problem import Model, bind
    from emc.runtime.settings import FitSettings

    model = Model.from_file(SPEC)
    t0 = time.perf_counter()
    vocabs: dict = {}
    corpus_data = model.read(str(corpus), {}, vocabs)
    read = time.perf_counter() - t0
    problem = bind(model, corpus_data, vocabs, {})
    setup = time.perf_counter() - t0
    executor = LocalExecutor(problem, threads=1)
    executor.warm_up(random_init(problem.layout, problem.fixed_theta, np.random.default_rng(0), 1.0))
    settings = FitSettings(iterations=iterations, tolerance=0, eval_every=0, threads=1)
    cpu = [time.process_time()]
    result = fit(problem, settings, executor, observer=lambda record: cpu.append(time.process_time()))
    seconds = [r["seconds"] for r in result.history]
    links = int((problem.corpus.fields["f"].lengths() * (problem.corpus.fields["e"].lengths() + 1)).sum())
    return {"pairs": problem.n_examples, "links": links, "entries": problem.layout.size,
            "read_s": read, "setup_s": setup, "iteration_s": seconds, "iteration_cpu_s": np.diff(cpu).tolist(),
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_child(corpus: Path, iterations: int) -> dict:
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    out = subprocess.run([sys.executable, __file__, "--child", str(corpus), "--iterations", str(iterations)],
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, nargs="+", default=[25000, 50000, 100000])
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(Path(args.child), args.iterations)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm.txt"
        write_corpus(warm, 200)
        run_child(warm, 1)
        print(f"{'pairs':>8} {'links':>11} {'entries':>10} {'read s':>7} {'set-up s':>8} {'s/iter':>7} "
              f"{'cpu s/iter':>10} {'peak MiB':>9}")
        for pairs in args.pairs:
            corpus = Path(tmp) / f"bitext-{pairs}.txt"
            write_corpus(corpus, pairs)
            r = run_child(corpus, args.iterations)
            wall, cpu = float(np.median(r["iteration_s"])), float(np.median(r["iteration_cpu_s"]))
            print(f"{r['pairs']:>8} {r['links']:>11} {r['entries']:>10} {r['read_s']:>7.2f} {r['setup_s']:>8.2f} "
                  f"{wall:>7.2f} {cpu:>10.2f} {r['peak_mib']:>9.0f}", flush=True)
            corpus.unlink()


if __name__ == "__main__":
    main()
