"""Stepwise (online) EM: Sato & Ishii 2000, Cappe & Moulines 2009, Liang & Klein 2009.

Mini-batches of --batch-size examples, shuffled each pass; after each, mu <- (1 - eta_k) mu +
eta_k s with eta_k = (k + 2)^(-alpha) (--alpha, 0.5 < alpha <= 1). The update is sparse (Liang &
Klein section 3.2; emc/runtime/online.py). mu starts as the initial parameters. The objective
reported per pass is the sum of the examples' log-likelihoods as they were met during the pass.
A featured block's statistics are kept apart and its gradient M-step runs
FEATURED_MSTEPS_PER_PASS (online_state.py) times a pass (see _featured_mstep). With constraints on
the posterior (emc/runtime/constraints.py) each mini-batch's posterior is projected onto them before
its statistics are folded in (step_by_estep): a corpus-level share then bounds each mini-batch's.
"""
from __future__ import annotations

import numpy as np

from emc.runtime.constraints import mean_record
from emc.runtime.state import FitState, check_log_z
from emc.runtime import online
from emc.runtime.variants.base import Variant
from emc.runtime.variants.online_state import (additive_smoothing, count_buffer, featured_mstep_period, start_mass,
                                               statistics_state)
from emc.spec.errors import EmcError


class Stepwise(Variant):
    projects = True  # each mini-batch's posterior, in step_by_estep
    name = "stepwise"
    paper = "Liang & Klein 2009; Sato & Ishii 2000; Cappe & Moulines 2009"
    converges = False
    weighs_start = True

    def start(self, state: FitState) -> None:
        if not 0.5 < self.settings.alpha <= 1.0:
            raise EmcError(f"--alpha {self.settings.alpha}: stepwise EM needs 0.5 < alpha <= 1")
        if self.settings.batch_size < 1:
            raise EmcError("--batch-size must be at least 1")
        smoothing = additive_smoothing(self.problem.layout, self.settings.regularizers, self.name)
        start = state.params
        state.params = statistics_state(start, self.problem.layout, smoothing, start_mass(self.problem, self.settings))
        state.params.features = dict(start.features)
        state.extra["updates"] = 0
        for t in self.problem.layout.featured():
            state.extra[f"featured_{t.name}"] = t.values(state.params.theta).copy()  # the start as pseudo-counts
            self._show_featured(state.params, t)

    def finished(self, state: FitState) -> bool:
        return state.step >= self.settings.passes

    def step(self, state: FitState) -> dict:
        if not self.executor.in_process or self.projecting:
            return self.step_by_estep(state)
        p = self.problem
        order = state.rng.permutation(p.n_examples).astype(np.int64)
        buffer = count_buffer(p.layout)
        total, updates = 0.0, state.extra["updates"]
        folded = updates  # the updates before this one are in the featured blocks' statistics
        slices = self.slice_count(len(order), self.settings.batch_size)
        every = featured_mstep_period(slices)
        for i, (_, part) in enumerate(self.slices(order, self.settings.batch_size)):
            log_z = np.empty(len(part))
            done, updates = self.executor.stepwise_pass(state.params, part, self.settings.batch_size, updates,
                                                        self.settings.alpha, self.weights, buffer, log_z)
            check_log_z(p, part, log_z)
            total += done
            if (i + 1) % every == 0 or i + 1 == slices:
                self._featured_mstep(state, folded, updates)
                folded = updates
        state.extra["updates"] = updates
        return {"pass": state.step + 1, "objective": total, "updates": updates}

    # Featured blocks (emc/runtime/blocks/features.py). The E-step must read their log-linear
    # probabilities, not their normalised statistics, so their statistics mu are kept apart
    # (state.extra["featured_NAME"]) and theta shows the probabilities p (theta = p / scale, row
    # total 1 / scale). The compiled pass then updates what theta shows as it does any statistics:
    # after updates k0..k1 it shows D p + S, with D = prod (1 - eta_k) and S the mini-batches' decayed
    # counts, so mu <- D mu + S is exactly stepwise EM's update, over any number of slices. The
    # gradient M-step then runs every few slices (FEATURED_MSTEPS_PER_PASS a pass), not per
    # mini-batch: an M-step costs L-BFGS iterations over every weight, far more than a mini-batch.

    def _show_featured(self, params, t, shown: np.ndarray | None = None) -> None:
        """theta shows the block's probabilities / scale: `shown` when theta's view of the table
        holds them already (the M-step wrote them), else computed from the weights."""
        if shown is None:
            shown = t.featured.probabilities(params.features[t.name], out=t.values(params.theta))
        shown /= params.scale[0]
        params.row_total[t.row_slice] = 1.0 / params.scale[0]

    def _featured_mstep(self, state: FitState, k0: int, k1: int) -> None:
        params = state.params
        featured = self.problem.layout.featured()
        if not featured or k1 == k0:
            return
        decay = float(np.prod(1.0 - (np.arange(k0, k1) + 2.0) ** -self.settings.alpha))
        for t in featured:
            shown = t.featured.probabilities(params.features[t.name])
            mu = state.extra[f"featured_{t.name}"]
            mu *= decay
            mu += t.values(params.theta) * params.scale[0] - decay * shown
            np.maximum(mu, 0.0, out=mu)  # rounding only
            table = t.values(params.theta)
            params.features[t.name] = t.featured.maximize(mu * self._corpus_scale(), params.features[t.name],
                                                          self.settings.mstep_iterations, probabilities=table)
            self._show_featured(params, t, shown=table)

    def _corpus_scale(self) -> float:
        """mu averages the counts of one mini-batch; the M-step weighs them against the l2 penalty as
        batch EM does a pass's counts, so it sees them scaled to a pass (mini-batches per pass).
        Unscaled, l2(1) on a 45-state HMM's ~0.5 counts per row flattened every emission row, and
        stepwise EM put every word in one state (20% many-to-one on CoNLL-2000)."""
        return float(self.weights.sum()) / self.settings.batch_size

    def step_by_estep(self, state: FitState) -> dict:
        """The same updates with each mini-batch's E-step through online_estep: on the executor's
        machines (a Dask cluster), or projected onto the spec's constraints (the duals warm-started
        from the previous mini-batch's; emc/runtime/constraints.py). Its expected counts come back
        dense, the touched entries are their non-zeros, and the update is the compiled pass's own
        (online.stepwise_apply); a featured block's M-step runs at the same slice ends."""
        p = self.problem
        if p.layout.featured() and not self.executor.in_process:
            raise EmcError("stepwise EM with featured blocks runs in this process only: drop --workers/--scheduler")
        order = state.rng.permutation(p.n_examples).astype(np.int64)
        total, k, records = 0.0, state.extra["updates"], []
        folded = k
        marks = np.zeros(p.layout.size, np.uint8)  # the compiled update clears the marks it reads
        slices = self.slice_count(len(order), self.settings.batch_size)
        every = featured_mstep_period(slices)
        self.resume_duals(state)
        for i, (_, part) in enumerate(self.slices(order, self.settings.batch_size)):
            for start in range(0, len(part), self.settings.batch_size):
                counts, log_likelihood = self.online_estep(state.params, part[start:start + self.settings.batch_size])
                total += log_likelihood
                records.append(self.constraint_record())
                nonzero = np.flatnonzero(counts)
                touched = np.concatenate([[len(nonzero)], nonzero]).astype(np.int64)
                online.stepwise_apply(state.params.theta, state.params.row_total, state.params.scale, counts, marks,
                                      touched, p.layout.row_of, k, self.settings.alpha, online.RESCALE_BELOW)
                k += 1
            if (i + 1) % every == 0 or i + 1 == slices:
                self._featured_mstep(state, folded, k)
                folded = k
        self.keep_duals(state)
        state.extra["updates"] = k
        return {"pass": state.step + 1, "objective": total, "updates": k, **mean_record(records)}
