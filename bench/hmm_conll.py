"""The bigram HMM (45 states, no dictionary) on CoNLL-2000 train+test (259k tokens).

    python bench/hmm_conll.py batch        # issue 2: many-to-one / one-to-one after 10, 50, 100 iterations,
                                           # 3 seeds; and near-uniform starts (1 + 0.01 U) at 50
    python bench/hmm_conll.py online       # issue 3: batch vs incremental vs stepwise, accuracy and
                                           # log-likelihood per token after passes / iterations, 3 seeds
    python bench/hmm_conll.py speed        # issue 3: seconds per batch iteration, stepwise pass (m = 1),
                                           # incremental pass in blocks of 64 (and its first, listing
                                           # pass) and of 1
    python bench/hmm_conll.py dictionary   # issue 3: tag dictionary (states = tags): batch, annealed,
                                           # smoothed-L0 prior on transitions; also the first 24k test tokens

Log-likelihood per token is measured exactly (a full E-step) at each reported point.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace

import numpy as np

from common import ROOT, require_data

SEEDS = (1, 2, 3)


def load(spec: str = "hmm.em", files=("train.txt.gz", "test.txt"), dictionary: str | None = None,
         first_tokens: int | None = None):
    from emc.runtime.problem import Model, bind

    data = require_data() / "conll2000"
    model = Model.from_file(ROOT / "specs" / spec)
    options = {"format": "conll", "gold_column": 2, "dictionary": dictionary}
    vocabs: dict = {}
    corpus = None
    for name in files:
        part = model.read(str(data / name), options, vocabs)
        corpus = part if corpus is None else corpus.concat(part, labeled=False)
    if first_tokens:
        lengths = np.cumsum(corpus.lengths())
        corpus = corpus.subset(np.arange(int(np.searchsorted(lengths, first_tokens)) + 1))
    return bind(model, corpus, vocabs, options)


def run(problem, settings, checkpoints):
    """Fit, and at each checkpoint (iteration or pass) record accuracy and exact LL per token."""
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.fit import Evaluator, fit
    from emc.runtime.state import Objective
    from emc.structures.semiring import SUM

    executor = LocalExecutor(problem)
    evaluate = Evaluator(problem, executor)
    objective = Objective(problem, settings)
    tokens = int(problem.corpus.lengths().sum())
    every = np.arange(problem.n_examples)
    rows = {}

    def after(state):
        if state.step in checkpoints:
            result = executor.estep(state.params, every, SUM, np.ones(len(every)))
            ll = objective(state.params, every, result.log_z, np.ones(len(every)))
            rows[state.step] = dict(evaluate(state.params), ll_per_token=ll / tokens)

    fit(problem, replace(settings, eval_every=0), executor, after_step=after)
    return rows


def table(title, results, checkpoints, metrics=("many_to_one", "one_to_one", "ll_per_token")):
    print(f"\n{title}")
    print("  " + " ".join(f"{'after ' + str(c):>22s}" for c in checkpoints))
    for metric in metrics:
        cells = []
        for c in checkpoints:
            values = [r[c][metric] for r in results if c in r]
            scale = 100 if metric != "ll_per_token" else 1
            cells.append(f"{scale * np.mean(values):9.2f} +- {scale * np.std(values):5.2f}  ")
        print(f"  {metric:14s}" + " ".join(f"{c:>22s}" for c in cells))
    sys.stdout.flush()


def batch_accuracy() -> None:
    from emc.runtime.settings import FitSettings

    problem = load()
    points = (10, 50, 100)
    results = [run(problem, FitSettings(iterations=100, tolerance=0, seed=s), points) for s in SEEDS]
    table("batch EM, initial rows ~ 1 + U(0,1) (default); mean +- sd over seeds 1-3", results, points)
    flat = [run(problem, FitSettings(iterations=50, tolerance=0, seed=s, init_noise=0.01), (10, 50)) for s in SEEDS]
    table("batch EM, near-uniform starts 1 + 0.01 U(0,1)", flat, (10, 50))


def online() -> None:
    from emc.runtime.settings import FitSettings

    problem = load()
    passes = (1, 2, 3, 5, 10)
    for label, s in [
        ("stepwise alpha 0.7, m = 1 (default)", FitSettings(algorithm="stepwise", passes=10, alpha=0.7, batch_size=1)),
        ("stepwise alpha 0.6, m = 10", FitSettings(algorithm="stepwise", passes=10, alpha=0.6, batch_size=10)),
        ("stepwise alpha 0.7, m = 100", FitSettings(algorithm="stepwise", passes=10, alpha=0.7, batch_size=100)),
        ("stepwise alpha 0.7, m = 1000", FitSettings(algorithm="stepwise", passes=10, alpha=0.7, batch_size=1000)),
        ("incremental, blocks of 64 (default)", FitSettings(algorithm="incremental", passes=10)),
        ("incremental, blocks of 1 (one example each)", FitSettings(algorithm="incremental", passes=10, block_size=1)),
        ("stepwise alpha 0.7, m = 1, from 1 + U(0,1) at one pseudo-count per entry (the generic start)",
         FitSettings(algorithm="stepwise", passes=10, alpha=0.7, batch_size=1, init_noise=1.0, start_mass="entry")),
    ]:
        results = [run(problem, replace(s, seed=seed, tolerance=0), passes) for seed in SEEDS]
        table(f"{label}: after passes", results, passes)
    iterations = (1, 2, 5, 10, 20, 50, 100)
    results = [run(problem, FitSettings(iterations=100, tolerance=0, seed=seed), iterations) for seed in SEEDS]
    table("batch EM: after iterations", results, iterations)


# Iterations / passes timed per variant; each is reported as the median of the 2nd to the last
# (the first incremental pass also lists what each block writes: reported apart). Each time
# varies by 5-10% on this machine, so 5 of them rather than 3.
RUNS = 6


def speed() -> None:
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.fit import fit
    from emc.runtime.settings import FitSettings

    problem = load()
    executor = LocalExecutor(problem)
    seconds = {}
    for label, s in [("batch iteration", FitSettings(iterations=RUNS)),
                     ("stepwise pass, m = 1", FitSettings(algorithm="stepwise", passes=RUNS)),
                     ("incremental pass", FitSettings(algorithm="incremental", passes=RUNS)),
                     ("incremental pass, m = 1", FitSettings(algorithm="incremental", passes=RUNS, block_size=1))]:
        fit(problem, replace(s, passes=1, iterations=1, eval_every=0), executor)  # compile
        result = fit(problem, replace(s, tolerance=0, eval_every=0), executor)
        times = [r["seconds"] for r in result.history]
        seconds[label] = float(np.median(times[1:]))
        if label == "incremental pass":
            # the first pass also lists which entries each block writes (emc/runtime/online.py)
            seconds["incremental, first pass"] = times[0]
    base = seconds["batch iteration"]
    print(f"\nspeed on {problem.n_examples} sentences, {int(problem.corpus.lengths().sum())} tokens, "
          f"{os.environ.get('NUMBA_NUM_THREADS', 'all')} thread(s) (median of iterations / passes 2-{RUNS}):")
    for label, value in seconds.items():
        print(f"  {label:24s} {value:6.3f} s   {value / base:4.2f}x a batch iteration")


def dictionary() -> None:
    import tempfile

    from emc.runtime.executor import LocalExecutor
    from emc.runtime.fit import fit
    from emc.runtime.settings import FitSettings
    from emc.priors import SmoothedL0
    from emc.structures.chain.data import dictionary_lines

    for label, files, first in [("CoNLL-2000 train+test", ("train.txt.gz", "test.txt"), None),
                                ("first 24k tokens of the test section", ("test.txt",), 24000)]:
        plain = load(files=files, first_tokens=first)
        with tempfile.NamedTemporaryFile("w", suffix=".dict", delete=False) as f:
            f.write("\n".join(dictionary_lines([plain.corpus], plain.model.checked)) + "\n")
        problem = load(files=files, dictionary=f.name, first_tokens=first)
        ambiguity = np.mean([len(a) for a in _allowed(problem)])
        print(f"\n{label}: {problem.n_examples} sentences, {int(problem.corpus.lengths().sum())} tokens, "
              f"{problem.args['states']} tags, {ambiguity:.2f} allowed tags per token")
        executor = LocalExecutor(problem)
        for name, settings in [
            ("batch EM, 100 iterations", FitSettings(iterations=100, tolerance=0)),
            ("annealed (beta_min 1e-4, x1.2)", FitSettings(algorithm="annealed", iterations=30)),
            ("MAP, smoothed-L0 prior on transitions (alpha 80, beta 0.05)",
             FitSettings(iterations=100, tolerance=0, regularizers={"trans": SmoothedL0(alpha=80.0, beta=0.05)})),
        ]:
            t0 = time.perf_counter()
            result = fit(problem, replace(settings, eval_every=0, seed=1), executor)
            decoded, _ = executor.decode(result.params, np.arange(problem.n_examples))
            bigrams = {(int(a), int(b)) for d in decoded for a, b in zip(d[:-1], d[1:])}
            trans = problem.layout.table("trans").matrix(result.params.weights(problem.layout))
            near_zero = int((trans < 1e-4).sum())
            print(f"  {name:60s} accuracy {100 * result.metrics['accuracy']:.2f}%  tag bigram types "
                  f"{len(bigrams)}  transition parameters < 1e-4: {near_zero} of {trans.size}  "
                  f"({time.perf_counter() - t0:.0f} s)")


def _allowed(problem):
    arrays = dict(zip(problem.model.code_layout.arrays, np.split(problem.ints, problem.array_bounds[1:-1])))
    start = arrays["allowed_start"]
    return [range(int(a), int(b)) for a, b in zip(start[:-1], start[1:])]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=("batch", "online", "speed", "dictionary"))
    {"batch": batch_accuracy, "online": online, "speed": speed, "dictionary": dictionary}[parser.parse_args().what]()
