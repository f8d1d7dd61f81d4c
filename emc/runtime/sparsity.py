"""Posterior sparsity (Graca, Ganchev, Taskar & Pereira 2009, "Posterior vs. parameter sparsity in
latent variable models"): with `constraint NAME : E[max z per x] penalty sigma` each E-step's
posterior p is replaced by

    q = argmin_q KL(q || p) + sigma * sum over word types w and states t of max_{i: x_i = w} q(z_i = t)

(an L1/Linf penalty: each word type should use few states). Its dual has one multiplier
lambda[i, t] per token i and state t, with lambda >= 0 and sum over the tokens of w of
lambda[i, t] <= sigma for each (w, t); q_lambda ~ p exp(-sum lambda[i, t] 1[z_i = t]), and the duals
minimise G(lambda) = sum_x w_x log Z_x(lambda) (the log partition functions of the model with token
i's state-t score times exp(-lambda[i, t]), which are normalised by p(x), so G(0) = log p(x)).
G is convex with gradient -w_x q_lambda(z_i = t); at its minimum G = log p(x) - KL(q || p) - sigma *
sum max q, the objective PR-EM never lowers, and the fit reports G at the duals reached.

Each evaluation of G is one E-step of the compiled glue with the duals in `derived` after prepare's
numbers (emc/structures/chain/sparsity.py, which also writes the posteriors back); between them this
module takes projected-gradient steps (Barzilai-Borwein lengths, Armijo's test, the projection onto
the capped simplexes in emc/runtime/sparsity_duals.py), warm-started from the previous iteration's
duals, at most `--constraint-esteps` E-steps an iteration. A step is taken only when G falls, so the
dual objective G(0) - G(lambda) only grows within a projection. With sigma = 0 every lambda is 0,
each score is multiplied by exactly 1.0, and the fit is plain EM's bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numba
import numpy as np

from emc.runtime import sparsity_duals as duals
from emc.runtime.params import ParamState
from emc.runtime.duals import restored_duals
from emc.runtime.settings import PROJECTING
from emc.spec.errors import EmcError

if TYPE_CHECKING:
    from emc.runtime.executor import EStepResult

ARMIJO = 1e-4  # the share of the linear decrease a step must achieve
# fewer token rows than this run the dual kernels on one thread: waking numba's workers cost 40-80
# ms a call on 15 x 45 arrays (hmm_sparse's tiny data, 51 calls a fit, a machine at load 3), one
# thread 11 us; the kernels' results do not depend on the threads
PARALLEL_ROWS = 10_000
SHRINK = 0.25  # a refused step is this much shorter at the next try
STATE_KEY = "sparsity_duals"  # the duals in a fit's state.extra (checkpoints hold them)


@dataclass
class TokenGroups:
    """Rows of the dual problem (emc/runtime/sparsity_duals.py): row j is corpus token order[j], and
    word type w's tokens are rows starts[w]:starts[w + 1]; `spread` orders the types for the threads;
    `weight` is each row's example weight."""

    order: np.ndarray
    starts: np.ndarray
    spread: np.ndarray
    weight: np.ndarray

    @property
    def types(self) -> int:
        return len(self.starts) - 1


class PosteriorSparsity:
    """The duals of a spec's sparsity constraint, the `derived` buffer that carries them to the
    generated E-step (the executor's hook: `derived` and `collect`), and the projection."""

    def __init__(self, problem, weights: np.ndarray, max_esteps: int = 20, tolerance: float = 1e-3):
        (self.constraint,) = problem.model.checked.sparsity
        self.sigma = float(self.constraint.penalty)
        words = problem.corpus.fields[self.constraint.word.attribute.tokens_of]
        self.n_tokens, self.K = len(words.ids), int(problem.args["states"])
        self.ids, lengths = np.asarray(words.ids), words.lengths()
        self.n_examples = len(lengths)
        self.first_token = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)  # example e's: [e]:[e + 1]
        self.token_weight = np.repeat(np.asarray(weights, np.float64), lengths)
        self.corpus = self._groups(np.arange(self.n_tokens, dtype=np.int64))
        self.row_of_token = np.argsort(self.corpus.order).astype(np.int64)  # a corpus token's row in `lam`
        self.prepared = 2 * self.K * self.K + 2 * self.K  # prepare's numbers (the chain glue's _prepared)
        size = self.n_tokens * self.K
        self.buffer = np.zeros(self.prepared + 2 * size)
        # in corpus order, as the generated E-step reads and writes them
        self.shifts = self.buffer[self.prepared:self.prepared + size].reshape(self.n_tokens, self.K)
        self.posterior = self.buffer[self.prepared + size:].reshape(self.n_tokens, self.K)
        self.lam = np.zeros((self.n_tokens, self.K))  # the duals reached, in the corpus's type order (the next start)
        self.q = np.zeros((self.n_tokens, self.K))  # each token's latest projected posteriors, in corpus order
        self.length = 1.0  # the step length, carried from one projection to the next
        self.max_esteps = max_esteps
        self.tolerance = tolerance
        self.last: dict = {}
        self.duals: list[float] = []  # the dual objective G(0) - G(lambda) at each accepted lambda

    def _groups(self, tokens: np.ndarray) -> TokenGroups:
        """The dual problem's rows for `tokens` (corpus indices): grouped by word type, stably."""
        order = tokens[np.argsort(self.ids[tokens], kind="stable")].astype(np.int64)
        counts = np.bincount(self.ids[order], minlength=1)
        starts = np.concatenate([[0], np.cumsum(counts[counts > 0])]).astype(np.int64)
        spread = np.random.default_rng(0).permutation(len(starts) - 1).astype(np.int64)  # threads' shares
        return TokenGroups(order, starts, spread, self.token_weight[order])

    def _tokens(self, examples: np.ndarray) -> np.ndarray:
        """The corpus indices of the examples' tokens."""
        first, lengths = self.first_token[examples], np.diff(self.first_token)[examples]
        return (np.repeat(first - (np.cumsum(lengths) - lengths), lengths) + np.arange(lengths.sum())).astype(np.int64)

    # the executor's hook (LocalExecutor.prepare / estep) --------------------------------------------
    def derived(self, prepared: np.ndarray) -> np.ndarray:
        """prepare's numbers followed by the duals and room for the posteriors (one buffer, no copy)."""
        self.buffer[:self.prepared] = prepared
        return self.buffer

    def collect(self, derived: np.ndarray, examples: np.ndarray, weights: np.ndarray) -> None:
        """Nothing: the posteriors are read from the buffer by `estep`."""

    # a Dask worker's shard (emc/dist/executor.py): its examples packed on their own, tokens from 0
    def shard_derived(self, whole: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """The derived vector of examples lo:hi cut from the whole corpus's (the buffer): prepare's
        numbers, their tokens' duals and their tokens' posteriors."""
        first, last = self.first_token[lo], self.first_token[hi]
        return np.concatenate([whole[:self.prepared], self.shifts[first:last].ravel(),
                               self.posterior[first:last].ravel()])

    def shard_collect(self, whole: np.ndarray, part: np.ndarray, lo: int, hi: int) -> None:
        """A shard's posteriors back into the buffer, where `estep` reads a local E-step's."""
        first, last = self.first_token[lo], self.first_token[hi]
        size = (last - first) * self.K
        self.posterior[first:last] = part[self.prepared + size:].reshape(last - first, self.K)

    # the state of a fit -------------------------------------------------------------------------------
    def keep(self, extra: dict) -> None:
        extra[STATE_KEY] = self.lam

    def resume(self, extra: dict) -> None:
        self.lam = restored_duals(extra, STATE_KEY, self.lam, self.constraint.name, "tokens")

    # the projection ---------------------------------------------------------------------------------
    def _run(self, run, params, lam, groups: TokenGroups):
        """One E-step with the duals `lam` of the groups' rows: (result, G, their posteriors)."""
        self.shifts[groups.order] = lam
        self.posterior[groups.order] = 0.0  # an impossible example leaves its tokens' posteriors at 0
        result, objective = run(params)
        return result, objective, self.posterior[groups.order]

    def estep(self, params: ParamState, run: Callable[[ParamState], tuple[EStepResult, float]],
              examples: np.ndarray | None = None) -> tuple[EStepResult, float]:
        """The projected E-step: `run(params)` is one ordinary E-step (result, objective) of the
        generated code over `examples` (default all), which reads the duals in the buffer; returns
        those of the projected posterior, whose duals stay in `lam` for the next one. Steps stop
        when one moves no dual by more than `tolerance`, or after `max_esteps` E-steps.

        Over some examples only (an online variant's mini-batch or block) the penalty is that of
        their tokens, so a type's budget sigma is shared by its tokens there: a smaller instance of
        the same problem, warm-started from those tokens' duals of their previous visit (made
        feasible, as they may come from different groupings)."""
        groups, lam = self.corpus, self.lam
        if examples is not None and len(examples) < self.n_examples:
            groups = self._groups(self._tokens(examples))
            lam = np.empty((len(groups.order), self.K))  # the last visit's duals, projected (a step of length 0)
            _kernel(duals.gradient_step, self.lam[self.row_of_token[groups.order]], lam, groups.weight, 0.0,
                    groups.starts, groups.spread, self.sigma, lam)
        result, objective, lam = self._descend(params, run, lam, groups)
        if groups is self.corpus:
            self.lam = lam
        else:
            self.lam[self.row_of_token[groups.order]] = lam
        return result, objective

    def _descend(self, params, run, lam: np.ndarray, groups: TokenGroups) -> tuple[EStepResult, float, np.ndarray]:
        """Projected gradient steps on the groups' duals from `lam`: the E-step's result and objective
        at the duals reached, and those duals (what the projection did in `last`)."""
        result, objective, posterior = self._run(run, params, lam, groups)
        start_objective, start_norm, esteps = objective, self._norm(posterior, groups), 1
        self.duals = [0.0]
        length, moved = self.length, np.inf
        weight, starts, spread = groups.weight, groups.starts, groups.spread
        while esteps < self.max_esteps and moved > self.tolerance:
            trial = np.empty_like(lam)
            accepted = False
            while esteps < self.max_esteps:
                _kernel(duals.gradient_step, lam, posterior, weight, length, starts, spread, self.sigma, trial)
                decrease = _kernel(duals.step_products, lam, trial, posterior, posterior, weight)[0]
                if decrease == 0.0:  # the projection takes the step back: lambda is optimal
                    break
                new, new_objective, new_posterior = self._run(run, params, trial, groups)
                esteps += 1
                if new_objective <= objective + ARMIJO * decrease:
                    accepted = True
                    break
                length *= SHRINK
            if not accepted:
                break
            _, ss, sy, moved = _kernel(duals.step_products, lam, trial, posterior, new_posterior, weight)
            if sy > 0:  # Barzilai-Borwein
                length = ss / sy
            result, objective, lam, posterior = new, new_objective, trial, new_posterior
            self.duals.append(start_objective - objective)
        self.length = length
        self.shifts[groups.order] = lam  # decoding and posteriors during the fit read the duals reached
        self.q[groups.order] = posterior
        self.last = {"sparsity": {
            "name": self.constraint.name, "penalty": self.sigma, "before": start_norm,
            "after": self._norm(posterior, groups), "lambda": float(lam.sum()) / max(groups.types, 1),
            "dual": start_objective - objective, "esteps": esteps}}
        return result, objective, lam

    @staticmethod
    def _norm(posterior: np.ndarray, groups: TokenGroups) -> float:
        """The L1/Linf norm per word type: the summed largest posterior of each state (the soft
        number of states a type uses)."""
        return _kernel(duals.summed_max, posterior, groups.starts) / max(groups.types, 1)


def _kernel(kernel: Callable, rows: np.ndarray, *args):
    """kernel(rows, *args), one of emc/runtime/sparsity_duals.py's parallel kernels over the token
    rows of `rows`, on one thread when they are few (PARALLEL_ROWS)."""
    if len(rows) >= PARALLEL_ROWS:
        return kernel(rows, *args)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return kernel(rows, *args)
    finally:
        numba.set_num_threads(threads)


def attach_sparsity(variant, problem, executor, settings) -> PosteriorSparsity | None:
    """Set the executor to carry the spec's sparsity duals into each E-step (None without the
    constraint, or with --constraints off); refuse a variant that cannot project."""
    constraints = problem.model.checked.sparsity
    if not constraints or settings.constraints == "off":
        return None
    name = constraints[0].name
    if not variant.projects:
        raise EmcError(f"--algorithm {variant.name} cannot project onto the posterior sparsity '{name}' (its "
                       f"posteriors are not projected): use {PROJECTING}, or --constraints off")
    executor.example_projection = PosteriorSparsity(problem, variant.weights, settings.constraint_esteps)
    return executor.example_projection


def sparsity_text(record: dict) -> str:
    """One iteration's projection in a few words ('' without posterior sparsity)."""
    s = record.get("sparsity")
    if not s:
        return ""
    return (f"{s['name']} states per word {s['before']:.3f}->{s['after']:.3f} from the previous duals (mean summed "
            f"lambda a type {s['lambda']:.3g}, dual {s['dual']:.6g}, {s['esteps']} E-steps)")
