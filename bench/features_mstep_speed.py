"""The featured HMM's M-step (specs/hmm_features.em on CoNLL-2000 train, 45 states) beside its
E-step, and beside the M-step as the issue first sketched it: scipy's L-BFGS-B over the weights,
with the objective and gradient by scipy.sparse products. Same counts (the E-step after 5 batch
iterations, seed 1), same start (the weights those iterations left), in one process.

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python bench/features_mstep_speed.py [--budgets 2 10]

For each L-BFGS budget (iterations per M-step; emc's default is 2): seconds (median of
--repeats) and the regularised expected log-likelihood reached. emc runs each row's problem with
its own line search; scipy runs the rows as one problem (the objective is their sum).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import emc.runtime.blocks.features as features
from hmm_conll import load


def median_seconds(function, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = function()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def scipy_mstep(phi, counts: np.ndarray, kappa: float, start: np.ndarray, budget: int) -> tuple[np.ndarray, int]:
    """L-BFGS-B (memory 5, as emc's) on -(sum C log P - kappa/2 |W|^2); returns W and the
    number of objective evaluations."""
    import scipy.optimize

    totals = counts.sum(axis=0)

    def negative(x: np.ndarray) -> tuple[float, np.ndarray]:
        weights = x.reshape(start.shape)
        scores = np.asarray(phi @ weights)
        top = scores.max(axis=0)
        log_z = top + np.log(np.exp(scores - top).sum(axis=0))
        value = (counts * scores).sum() - totals @ log_z - 0.5 * kappa * (weights * weights).sum()
        gradient = phi.T @ (counts - np.exp(scores - log_z) * totals) - kappa * weights
        return -value, -np.asarray(gradient).ravel()

    result = scipy.optimize.minimize(negative, start.ravel(), jac=True, method="L-BFGS-B",
                                     options={"maxiter": budget, "maxcor": features.MEMORY})
    return result.x.reshape(start.shape), int(result.nfev)


def main() -> None:
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.fit import fit
    from emc.runtime.settings import FitSettings
    from emc.structures.semiring import SUM

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[features.MAX_ITERATIONS, 10])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    problem = load("hmm_features.em", files=("train.txt.gz",))
    executor = LocalExecutor(problem)
    params = fit(problem, FitSettings(iterations=5, tolerance=0, seed=1, eval_every=0), executor).params
    examples = np.arange(problem.n_examples)
    estep, result = median_seconds(lambda: executor.estep(params, examples, SUM, np.ones(len(examples))), 3)
    t = problem.layout.table("emit")
    block, start = t.featured, params.features["emit"]
    counts = t.values(result.counts).copy()
    seen = np.ascontiguousarray(counts[block.active])
    print(f"{problem.n_examples} sentences; {block.n_features} features x {block.rows} states "
          f"({block.merged_columns.max() + 1} after merging single-outcome ones); E-step {estep:.3f} s")
    print(f"objective at the start {block.objective(start, counts)[0]:.1f}")
    table = np.empty(counts.shape)
    for budget in args.budgets:
        block.maximize(counts, start, budget, probabilities=table)  # compiles (or loads) it
        ours, weights = median_seconds(lambda: block.maximize(counts, start, budget, probabilities=table), args.repeats)
        theirs, (scipy_weights, evaluations) = median_seconds(
            lambda: scipy_mstep(block.phi_active, seen, block.kappa, start, budget), max(1, args.repeats // 3))
        print(f"L-BFGS budget {budget}: emc {ours:.3f} s ({ours / (ours + estep):.0%} of an iteration), objective "
              f"{block.objective(weights, counts)[0]:.1f}; scipy L-BFGS-B {theirs:.3f} s ({evaluations} evaluations), "
              f"objective {block.objective(scipy_weights, counts)[0]:.1f}; scipy / emc {theirs / ours:.1f}x", flush=True)


if __name__ == "__main__":
    main()
