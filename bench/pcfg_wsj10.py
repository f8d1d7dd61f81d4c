"""The PCFG by inside-outside on WSJ10 (issue 16, part 1): unlabeled bracket P/R/F1 of specs/pcfg.em
(labels=K) under batch EM from random starts, deterministic annealing (DA) and skewed DA (SDA),
and with a block P(t.preterminal | t.label) added (each label chooses to rewrite or emit, so the
grammar generates the tree's shape) under EM, beside the CCM (specs/ccm.em from its random-split
start) and the right-branching baseline; then the speed: seconds per batch EM iteration on
WSJ10, and the E-step's cost as sentences grow (n = 10, 20, 40) and as labels grow (K = 5, 10, 20).

WSJ10 is the shared NLTK sample of the Penn Treebank (../shared/data/ptb-sample) reduced to its
555 sentences of at most 10 tags after removing -NONE- elements and punctuation (--format ptb
--max-length 10), scored as for the CCM (emc/eval/brackets.py: micro-averaged, no credit for the
whole sentence or single symbols; the corpus is its own test set). The length-n sentences of the
cost table are the sample's sentences with at least n tags, cut to their first n.

    NUMBA_NUM_THREADS=1 .venv/bin/python bench/pcfg_wsj10.py [--seeds 1 2 3] [--labels 10] [--iterations 100]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, require_data  # noqa: E402

from emc.eval.brackets import bracket_scores, right_branching  # noqa: E402
from emc.io.ptb import read_tree  # noqa: E402
from emc.runtime.executor import LocalExecutor  # noqa: E402
from emc.runtime.fit import fit  # noqa: E402
from emc.runtime.params import random_init  # noqa: E402
from emc.runtime.problem import Model, bind  # noqa: E402
from emc.runtime.settings import FitSettings  # noqa: E402
from emc.structures.semiring import SUM  # noqa: E402

ALGORITHMS = {"EM": "batch", "DA": "annealed", "SDA": "skewed"}


# specs/pcfg.em plus a block letting each label choose between rewriting and emitting (the
# textbook PCFG, whose likelihood also generates the tree's shape)
KIND = "multinomial kind : P(t.preterminal | t.label)\n"


def load(spec: str, data: Path, overrides: dict | None, options: dict, extra: str = ""):
    path = ROOT / "specs" / spec
    model = Model.from_text(path.read_text(encoding="utf-8") + extra, str(path), overrides)
    vocabs: dict = {}
    return bind(model, model.read(str(data), options, vocabs), vocabs, options)


def scores_row(label: str, s: dict, extra: str = "- | - | -") -> str:
    p, r, f = (s.get(k, s.get(f"unlabeled_{k}")) for k in ("precision", "recall", "f1"))
    return f"| {label} | {100 * p:.1f} | {100 * r:.1f} | {100 * f:.1f} | {s['crossing_brackets']:.2f} | {extra} |"


def spread(values: list[float]) -> str:
    mean = 100 * float(np.mean(values))
    return f"{mean:.1f}" if np.ptp(values) == 0 else f"{mean:.1f} ± {100 * float(np.std(values)):.1f}"


def accuracy_table(data: Path, labels: int, seeds: list[int], iterations: int, algorithms: list[str]) -> None:
    wsj10 = {"format": "ptb", "max_length": 10}
    pcfg = load("pcfg.em", data, {"labels": labels}, wsj10)
    lengths = pcfg.corpus.lengths().tolist()
    gold = pcfg.corpus.gold["brackets"]
    print(f"{pcfg.n_examples} WSJ10 sentences; PCFG with {labels} labels; batch EM at most {iterations} iterations "
          f"(tolerance 1e-6), DA/SDA with the CLI's defaults; seeds {seeds}")
    print()
    print("| model | P | R | F1 | crossing | log-likelihood | iterations | seconds / iteration |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    print(scores_row("right-branching", bracket_scores([right_branching(n) for n in lengths], gold, lengths)), flush=True)
    ccm = load("ccm.em", data, None, wsj10)
    t0 = time.perf_counter()
    result = fit(ccm, FitSettings(init="random-split", eval_every=0))
    per_iteration = (time.perf_counter() - t0) / len(result.history)
    print(scores_row("CCM (ccm.em, EM from random-split)", result.metrics,
                     f"- | {len(result.history)} | {per_iteration:.3f}"), flush=True)
    one = load("pcfg.em", data, {"labels": 1}, wsj10)
    result = fit(one, FitSettings(init="random", eval_every=0))
    print(f"| PCFG K=1 (one label: all trees of a sentence tie; the parse is the tie-break) | "
          f"{100 * result.metrics['unlabeled_precision']:.1f} | {100 * result.metrics['unlabeled_recall']:.1f} | "
          f"{100 * result.metrics['unlabeled_f1']:.1f} | {result.metrics['crossing_brackets']:.2f} | "
          f"{result.objective:.1f} | {len(result.history)} | - |", flush=True)
    with_kind = load("pcfg.em", data, {"labels": labels}, wsj10, KIND)
    for name, problem, label in [(a, pcfg, f"PCFG K={labels} {a} from random") for a in algorithms] + \
            [("EM", with_kind, f"PCFG K={labels} + P(t.preterminal \\| t.label), EM from random")]:
        runs = []
        for seed in seeds:
            t0 = time.perf_counter()
            r = fit(problem, FitSettings(algorithm=ALGORITHMS[name], init="random", seed=seed, iterations=iterations,
                                      eval_every=0))
            runs.append({**r.metrics, "objective": r.objective, "iterations": len(r.history),
                         "per_iteration": (time.perf_counter() - t0) / len(r.history)})
        column = lambda key: [r[key] for r in runs]  # noqa: E731
        print(f"| {label} | {spread(column('unlabeled_precision'))} | "
              f"{spread(column('unlabeled_recall'))} | {spread(column('unlabeled_f1'))} | "
              f"{np.mean(column('crossing_brackets')):.2f} | {np.mean(column('objective')):.1f} | "
              f"{np.mean(column('iterations')):.0f} | {np.mean(column('per_iteration')):.3f} |", flush=True)
    print()
    print("Values are means over the seeds, ± the standard deviation when they disagree. "
          "Seconds per iteration include the evaluation-free E-step and M-step only. A run whose "
          "log-likelihood equals K=1's has collapsed to it: all labels identical, a fixed point of EM.")


def cut_sentences(data: Path, n: int, limit: int, directory: Path) -> Path:
    lines = []
    for line in data.read_text(encoding="utf-8").splitlines():
        tags = read_tree(line).tags
        if len(tags) >= n:
            lines.append(" ".join(tags[:n]))
        if len(lines) == limit:
            break
    path = directory / f"length{n}.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def estep_ms_per_sentence(problem, repeats: int) -> float:
    executor = LocalExecutor(problem, 1)
    params = random_init(problem.layout, problem.fixed_theta, np.random.default_rng(0), 1.0)
    executor.warm_up(params)
    examples = np.arange(problem.n_examples)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        executor.estep(params, examples, SUM, np.ones(len(examples)))
        times.append(time.perf_counter() - t0)
    return 1000 * float(np.median(times)) / problem.n_examples


def cost_table(data: Path, sentences: int, repeats: int) -> None:
    print()
    print(f"E-step cost (median of {repeats}, single thread): ms per sentence, first {sentences} sentences "
          f"with at least n tags cut to n; CCM beside at the same n")
    print()
    print("| n | K | PCFG ms / sentence | ns per unit of n^3 K^2 / 6 + n^2 K^3 / 2 | CCM ms / sentence |")
    print("| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for n, labels in ((10, 5), (10, 10), (10, 20), (20, 10), (40, 10)):
            path = cut_sentences(data, n, sentences, Path(tmp))
            pcfg = load("pcfg.em", path, {"labels": labels}, {})
            ms = estep_ms_per_sentence(pcfg, repeats)
            ccm_ms = estep_ms_per_sentence(load("ccm.em", path, None, {}), repeats)
            print(f"| {n} | {labels} | {ms:.3f} | {1e6 * ms / (n ** 3 * labels ** 2 / 6 + n ** 2 * labels ** 3 / 2):.2f} | {ccm_ms:.3f} |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=require_data() / "ptb-sample" / "wsj_sample_trees.txt")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--labels", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=list(ALGORITHMS))
    parser.add_argument("--cost-sentences", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-accuracy", action="store_true", help="only the cost table")
    args = parser.parse_args()
    print(f"threads: NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'unset (all cores)')}")
    print()
    if not args.no_accuracy:
        accuracy_table(args.data, args.labels, args.seeds, args.iterations, args.algorithms)
    cost_table(args.data, args.cost_sentences, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
