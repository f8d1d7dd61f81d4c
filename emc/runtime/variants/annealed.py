"""Deterministic annealing (Smith & Eisner 2004) and skewed deterministic annealing (their
section 5).

The E-step scores every structure by p(x, z)^beta (annealed), or by p(x, z)^beta * p0(x, z)^(1-beta)
(skewed, p0 from the initial parameters: --init RUN, --init labeled or a structure's initializer).
Both factor over parts, so they are ordinary E-steps on transformed weights. At each beta below 1,
EM runs until the objective log sum_z (score) changes by less than --anneal-tolerance relative (or
for --iterations iterations); then beta grows by --beta-factor, up to 1, where EM runs to
convergence as plain EM does (--tolerance, --iterations). With beta = 1 both are plain EM.
"""
from __future__ import annotations

import numpy as np

from emc.runtime.state import FitState
from emc.runtime.params import ParamState
from emc.runtime.settings import annealing_problem, temperatures
from emc.runtime.variants.base import Variant
from emc.spec.errors import EmcError


class Annealed(Variant):
    projects = True
    name = "annealed"
    paper = "Smith & Eisner 2004 (deterministic annealing)"
    converges = False  # the objective moves with beta; the variant judges convergence itself

    def start(self, state: FitState) -> None:
        problem = annealing_problem(self.settings)  # beta must reach 1 in a bounded number of stages
        if problem is not None:
            raise EmcError(problem)
        state.extra.update(beta=min(1.0, self.settings.beta_min), stage_iterations=0, stage_objective=None)

    def scored_weights(self, state: FitState, beta: float) -> np.ndarray:
        return state.params.weights(self.problem.layout) ** beta

    def step(self, state: FitState) -> dict:
        beta = state.extra["beta"]
        annealed = ParamState.plain(self.scored_weights(state, beta), self.problem.layout)
        result, objective = self.projected_estep(state, annealed)
        state.params = self.mstep(result.counts, state.params)
        record = {"iteration": state.step + 1, "objective": objective, "beta": beta, **self.constraint_record()}
        previous = state.extra["stage_objective"]
        state.extra["stage_iterations"] += 1
        state.extra["stage_objective"] = objective
        tolerance = self.settings.tolerance if beta >= 1.0 else self.settings.anneal_tolerance
        stage_done = (previous is not None and abs(objective - previous) <= tolerance * abs(previous)) \
            or state.extra["stage_iterations"] >= self.settings.iterations
        if stage_done:
            if beta >= 1.0:
                state.converged = True
            else:
                state.extra.update(beta=min(1.0, beta * self.settings.beta_factor), stage_iterations=0,
                                   stage_objective=None)
        return record

    def finished(self, state: FitState) -> bool:
        # each temperature's stage and the last at beta = 1 run at most --iterations each (one more
        # stage to spare: beta_min * factor^k may land a rounding below 1)
        budget = self.settings.iterations * (temperatures(self.settings.beta_min, self.settings.beta_factor) + 2)
        return state.converged or state.step >= budget


class Skewed(Annealed):
    name = "skewed"
    paper = "Smith & Eisner 2004, section 5 (skewed deterministic annealing)"

    def start(self, state: FitState) -> None:
        super().start(state)
        state.extra["skew"] = state.params.weights(self.problem.layout)

    def scored_weights(self, state: FitState, beta: float) -> np.ndarray:
        skew = state.extra["skew"]
        current = state.params.weights(self.problem.layout)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.power(current, beta) * np.power(skew, 1.0 - beta)
        return np.nan_to_num(out, nan=0.0)
