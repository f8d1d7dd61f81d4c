"""Initial parameters (`emc fit --init NAME`; `--init RUN` starts from a saved model instead).

    random     each learned row proportional to 1 + NOISE * U(0, 1) (--init-noise; the default).
               NOISE is 1 unless given, but the online variants take the structure's
               ONLINE_INIT_NOISE when its data module names one (see `init_noise`)
    uniform    every learned row uniform (Smith & Eisner compare it with random starts)
    labeled    the M-step of the labeled examples' counts alone (semi-supervised EM, Nigam et al.
               2000), plus one pseudo-count per row spread as under `random`, so that what the
               labeled examples never showed (a word only the unlabeled data has) keeps a small,
               non-zero probability
and any initializer a structure offers in its data module's INITIALIZERS (name -> function of
(problem, executor, rng) returning expected counts laid out like theta), e.g. the CCM's random-split.
`default` is the structure's DEFAULT_INIT when its data module names one (the CCM starts from
random-split, as Klein & Manning do), else `random`.
"""
from __future__ import annotations

import numpy as np

from emc.runtime.mstep import maximize
from emc.runtime.params import ParamState, random_init
from emc.runtime.problem import Problem
from emc.spec.errors import EmcError
from emc.structures.semiring import SUM

GENERIC = ("default", "random", "uniform", "labeled")


def initializer_names(problem: Problem) -> list[str]:
    return list(GENERIC) + list(getattr(problem.model.data, "INITIALIZERS", {}))


def init_noise(problem: Problem, settings) -> float:
    """--init-noise, else for stepwise/incremental EM the structure's ONLINE_INIT_NOISE, else 1.
    Why the online variants may want more: they weigh the start as statistics, and with one
    pseudo-count per row (ONLINE_START_MASS "row") the first mini-batches would otherwise decide
    every state alike; a more varied start keeps the states apart (the chain's choice and what it
    gains: emc/structures/chain/data.py). Batch EM keeps 1, which is what it is measured with."""
    from emc.runtime.variants import VARIANTS  # the variants import the driver, which imports this

    if settings.init_noise is not None:
        return settings.init_noise
    variant = VARIANTS.get(settings.algorithm)
    if variant is not None and variant.weighs_start:
        return getattr(problem.model.data, "ONLINE_INIT_NOISE", 1.0)
    return 1.0


def featured_start(layout, params: ParamState) -> ParamState:
    """Start weights for each featured table from its starting probabilities. With the identity
    feature they carry the start exactly on the outcomes seen in training, and the table is kept
    as drawn (as a plain block's: the first M-step moves the mass of unseen outcomes onto seen
    ones, which only raises the objective); without it the table becomes the projection's, so
    either way batch EM's objective never falls from the start."""
    for t in layout.featured():
        weights = t.featured.initial_weights(t.matrix(params.theta).copy())
        params.features[t.name] = weights
        if t.featured.identity is None:
            t.matrix(params.theta)[:] = np.exp(t.featured.log_probabilities(weights))
    return params


def initial_params(problem: Problem, settings, executor, rng: np.random.Generator) -> ParamState:
    name = settings.init
    if name == "default":
        name = getattr(problem.model.data, "DEFAULT_INIT", "random")
    layout = problem.layout
    if name == "random":
        return featured_start(layout, random_init(layout, problem.fixed_theta, rng, init_noise(problem, settings)))
    if name == "uniform":
        return featured_start(layout, random_init(layout, problem.fixed_theta, rng, 0.0))
    start = random_init(layout, problem.fixed_theta, rng, init_noise(problem, settings))
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
        counts = own[name](problem, executor, rng)
    if name == "labeled":
        counts = counts + np.where(layout.learned_mask(), start.theta, 0.0)
    return maximize(layout, counts, start, settings.regularizers)
