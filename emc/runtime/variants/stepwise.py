"""Stepwise (online) EM: Sato & Ishii 2000, Cappe & Moulines 2009, Liang & Klein 2009.

Mini-batches of --batch-size examples, shuffled each pass; after each, mu <- (1 - eta_k) mu +
eta_k s with eta_k = (k + 2)^(-alpha) (--alpha, 0.5 < alpha <= 1). The update is sparse (Liang &
Klein section 3.2; emc/runtime/online.py). mu starts as the initial parameters. The objective
reported per pass is the sum of the examples' log-likelihoods as they were met during the pass.
"""
from __future__ import annotations

import numpy as np

from emc.runtime.fit import FitState, check_log_z
from emc.runtime.online import RESCALE_BELOW, stepwise_pass
from emc.runtime.variants.base import Variant
from emc.runtime.variants.online_state import additive_smoothing, count_buffer, start_mass, statistics_state
from emc.spec.errors import EmcError
from emc.structures.semiring import SUM


class Stepwise(Variant):
    name = "stepwise"
    paper = "Liang & Klein 2009; Sato & Ishii 2000; Cappe & Moulines 2009"
    refuses_features = ("its statistics live in the E-step's lazy parameters, which read every block as normalised "
                        "counts; use batch, hard, annealed or skewed EM")
    converges = False
    weighs_start = True

    def start(self, state: FitState) -> None:
        if not 0.5 < self.settings.alpha <= 1.0:
            raise EmcError(f"--alpha {self.settings.alpha}: stepwise EM needs 0.5 < alpha <= 1")
        if self.settings.batch_size < 1:
            raise EmcError("--batch-size must be at least 1")
        smoothing = additive_smoothing(self.problem.layout, self.settings.regularizers, self.name)
        state.params = statistics_state(state.params, self.problem.layout, smoothing,
                                        start_mass(self.problem, self.settings))
        state.extra["updates"] = 0

    def finished(self, state: FitState) -> bool:
        return state.step >= self.settings.passes

    def step(self, state: FitState) -> dict:
        if not self.executor.in_process:
            return self.step_remote(state)
        p = self.problem
        order = state.rng.permutation(p.n_examples).astype(np.int64)
        module = p.model.module
        buffer = count_buffer(p.layout)
        total, updates = 0.0, state.extra["updates"]
        for _, part in self.slices(order, self.settings.batch_size):
            log_z = np.empty(len(part))
            done, updates = stepwise_pass(module.prepare, module.estep_example, part, self.settings.batch_size,
                                          updates, self.settings.alpha, self.weights, p.ints, p.array_bounds,
                                          p.meta, state.params.abi(), p.layout.row_of, buffer, log_z)
            check_log_z(p, part, log_z)
            total += done
        state.extra["updates"] = updates
        return {"pass": state.step + 1, "objective": total, "updates": updates}

    def step_remote(self, state: FitState) -> dict:
        """The same updates with each mini-batch's E-step on the executor (a Dask cluster): its
        expected counts come back dense, and the touched entries are their non-zeros."""
        p = self.problem
        params = state.params
        order = state.rng.permutation(p.n_examples).astype(np.int64)
        total, k = 0.0, state.extra["updates"]
        for start in range(0, len(order), self.settings.batch_size):
            batch = order[start:start + self.settings.batch_size]
            result = self.executor.estep(params, batch, SUM, self.weights[batch])
            check_log_z(p, batch, result.log_z)
            total += float(np.dot(self.weights[batch], result.log_z))
            eta = (k + 2.0) ** -self.settings.alpha
            params.scale[0] *= 1.0 - eta
            touched = np.flatnonzero(result.counts)
            add = eta / params.scale[0] * result.counts[touched]
            params.theta[touched] += add
            np.add.at(params.row_total, p.layout.row_of[touched], add)
            k += 1
            if not RESCALE_BELOW <= params.scale[0] <= 1.0 / RESCALE_BELOW:
                params.theta *= params.scale[0]
                params.row_total *= params.scale[0]
                params.scale[0] = 1.0
        state.extra["updates"] = k
        return {"pass": state.step + 1, "objective": total, "updates": k}
