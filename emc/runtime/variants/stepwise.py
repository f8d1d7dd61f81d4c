"""Stepwise (online) EM: Sato & Ishii 2000, Cappe & Moulines 2009, Liang & Klein 2009.

Mini-batches of --batch-size examples, shuffled each pass; after each, mu <- (1 - eta_k) mu +
eta_k s with eta_k = (k + 2)^(-alpha) (--alpha, 0.5 < alpha <= 1). The update is sparse (Liang &
Klein section 3.2; emc/runtime/online.py). mu starts as the initial parameters. The objective
reported per pass is the sum of the examples' log-likelihoods as they were met during the pass.
"""
from __future__ import annotations

import numpy as np

from emc.runtime.fit import FitState, check_log_z
from emc.runtime.online import stepwise_pass
from emc.runtime.variants.base import Variant
from emc.runtime.variants.online_state import additive_smoothing, count_buffer, statistics_state
from emc.spec.errors import EmcError


class Stepwise(Variant):
    name = "stepwise"
    paper = "Liang & Klein 2009; Sato & Ishii 2000; Cappe & Moulines 2009"
    converges = False

    def start(self, state: FitState) -> None:
        if not 0.5 < self.settings.alpha <= 1.0:
            raise EmcError(f"--alpha {self.settings.alpha}: stepwise EM needs 0.5 < alpha <= 1")
        if self.settings.batch_size < 1:
            raise EmcError("--batch-size must be at least 1")
        smoothing = additive_smoothing(self.problem.layout, self.settings.regularizers, self.name)
        state.params = statistics_state(state.params, self.problem.layout, smoothing)
        state.extra["updates"] = 0

    def finished(self, state: FitState) -> bool:
        return state.step >= self.settings.passes

    def step(self, state: FitState) -> dict:
        p = self.problem
        order = state.rng.permutation(p.n_examples).astype(np.int64)
        log_z = np.empty(len(order))
        module = p.model.module
        total, updates = stepwise_pass(module.prepare, module.estep_example, order, self.settings.batch_size,
                                       state.extra["updates"], self.settings.alpha, self.weights, p.ints,
                                       p.array_bounds, p.meta, state.params.abi(), p.layout.row_of,
                                       count_buffer(p.layout), log_z)
        check_log_z(p, order, log_z)
        state.extra["updates"] = updates
        return {"pass": state.step + 1, "objective": total, "updates": updates}
