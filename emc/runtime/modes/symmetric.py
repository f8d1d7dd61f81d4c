"""`emc fit` of an alignment spec with a symmetry constraint (`constraint NAME : E[a] agree`): both
directions trained together by posterior regularization (Ganchev, Graca & Taskar 2008). Each
E-step projects every pair's posteriors over both directions' alignments onto those whose link
expectations agree (emc/runtime/symmetry.py), and each direction's M-step re-estimates its blocks
from its own projected posterior (its link and jump counts). Unlike agreement training, whose
product posteriors are not a distribution, this is EM on the objective log p(x) - KL(q || p) of
both directions, which it never lowers (up to the projection's tolerance).

The fit runs in the shared EM loop like agreement's (two models in one state, RUN and
RUN/reverse); the duals go in the state, so a checkpoint holds them. Decoding projects each pair
the same way and keeps the links whose mean projected posterior (of the two directions) is at
least a threshold (0.5): posterior decoding, as the paper decodes.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from emc.runtime.modes.agreement import Agreement, Direction, _both_params
from emc.runtime.mstep import log_prior, maximize
from emc.runtime.settings import FitSettings
from emc.runtime.state import FitState, check_log_z
from emc.runtime.symmetry import SymmetricProjection
from emc.structures.semiring import SUM

THRESHOLD = 0.5
# The schedule a symmetric fit runs where the command line leaves --init, --iterations and
# --constraint-esteps at their defaults: 5 iterations of IBM 1, then one of constrained EM whose
# projections take at most 10 passes. On the Hansards bench (2,867 pairs,
# bench/alignment_pr_hansards.py) the constrained EM is best after its first iteration and worse
# after each further one (AER 10.6% after 1, 11.5 after 2, 13.2 after 3, 15.6 after 5, 18.2 after
# 10), while its objective keeps rising: the two directions' tables overfit this little data; 20
# passes a projection gave 10.7%, 5 gave 11.1%.
DEFAULT_SCHEDULE = {"init": "ibm1", "iterations": 1, "constraint_esteps": 10}


def use_default_schedule(job) -> None:
    """DEFAULT_SCHEDULE's settings where the command line left them at their defaults (a resumed
    fit keeps what its checkpoint says); said in one line."""
    plain = FitSettings()
    changed = {name: value for name, value in DEFAULT_SCHEDULE.items()
               if getattr(job.settings, name) == getattr(plain, name)}
    if not changed or job.resuming:
        return
    job.settings = replace(job.settings, **changed)
    job.job.settings = job.settings.to_json()  # what the checkpoint and run.json record
    flags = " ".join(f"--{name.replace('_', '-')} {value}" for name, value in changed.items())
    job.say(f"emc: constraint '{job.job.checked.symmetric.name}': {flags} (the symmetric fit's default schedule: "
            f"more iterations overfit on the Hansards bench; give the flags to change it)")


def symmetric_links(forward: np.ndarray, reverse: np.ndarray, null_forward: int,
                    threshold: float = THRESHOLD) -> set[tuple[int, int]]:
    """(source, target) links whose mean projected posterior, (P_f(a_j = i) + P_r(b_i = j)) / 2, is
    at least the threshold; forward is (target words x source positions [+ NULL]), reverse the other way."""
    m, l = forward.shape[0], forward.shape[1] - null_forward
    mean = (forward[:, :l] + reverse[:, :m].T) / 2.0
    return {(int(i), int(j)) for j, i in zip(*np.nonzero(mean >= threshold))}


def projected_posteriors(projection: SymmetricProjection, directions: list, params: list) -> list[list[np.ndarray]]:
    """Both directions' link posteriors after projecting each pair (as Direction.posteriors shapes them)."""
    projection.project(params)
    return [Direction(d.problem, d.executor).posteriors(p, np.arange(d.problem.n_examples))[0]
            for d, p in zip(directions, params)]


class Symmetric(Agreement):
    """The symmetric fit in the shared EM loop: agreement's two models in one state (the reverse
    one in its extra), with the projected E-step instead of the product of posteriors."""

    def __init__(self, directions: list[Direction], settings):
        super().__init__(directions, settings)
        self.projection = SymmetricProjection(*directions, max_esteps=settings.constraint_esteps)
        self._final: tuple | None = None  # (params, f) of the last projection of the final parameters

    def step(self, state: FitState) -> dict:
        params = _both_params(state)
        self.projection.resume(state.extra)
        f = self.projection.project(params)
        counts = []
        for d, p, w in zip(self.directions, params, self.weights):
            result = d.executor.estep(p, self.examples, SUM, w)  # the shifts left at the solution
            check_log_z(d.problem, self.examples, result.log_z)
            counts.append(result.counts)
        objective = self._objective(params, f)
        budget = self.settings.mstep_iterations
        self._set(state, [maximize(d.problem.layout, c, p, self.settings.regularizers, featured_iterations=budget)
                          for d, c, p in zip(self.directions, counts, params)])
        self.projection.keep(state.extra)
        return {"iteration": state.step + 1, "objective": objective, **self.projection.last}

    def _objective(self, params: list, f: np.ndarray) -> float:
        """sum of the pairs' weighted f (log p(x) - KL, both directions) plus both log priors."""
        check_log_z(self.directions[0].problem, self.examples, f)
        return float(np.sum(self.weights[0] * f)) + sum(
            log_prior(d.problem.layout, p, self.settings.regularizers) for d, p in zip(self.directions, params))

    def _project_final(self, state: FitState) -> np.ndarray:
        if self._final is None or self._final[0] is not state.params:
            self.projection.resume(state.extra)
            self._final = (state.params, self.projection.project(_both_params(state)))
        return self._final[1]

    def final_objective(self, state: FitState) -> float:
        return self._objective(_both_params(state), self._project_final(state))

    def evaluate(self, state: FitState) -> dict[str, float]:
        """The links of the mean projected posteriors against the gold links."""
        from emc.eval.alignment import alignment_scores

        self._project_final(state)
        params = _both_params(state)
        post = [Direction(d.problem, d.executor).posteriors(p, self.examples)[0]
                for d, p in zip(self.directions, params)]
        null = self.directions[0].null
        return alignment_scores([symmetric_links(f, r, null) for f, r in zip(*post)], self.gold)
