"""Batch EM (Dempster, Laird & Rubin 1977): expected counts over the whole corpus, then the
M-step. The objective (log-likelihood + log prior) never decreases."""
from __future__ import annotations

from emc.runtime.state import FitState
from emc.runtime.variants.base import Variant


class Batch(Variant):
    projects = True
    name = "batch"
    paper = "Dempster, Laird & Rubin 1977"

    def step(self, state: FitState) -> dict:
        result, objective = self.projected_estep(state)
        state.params = self.mstep(result.counts, state.params)
        return {"iteration": state.step + 1, "objective": objective, **self.constraint_record()}
