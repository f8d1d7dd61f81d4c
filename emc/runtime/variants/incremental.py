"""Incremental EM (Neal & Hinton 1998): each example's expected counts s_i are kept (sparse), and
after each example mu <- mu + s_i' - s_i, in a fresh random order each pass.

During the first pass the statistics start from the initial parameters as pseudo-counts (so the
first examples do not decide everything); when every example has contributed, those pseudo-counts
are removed from the rows the data reached, and mu is exactly the sum of the s_i from then on.
"""
from __future__ import annotations

import numpy as np

from emc.runtime.fit import FitState, check_log_z
from emc.runtime.online import incremental_pass
from emc.runtime.variants.base import Variant
from emc.runtime.variants.online_state import additive_smoothing, count_buffer, start_mass, statistics_state
from emc.spec.errors import EmcError


class Incremental(Variant):
    name = "incremental"
    paper = "Neal & Hinton 1998"
    converges = False

    def start(self, state: FitState) -> None:
        if not self.executor.in_process:
            raise EmcError("incremental EM keeps every example's statistics in this process: run it without "
                           "--workers/--scheduler (stepwise EM runs on a cluster)")
        layout = self.problem.layout
        smoothing = additive_smoothing(layout, self.settings.regularizers, self.name)
        state.params = statistics_state(state.params, layout, smoothing, start_mass(self.problem, self.settings))
        n = self.problem.n_examples
        state.extra.update(
            pseudo_counts=state.params.theta.copy(),
            pool_index=np.zeros(1 << 16, np.int32), pool_value=np.zeros(1 << 16),
            slot_start=np.zeros(n + 1, np.int64), slot_length=np.zeros(n, np.int64),
            slot_capacity=np.zeros(n, np.int64))

    def finished(self, state: FitState) -> bool:
        return state.step >= self.settings.passes

    def step(self, state: FitState) -> dict:
        p = self.problem
        x = state.extra
        order = state.rng.permutation(p.n_examples).astype(np.int64)
        module = p.model.module
        buffer = count_buffer(p.layout)
        total = 0.0
        for _, part in self.slices(order):
            log_z = np.empty(len(part))
            done, x["pool_index"], x["pool_value"] = incremental_pass(
                module.prepare, module.estep_example, part, self.weights, p.ints, p.array_bounds, p.meta,
                state.params.abi(), p.layout.row_of, buffer, log_z, x["pool_index"], x["pool_value"],
                x["slot_start"], x["slot_length"], x["slot_capacity"])
            check_log_z(p, part, log_z)
            total += done
        if state.step == 0:
            self._remove_pseudo_counts(state)
        self._recount_rows(state)
        return {"pass": state.step + 1, "objective": total}

    def _remove_pseudo_counts(self, state: FitState) -> None:
        layout = self.problem.layout
        theta, pseudo = state.params.theta, state.extra.pop("pseudo_counts")
        data = theta - pseudo
        reached = np.bincount(layout.row_of, weights=np.abs(data), minlength=layout.n_rows) > 0
        drop = layout.learned_mask() & reached[layout.row_of]
        theta[drop] = np.maximum(data[drop], 0.0)

    def _recount_rows(self, state: FitState) -> None:
        """Row totals from theta afresh, so rounding in the running totals never accumulates."""
        layout = self.problem.layout
        totals = np.bincount(layout.row_of, weights=state.params.theta, minlength=layout.n_rows)
        for t in layout.learned():
            state.params.row_total[t.row_slice] = totals[t.row_slice]
