"""The DMV on WSJ10 (issue 16): directed and undirected attachment accuracy of specs/dmv.em under
batch EM, deterministic annealing (DA) and the smoothed-L0 sparse prior on the attach block, from
the harmonic start (the default) and from random starts over three seeds; beside the left- and
right-attachment baselines on the same sentences; seconds per EM iteration; and the E-step's cost as
sentences grow (n = 10, 20, 40) beside the CCM's. Prints markdown tables.

WSJ10 is the shared NLTK sample of the Penn Treebank (../shared/data/ptb-sample) reduced to the
555 sentences of at most 10 tags once -NONE- elements and punctuation are removed (--format ptb
--max-length 10); gold dependencies come from Collins' head rules (emc/io/heads.py). The corpus is
also the test set, as in Klein & Manning (2004); accuracy is micro-averaged over words, of the
Viterbi trees of the final model.

Each run uses the CLI's defaults (at most 100 iterations, relative tolerance 1e-6; DA: beta from
1e-4, times 1.2 per stage) unless --iterations says otherwise.

    NUMBA_NUM_THREADS=1 .venv/bin/python bench/dmv_wsj10.py [--seeds 1 2 3]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from emc.eval.dependencies import attachment_scores, left_attach, right_attach
from emc.runtime.fit import fit
from emc.runtime.problem import Model, bind
from emc.runtime.settings import FitSettings
from emc.priors import SmoothedL0

ROOT = Path(__file__).resolve().parent.parent
# (label, algorithm, the regularizers of the M-step)
SETTINGS = [("EM", "batch", {}), ("DA", "annealed", {}),
            ("EM, sparse attach", "batch", {"attach": SmoothedL0(alpha=1.0, beta=0.1)})]


def wsj10(data: Path):
    model = Model.from_file(ROOT / "specs" / "dmv.em")
    options = {"format": "ptb", "max_length": 10}
    vocabs: dict = {}
    return bind(model, model.read(str(data), options, vocabs), vocabs, options)


def spread(values: list[float]) -> str:
    mean = 100 * float(np.mean(values))
    return f"{mean:.1f}" if np.ptp(values) == 0 else f"{mean:.1f} ± {100 * float(np.std(values)):.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "ptb-sample" / "wsj_sample_trees.txt")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--iterations", type=int, default=100)
    args = parser.parse_args()
    problem = wsj10(args.data)
    gold = problem.corpus.gold["heads"]
    lengths = problem.corpus.lengths().tolist()
    print(f"threads: NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'unset (all cores)')}; seeds {args.seeds}; "
          f"{problem.n_examples} sentences, {sum(lengths)} words")
    print()
    print("| model | init | directed | undirected | iterations | seconds/iteration |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, baseline in (("left-attach", left_attach), ("right-attach", right_attach)):
        s = attachment_scores([baseline(n) for n in lengths], gold)
        print(f"| {label} | - | {100 * s['directed']:.1f} | {100 * s['undirected']:.1f} | - | - |")
    for label, algorithm, regularizers in SETTINGS:
        for init in ("harmonic", "random"):
            runs = []
            for seed in (args.seeds if init == "random" else args.seeds[:1]):
                settings = FitSettings(algorithm=algorithm, init=init, seed=seed, iterations=args.iterations,
                                       eval_every=0, regularizers=regularizers)
                t0 = time.perf_counter()
                result = fit(problem, settings)
                seconds = time.perf_counter() - t0
                runs.append({**result.metrics, "iterations": len(result.history),
                             "per_iteration": seconds / max(len(result.history), 1)})
            column = lambda key: [r[key] for r in runs]  # noqa: E731
            print(f"| DMV, {label} | {init} | {spread(column('directed'))} | {spread(column('undirected'))} | "
                  f"{np.mean(column('iterations')):.0f} | {np.mean(column('per_iteration')):.3f} |", flush=True)
    print()
    print("Values are means over the seeds, ± the standard deviation when they disagree (the harmonic start "
          "does not depend on the seed: one run). Seconds per iteration include the evaluation-free E- and M-step "
          "and, for the first iteration, the start.")
    cost_table(args.data)
    return 0


def cost_table(data: Path, sentences: int = 50, repeats: int = 5) -> None:
    """The E-step's cost as sentences grow, beside the CCM's at the same n (Eisner's O(n^3))."""
    from pcfg_wsj10 import cut_sentences, estep_ms_per_sentence, load

    print()
    print(f"E-step cost (median of {repeats}, single thread): ms per sentence, first {sentences} sentences "
          "with at least n tags cut to n")
    print()
    print("| n | DMV ms / sentence | ns per unit of n^3 | CCM ms / sentence |")
    print("| --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (10, 20, 40):
            path = cut_sentences(data, n, sentences, Path(tmp))
            ms = estep_ms_per_sentence(load("dmv.em", path, None, {}), repeats)
            ccm_ms = estep_ms_per_sentence(load("ccm.em", path, None, {}), repeats)
            print(f"| {n} | {ms:.3f} | {1e6 * ms / n ** 3:.1f} | {ccm_ms:.3f} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
