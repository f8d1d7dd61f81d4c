"""Latent classes over verb-object pairs (issue 16, part 3) on CoNLL-2000: the pairs are extracted
from the chunked WSJ text, specs/verb_object.em is fitted to the training pairs, and the held-out
log-likelihood of the test pairs is compared with a unigram baseline P(v) P(n).

Extraction (emc/io/verb_object.py): in each sentence, a VP chunk's last verb (a token tagged VB*)
and the last noun (NN*) of the NP chunk that immediately follows it, both lowercased: "[VP has
acquired] [NP a stake]" gives `acquired ||| stake`.

Held-out log-likelihood per pair, in nats, over the test pairs whose verb and noun both occur in
the training pairs (the others are counted and left out: neither model knows them):
    classes: log sum_c P(c) P(v | c) P(n | c), with the fitted parameters (add-0.1 smoothing: --smooth);
    unigram: log P(v) + log P(n), the training relative frequencies with the same add-0.1.
The difference is what the classes learn about which verbs take which objects.

    NUMBA_NUM_THREADS=1 .venv/bin/python bench/verb_object_conll.py [--classes 30] [--seeds 1 2 3]
    .venv/bin/python bench/verb_object_conll.py --write-pairs train.pairs   # the training pairs for `emc fit`
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, require_data  # noqa: E402

from emc.io.readers import Lines  # noqa: E402
from emc.io.verb_object import verb_object_pairs  # noqa: E402
from emc.priors import Prior  # noqa: E402
from emc.runtime.fit import fit  # noqa: E402
from emc.runtime.problem import Model, bind  # noqa: E402
from emc.runtime.settings import FitSettings  # noqa: E402
from emc.structures.tuples.data import summary  # noqa: E402

SMOOTH = 0.1  # the spec's add(0.1), for the baseline too unless --smooth says otherwise


def as_lines(items: list[tuple[str, str]]) -> list[str]:
    return [f"{v} ||| {n}" for v, n in items]


def unigram(train: list[tuple[str, str]], test: list[tuple[str, str]], smooth: float) -> float:
    """Mean log P(v) + log P(n) over the test pairs, add-`smooth` over the training vocabularies (plus `<unk>`)."""
    total = 0.0
    for side in (0, 1):
        words, counts = np.unique([p[side] for p in train], return_counts=True)
        index = {w: i for i, w in enumerate(words)}
        probs = (counts + smooth) / (counts.sum() + smooth * (len(words) + 1))
        total += float(np.mean([np.log(probs[index[p[side]]]) for p in test]))
    return total


def class_loglik(problem, weights: np.ndarray, test: list[tuple[str, str]]) -> float:
    """Mean log sum_c P(c) P(v | c) P(n | c) over the test pairs, straight from the fitted tables."""
    layout, vocabs = problem.layout, problem.vocabs
    prior = layout.table("prior").matrix(weights)[:, 0]
    verb, noun = layout.table("verb").matrix(weights), layout.table("noun").matrix(weights)
    v = np.array([vocabs["vocab:v"].index[p[0]] for p in test])
    n = np.array([vocabs["vocab:n"].index[p[1]] for p in test])
    return float(np.mean(np.log((verb[v] * noun[n] * prior).sum(axis=1))))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--classes", type=int, nargs="+", default=[30])
    parser.add_argument("--smooth", type=float, default=SMOOTH, help="add-s smoothing of the verb and noun blocks "
                                                                     "(and of the baseline); the spec's is 0.1")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--iterations", type=int, nargs="+", default=[10, 100],
                        help="EM iterations (each value a run: EM overfits the pairs, so fewer can generalise better)")
    parser.add_argument("--write-pairs", type=Path, metavar="FILE", help="write the training pairs and stop")
    args = parser.parse_args()
    conll = require_data() / "conll2000"
    train, test = verb_object_pairs(conll / "train.txt.gz"), verb_object_pairs(conll / "test.txt")
    if args.write_pairs:
        args.write_pairs.write_text("\n".join(as_lines(train)) + "\n", encoding="utf-8")
        print(f"wrote {len(train)} pairs to {args.write_pairs}")
        return 0
    seen_v, seen_n = {p[0] for p in train}, {p[1] for p in train}
    known = [p for p in test if p[0] in seen_v and p[1] in seen_n]
    print(f"CoNLL-2000 verb-object pairs: {len(train)} training ({len(seen_v)} verbs, {len(seen_n)} nouns), "
          f"{len(test)} test, {len(known)} of them with a known verb and noun")
    print()
    base = unigram(train, known, args.smooth)
    regularizers = {"verb": Prior(args.smooth), "noun": Prior(args.smooth)}
    print(f"add-{args.smooth:g} smoothing of the verb and noun blocks and of the baseline; EM from random starts")
    print()
    print("| model | held-out log-likelihood / pair (nats) | gain over unigram | training objective | iterations | s / iteration |")
    print("| --- | --- | --- | --- | --- | --- |")
    print(f"| unigram P(v) P(n) | {base:.3f} | - | - | - | - |")
    best = None
    for classes in args.classes:
        model = Model.from_file(ROOT / "specs" / "verb_object.em", {"classes": classes})
        vocabs: dict = {}
        problem = bind(model, model.read(Lines(as_lines(train), "train-pairs"), {}, vocabs), vocabs, {})
        for iterations in args.iterations:
            for seed in args.seeds:
                t0 = time.perf_counter()
                result = fit(problem, FitSettings(init="random", seed=seed, iterations=iterations, eval_every=0,
                                                  regularizers=regularizers))
                seconds = (time.perf_counter() - t0) / len(result.history)
                weights = result.params.weights(problem.layout)
                score = class_loglik(problem, weights, known)
                print(f"| {classes} classes, {iterations} iterations, seed {seed} | {score:.3f} | {score - base:+.3f} | "
                      f"{result.objective:.1f} | {len(result.history)} | {seconds:.3f} |", flush=True)
                if classes == args.classes[-1] and (best is None or result.objective > best[0]):
                    best = (result.objective, weights, model, problem)
    print()
    print(f"The first classes of the {args.classes[-1]}-class run with the best training objective "
          f"(as `emc info RUN` prints them):")
    print()
    _, weights, model, problem = best
    for line in summary(model.checked, problem.layout, problem.vocabs, problem.args, weights, top=6)[:30]:
        print("    " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
