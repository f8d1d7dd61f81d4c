"""Stochastic EM (Celeux & Diebolt 1985; the Monte Carlo E-step of Wei & Tanner 1990): the E-step's
expected counts are replaced by the average counts of --samples S structures per example, drawn
from the posterior under the current parameters (each structure's DP samples: emc/structures/
sampling.py), then the ordinary M-step.

With --samples-growth G > 1 the number of samples grows each iteration, S_t = ceil(S G^t) (capped at
sampling.MAX_SAMPLES - 1): early iterations are cheap and noisy, which helps escape poor starts; late
ones approach batch EM's expected counts (annealed Monte Carlo EM). The draws of iteration t are
seeded from the fit's generator (--seed), and each example's from its index, so a fit is the same
on any number of threads or Dask workers.

The objective printed is exact: log Z of the current parameters (the sampling DPs run the sum
forward pass anyway) plus the log prior. It does not rise monotonically (the counts are noisy), so
relative-objective convergence does not apply: the fit runs --iterations iterations.
"""
from __future__ import annotations

import math

from emc.runtime.state import FitState
from emc.runtime.variants.base import Variant
from emc.spec.errors import EmcError
from emc.structures.sampling import MAX_SAMPLES, SEED_SPACE, require_sampler, sampling


class Stochastic(Variant):
    name = "stochastic"
    paper = "Celeux & Diebolt 1985; Wei & Tanner 1990 (Monte Carlo EM)"
    converges = False

    def start(self, state: FitState) -> None:
        require_sampler(self.problem.model.module, "--algorithm stochastic")
        if not 1 <= self.settings.samples < MAX_SAMPLES:
            raise EmcError(f"--samples {self.settings.samples}: give between 1 and {MAX_SAMPLES - 1} samples per example")
        if not self.settings.samples_growth >= 1.0:
            raise EmcError(f"--samples-growth {self.settings.samples_growth}: the number of samples may only grow "
                           "(give 1 for a fixed number)")

    def samples_at(self, step: int) -> int:
        """S_t = ceil(S G^t), capped."""
        growth = self.settings.samples_growth
        grown = self.settings.samples * math.exp(min(step * math.log(growth), 50.0))
        return int(min(MAX_SAMPLES - 1, math.ceil(grown - 1e-9)))

    def step(self, state: FitState) -> dict:
        samples = self.samples_at(state.step)
        request = sampling(samples, int(state.rng.integers(SEED_SPACE)))
        result, objective = self.full_estep(state.params, request)
        state.params = self.mstep(result.counts, state.params)
        return {"iteration": state.step + 1, "objective": objective, "samples": samples}
