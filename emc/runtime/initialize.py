"""Initial parameters (`emc fit --init NAME`; `--init RUN` starts from a saved model instead).

    random     each learned row proportional to 1 + NOISE * U(0, 1) (--init-noise; the default)
    uniform    every learned row uniform (Smith & Eisner compare it with random starts)
    labeled    the M-step of the labeled examples' counts alone (semi-supervised EM, Nigam et al.
               2000); the rows they do not reach start as under `random`
and any initializer a structure offers in its data module's INITIALIZERS (name -> function of
(problem, rng) returning expected counts laid out like theta), e.g. the CCM's random-split.
"""
from __future__ import annotations

import numpy as np

from emc.runtime.mstep import maximize
from emc.runtime.params import ParamState, random_init
from emc.runtime.problem import Problem
from emc.spec.errors import EmcError
from emc.structures.semiring import SUM

GENERIC = ("random", "uniform", "labeled")


def initializer_names(problem: Problem) -> list[str]:
    return list(GENERIC) + list(getattr(problem.model.data, "INITIALIZERS", {}))


def initial_params(problem: Problem, settings, executor, rng: np.random.Generator) -> ParamState:
    name = settings.init
    layout = problem.layout
    if name == "random":
        return random_init(layout, problem.fixed_theta, rng, settings.init_noise)
    if name == "uniform":
        return random_init(layout, problem.fixed_theta, rng, 0.0)
    start = random_init(layout, problem.fixed_theta, rng, settings.init_noise)
    if name == "labeled":
        mask = problem.corpus.labeled_mask
        if mask is None or not mask.any():
            raise EmcError("--init labeled: the data has no labeled examples")
        examples = np.flatnonzero(mask)
        counts = executor.estep(start, examples, SUM, np.ones(len(examples))).counts
    else:
        own = getattr(problem.model.data, "INITIALIZERS", {})
        if name not in own:
            raise EmcError(f"--init {name}: not a saved run nor an initializer; choose from "
                           f"{', '.join(initializer_names(problem))}")
        counts = own[name](problem, rng)
    params = maximize(layout, counts, start, settings.regularizers)
    return _fill_unreached_rows(params, start, counts, problem)


def _fill_unreached_rows(params: ParamState, start: ParamState, counts: np.ndarray, problem: Problem) -> ParamState:
    """Rows that got no counts keep their random start instead of turning uniform."""
    theta = params.theta.copy()
    reached = np.bincount(problem.layout.row_of, weights=counts, minlength=problem.layout.n_rows) > 0
    empty_entries = ~reached[problem.layout.row_of]
    theta[empty_entries] = start.theta[empty_entries]
    return ParamState.plain(theta, problem.layout)
