"""POS induction with a featured HMM (Berg-Kirkpatrick et al. 2010) beside the plain HMM, on
CoNLL-2000 (45 states, no dictionary): many-to-one and one-to-one after 10, 30 and 50 batch
iterations, and the seconds per iteration spent in the E-step and in the M-step.

    python bench/features_pos.py                      # train section, seed 1
    python bench/features_pos.py --seeds 1 2 3 --files train.txt.gz test.txt
    python bench/features_pos.py --mstep-iterations 5 10 25   # the featured HMM per L-BFGS budget
    python bench/features_pos.py --vectors 50   # also: the featured HMM plus 50-dimensional word
        # vectors from the corpus itself (x.lower.vectors("...")), as a user brings embeddings
    python bench/features_pos.py --stepwise 3 10 50 --first-tokens 47600
        # stepwise EM (m = 1, 3 passes) with 3, 10 or 50 featured M-steps a pass, beside plain stepwise

specs/hmm.em against specs/hmm_features.em (emissions log-linear in the word, its lowercase form,
suffixes of 1-3 letters, digit / hyphen / capital indicators, each conjoined with the state; l2(1)).
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

import numpy as np

import emc.runtime.blocks.features as features
from hmm_conll import load


def run(problem, settings, checkpoints):
    """Fit; at each checkpoint record the accuracies; time every E-step and M-step (median)."""
    import emc.runtime.variants.base as base
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.fit import Evaluator, fit

    executor = LocalExecutor(problem)
    evaluate = Evaluator(problem, executor)
    rows: dict[int, dict] = {}
    seconds: dict[str, list[float]] = {"estep": [], "mstep": []}
    maximize, estep = base.maximize, executor.estep

    def timer(function, key):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            out = function(*args, **kwargs)
            seconds[key].append(time.perf_counter() - t0)
            return out
        return timed

    def after(state):
        if state.step in checkpoints:
            rows[state.step] = evaluate(state.params)

    base.maximize = timer(maximize, "mstep")
    executor.estep = timer(estep, "estep")
    try:
        fit(problem, replace(settings, eval_every=0), executor, after_step=after)
    finally:
        base.maximize = maximize
    # the E-steps of the iterations (the final objective's E-step is left out)
    return rows, float(np.median(seconds["estep"][:-1])), float(np.median(seconds["mstep"]))


def compare_stepwise(args) -> None:
    """Stepwise EM (m = 1, alpha 0.7, 3 passes) on the plain and the featured HMM, the latter with
    each number of gradient M-steps a pass: many-to-one, one-to-one, seconds a pass."""
    import emc.runtime.variants.online_state as online_state
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.fit import Evaluator, fit
    from emc.runtime.settings import FitSettings

    passes = 3
    for spec, msteps in [("hmm.em", None)] + [("hmm_features.em", m) for m in args.stepwise]:
        problem = load(spec, files=tuple(args.files), first_tokens=args.first_tokens)
        if msteps is not None:
            online_state.FEATURED_MSTEPS_PER_PASS = msteps
        for seed in args.seeds:
            t0 = time.perf_counter()
            result = fit(problem, FitSettings(algorithm="stepwise", passes=passes, batch_size=1, alpha=0.7, seed=seed,
                                              eval_every=0))
            seconds = (time.perf_counter() - t0) / passes
            scores = Evaluator(problem, LocalExecutor(problem))(result.params)
            name = spec if msteps is None else f"{spec} ({msteps} M-steps a pass)"
            print(f"{name:36s} seed {seed}: {problem.n_examples} sentences  many-to-one {100 * scores['many_to_one']:.2f}"
                  f"  one-to-one {100 * scores['one_to_one']:.2f}  {seconds:.2f} s a pass", flush=True)


def label(spec: str, budget: int | None) -> str:
    name = "hmm_features + vectors" if spec.endswith("vectors.em") else spec
    return name if budget is None else f"{name} (L-BFGS {budget})"


def vectors_spec(files: list[str], dimension: int) -> str:
    """specs/hmm_features.em plus x.lower.vectors(FILE), FILE written here from the corpus itself
    (no download): each lowercased word's counts of the 300 most frequent words just left and just
    right of it, log(1 + count), rows scaled to unit length, reduced to `dimension` by a truncated
    SVD (Schuetze 1995's distributional features for POS induction). Returns the spec's path."""
    import gzip
    import tempfile
    from collections import Counter
    from pathlib import Path

    from common import ROOT, require_data

    sentences, sentence = [], []
    for name in files:
        path = require_data() / "conll2000" / name
        with (gzip.open(path, "rt", encoding="utf-8") if name.endswith(".gz") else open(path, encoding="utf-8")) as f:
            for line in f:
                if line.strip():
                    sentence.append(line.split()[0].lower())
                elif sentence:
                    sentences.append(["<s>"] + sentence + ["</s>"])
                    sentence = []
    frequency = Counter(w for s in sentences for w in s)
    words = sorted(frequency)
    row = {w: i for i, w in enumerate(words)}
    context = {w: i for i, (w, _) in enumerate(frequency.most_common(300))}
    counts = np.zeros((len(words), 2 * len(context)))
    for s in sentences:
        for left, right in zip(s, s[1:]):
            if left in context:
                counts[row[right], context[left]] += 1
            if right in context:
                counts[row[left], len(context) + context[right]] += 1
    counts = np.log1p(counts)
    counts /= np.maximum(np.linalg.norm(counts, axis=1, keepdims=True), 1e-12)
    u, singular, _ = np.linalg.svd(counts, full_matrices=False)
    vectors = u[:, :dimension] * singular[:dimension]
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)  # unit length, as an indicator
    folder = Path(tempfile.mkdtemp(prefix="emc-vectors-"))
    with open(folder / "vectors.txt", "w", encoding="utf-8") as f:
        for w, v in zip(words, vectors):
            f.write(w + " " + " ".join(f"{x:.5f}" for x in v) + "\n")
    text = (ROOT / "specs" / "hmm_features.em").read_text(encoding="utf-8")
    text = text.replace("x.capitalized)", f'x.capitalized, x.lower.vectors("{folder / "vectors.txt"}"))')
    (folder / "hmm_features_vectors.em").write_text(text, encoding="utf-8")
    return str(folder / "hmm_features_vectors.em")


def main() -> None:
    from emc.runtime.settings import FitSettings

    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--files", nargs="+", default=["train.txt.gz"])
    parser.add_argument("--iterations", type=int, nargs="+", default=[10, 30, 50])
    parser.add_argument("--mstep-iterations", type=int, nargs="+", default=[features.MAX_ITERATIONS],
                        help="L-BFGS iterations per M-step of the featured block (one row each)")
    parser.add_argument("--stepwise", type=int, nargs="+", metavar="MSTEPS",
                        help="instead: stepwise EM with this many featured M-steps a pass")
    parser.add_argument("--first-tokens", type=int, help="only the sentences holding the first N tokens")
    parser.add_argument("--vectors", type=int, metavar="DIM",
                        help="also fit the featured HMM with DIM-dimensional distributional word vectors")
    args = parser.parse_args()
    if args.stepwise:
        return compare_stepwise(args)
    points = tuple(args.iterations)
    results = {}
    models = [("hmm.em", None)] + [("hmm_features.em", m) for m in args.mstep_iterations]
    if args.vectors:
        models.append((vectors_spec(args.files, args.vectors), features.MAX_ITERATIONS))
    for spec, budget in models:
        problem = load(spec, files=tuple(args.files))
        tokens = int(problem.corpus.lengths().sum())
        print(f"{label(spec, budget)}: {problem.n_examples} sentences, {tokens} tokens", flush=True)
        for seed in args.seeds:
            settings = FitSettings(iterations=max(points), tolerance=0, seed=seed, mstep_iterations=budget)
            rows, estep, mstep = run(problem, settings, points)
            results[label(spec, budget), seed] = rows, estep, mstep
            cells = "  ".join(f"@{c}: m-1 {100 * rows[c]['many_to_one']:.2f} 1-1 {100 * rows[c]['one_to_one']:.2f}"
                              for c in points)
            print(f"  seed {seed}: {cells}  E-step {estep:.3f} s/it, M-step {mstep:.3f} s/it ({mstep / estep:.2f}x the E-step)",
                  flush=True)
    print(f"\nmean over seeds {args.seeds} ({' + '.join(args.files)}):")
    print(f"  {'model':22s} {'metric':12s} " + " ".join(f"{'after ' + str(c):>10s}" for c in points)
          + "   E-step s/it   M-step s/it")
    for name in (label(spec, budget) for spec, budget in models):
        runs = [results[name, s] for s in args.seeds]
        for metric in ("many_to_one", "one_to_one"):
            cells = " ".join(f"{100 * np.mean([r[0][c][metric] for r in runs]):10.2f}" for c in points)
            timing = (f"   {np.mean([r[1] for r in runs]):11.3f}   {np.mean([r[2] for r in runs]):11.3f}"
                      if metric == "many_to_one" else "")
            print(f"  {name:22s} {metric:12s} {cells}{timing}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
