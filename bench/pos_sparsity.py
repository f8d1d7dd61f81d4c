"""POS induction with posterior sparsity (Graca, Ganchev, Taskar & Pereira 2009) on CoNLL-2000:
specs/hmm_sparse.em (the bigram HMM whose posteriors are projected with an L1/Linf penalty: each
word type should use few states) beside plain EM (specs/hmm.em) and the featured HMM
(specs/hmm_features.em); 45 states, no dictionary, batch EM from the default random start,
many-to-one and one-to-one against the gold POS tags after the last iteration, mean +- sd over seeds.

    python bench/pos_sparsity.py                                   # 50 iterations, seeds 1 2 3, all models
    python bench/pos_sparsity.py --iterations 20 --seeds 1 --models hmm hmm_sparse
    python bench/pos_sparsity.py --penalty 0.5 --constraint-esteps 5 --files train.txt.gz test.txt

The sparse model also reports its L1/Linf norm per word type (the summed largest posterior of each
state: the soft number of states a type uses) at the end, and the fit's seconds.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from hmm_conll import load

MODELS = {"hmm": "hmm.em", "hmm_sparse": "hmm_sparse.em", "hmm_features": "hmm_features.em"}


def fit_one(problem, iterations: int, seed: int, esteps: int) -> dict:
    """One batch fit; its accuracies, seconds and (with sparsity) the last projection's record."""
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.fit import Evaluator, fit
    from emc.runtime.settings import FitSettings

    executor = LocalExecutor(problem)
    settings = FitSettings(iterations=iterations, tolerance=0, seed=seed, eval_every=0, constraint_esteps=esteps)
    t0 = time.perf_counter()
    result = fit(problem, settings, executor)
    seconds = time.perf_counter() - t0
    row = dict(Evaluator(problem, executor)(result.params), seconds=seconds)
    last = result.history[-1].get("sparsity") if result.history else None
    if last:
        row["states_per_word"] = last["after"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--penalty", type=float, default=None, help="sigma of hmm_sparse (default: the spec's)")
    parser.add_argument("--constraint-esteps", type=int, default=20, help="E-steps a projection (emc's default 20)")
    parser.add_argument("--files", nargs="+", default=["train.txt.gz"])
    args = parser.parse_args()
    print(f"CoNLL-2000 {' + '.join(args.files)}, 45 states, batch EM, {args.iterations} iterations, "
          f"seeds {' '.join(map(str, args.seeds))}, at most {args.constraint_esteps} E-steps a projection")
    for name in args.models:
        problem = load(MODELS[name], files=tuple(args.files))
        label = name
        if name == "hmm_sparse" and args.penalty is not None:
            problem = _with_penalty(problem, args.penalty)
        if name == "hmm_sparse":
            label += f" (sigma {problem.model.checked.sparsity[0].penalty:g})"
        rows = []
        for seed in args.seeds:  # each seed's line as it ends (a long run on a shared machine)
            rows.append(fit_one(problem, args.iterations, seed, args.constraint_esteps))
            print(f"  seed {seed}: {_line(label, rows[-1:])}", flush=True)
        print(_line(label, rows), flush=True)


def _with_penalty(problem, penalty: float):
    """The problem with the sparsity constraint's penalty replaced (the compiled code is the same)."""
    from dataclasses import replace

    checked = problem.model.checked
    checked.sparsity = [replace(checked.sparsity[0], penalty=penalty)]
    return problem


def _line(label: str, rows: list[dict]) -> str:
    def cell(key: str, scale: float = 100.0, digits: int = 1) -> str:
        values = scale * np.array([r[key] for r in rows])
        return f"{values.mean():.{digits}f} ± {values.std():.{digits}f}"

    text = f"{label:26s} many-to-one {cell('many_to_one')}  one-to-one {cell('one_to_one')}"
    if "states_per_word" in rows[0]:
        text += f"  states per word {cell('states_per_word', 1.0, 3)}"
    per_seed = " / ".join(f"{100 * r['many_to_one']:.1f}" for r in rows)
    return f"{text}  (many-to-one per seed {per_seed}; {np.mean([r['seconds'] for r in rows]):.0f} s a fit)"


if __name__ == "__main__":
    main()
