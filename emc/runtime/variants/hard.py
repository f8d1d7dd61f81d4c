"""Hard (Viterbi) EM: counts from the single best structure of each example; the objective is the
sum of the best structures' log scores, which never decreases."""
from __future__ import annotations

from emc.runtime.state import FitState
from emc.runtime.variants.base import Variant
from emc.structures.semiring import MAX


class Hard(Variant):
    name = "hard"
    paper = "Viterbi training; e.g. Spitkovsky et al. 2010"

    def step(self, state: FitState) -> dict:
        result, objective = self.full_estep(state.params, MAX)
        state.params = self.mstep(result.counts, state.params)
        return {"iteration": state.step + 1, "objective": objective}

    def final_objective(self, state: FitState) -> float:
        return self.full_estep(state.params, MAX)[1]
