"""CCM on WSJ10 (issue 6): unlabeled bracket precision, recall, F1 and crossing brackets of
models 1 and 2 (specs/ccm.em, specs/ccm2.em) under batch EM, deterministic annealing (DA) and
skewed DA (SDA), from random-split, uniform and random initialisation, over three seeds; with the
right- and left-branching baselines. Prints a markdown table.

WSJ10 is the shared NLTK sample of the Penn Treebank (../shared/data/ptb-sample) reduced to the
555 sentences of at most 10 tags once -NONE- elements and punctuation are removed (--format ptb
--max-length 10). Scores are micro-averaged with no credit for the whole sentence or single
words (emc/eval/brackets.py); the corpus is also the test set, as in Klein & Manning (2002).

Each run uses the CLI's default settings (at most 100 iterations, relative tolerance 1e-6; DA and
SDA with their defaults: beta from 1e-4, times 1.2 per stage, stage tolerance 1e-4). "F1 +EM" is
the F1 after batch EM continues from that result until the relative change is below 1e-7 (at
most 300 more iterations): a loose tolerance stops CCM's slow EM early.

    NUMBA_NUM_THREADS=1 .venv/bin/python bench/ccm_wsj10.py [--seeds 1 2 3] [--models ccm ccm2]

Ablations of the specs' choices: --empty no (no empty spans), --smooth A (add A instead of the
specs' add 1 to both blocks; 0: plain maximum likelihood).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from emc.eval.brackets import bracket_scores, right_branching
from emc.priors import Prior
from emc.runtime.fit import fit
from emc.runtime.problem import Model, bind
from emc.runtime.settings import FitSettings

ROOT = Path(__file__).resolve().parent.parent

ALGORITHMS = {"EM": "batch", "DA": "annealed", "SDA": "skewed"}
INITS = ("random-split", "uniform", "random")


def wsj10(model: Model, data: Path):
    options = {"format": "ptb", "max_length": 10}
    vocabs: dict = {}
    return bind(model, model.read(str(data), options, vocabs), vocabs, options)


def baselines(problem) -> list[tuple[str, dict]]:
    lengths = problem.corpus.lengths().tolist()
    gold = problem.corpus.gold["brackets"]
    left = [{(0, j) for j in range(2, n + 1)} for n in lengths]
    return [("right-branching", bracket_scores([right_branching(n) for n in lengths], gold, lengths)),
            ("left-branching", bracket_scores(left, gold, lengths))]


def run(problem, algorithm: str, init: str, seed: int, smooth: float | None) -> dict:
    regularizers = {} if smooth is None else {t.name: Prior(smooth) for t in problem.layout.learned()}
    t0 = time.perf_counter()
    first = fit(problem, FitSettings(algorithm=algorithm, init=init, seed=seed, eval_every=0, regularizers=regularizers))
    more = fit(problem, FitSettings(iterations=300, tolerance=1e-7, eval_every=0, regularizers=regularizers),
               init=first.params)
    return {**first.metrics, "f1_more": more.metrics["f1"], "iterations": len(first.history),
            "objective": first.objective, "seconds": time.perf_counter() - t0}


def spread(values: list[float]) -> str:
    mean = 100 * float(np.mean(values))
    return f"{mean:.1f}" if np.ptp(values) == 0 else f"{mean:.1f} ± {100 * float(np.std(values)):.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "ptb-sample" / "wsj_sample_trees.txt")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--models", nargs="+", default=["ccm", "ccm2"])
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=list(ALGORITHMS))
    parser.add_argument("--inits", nargs="+", default=list(INITS), choices=list(INITS))
    parser.add_argument("--empty", choices=("yes", "no"), help="override the specs' empty=yes")
    parser.add_argument("--smooth", type=float, help="override the specs' add-1 smoothing of every block")
    args = parser.parse_args()
    print(f"threads: NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'unset (all cores)')}; seeds {args.seeds}"
          + (f"; empty={args.empty}" if args.empty else "") + (f"; smooth add({args.smooth:g})" if args.smooth is not None else ""))
    print()
    print("| model | algorithm | init | P | R | F1 | crossing | F1 +EM | iterations | seconds/run |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    shown_baselines = False
    for name in args.models:
        model = Model.from_file(ROOT / "specs" / f"{name}.em", {"empty": args.empty} if args.empty else None)
        problem = wsj10(model, args.data)
        if not shown_baselines:
            for label, s in baselines(problem):
                print(f"| {label} | - | - | {100 * s['precision']:.1f} | {100 * s['recall']:.1f} | "
                      f"{100 * s['f1']:.1f} | {s['crossing_brackets']:.2f} | - | - | - |")
            shown_baselines = True
        for label, algorithm in ALGORITHMS.items():
            if label not in args.algorithms:
                continue
            for init in args.inits:
                runs = [run(problem, algorithm, init, seed, args.smooth) for seed in args.seeds]
                column = lambda key: [r[key] for r in runs]  # noqa: E731
                print(f"| {name} | {label} | {init} | {spread(column('precision'))} | {spread(column('recall'))} | "
                      f"{spread(column('f1'))} | {np.mean(column('crossing_brackets')):.2f} | "
                      f"{spread(column('f1_more'))} | {np.mean(column('iterations')):.0f} | "
                      f"{np.mean(column('seconds')):.1f} |", flush=True)
    print()
    print(f"{problem.n_examples} sentences; values are means over the seeds, ± the standard deviation when "
          f"the seeds disagree (random-split and uniform starts do not depend on the seed).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
