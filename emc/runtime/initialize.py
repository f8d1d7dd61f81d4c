"""Initial parameters (`emc fit --init NAME`; `--init RUN` starts from a saved model instead).

    random     each learned row proportional to 1 + NOISE * U(0, 1) (--init-noise; the default).
               NOISE is 1 unless given, but the online variants take the structure's
               ONLINE_INIT_NOISE when its data module names one (see `init_noise`)
    uniform    every learned row uniform (Smith & Eisner compare it with random starts)
    labeled    the M-step of the labeled examples' counts alone (semi-supervised EM, Nigam et al.
               2000), plus one pseudo-count per row spread as under `random`, so that what the
               labeled examples never showed (a word only the unlabeled data has) keeps a small,
               non-zero probability
and any initializer a structure offers (name -> function of (problem, executor, rng) returning
expected counts laid out like theta): in its data module's INITIALIZERS when it needs only the data
(the CCM's random-split), registered here (`register_start`) by its module in emc/runtime/modes/
when it runs EM (the HMM aligner's ibm1): such a start sits above the fit it runs, so this module,
which the fit imports, imports none of them.
`default` is `labeled` when any example carries its structure (semi-supervised EM starts from the
labeled examples, as Nigam et al. do: from a random start the unlabeled data pull the classes away
from their labels), else the structure's DEFAULT_INIT when its data module names one (the CCM
starts from random-split, as Klein & Manning do), else `random`.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from emc.runtime.mstep import maximize
from emc.runtime.params import ParamLayout, ParamState, random_init
from emc.runtime.problem import Problem
from emc.runtime.variants import VARIANTS
from emc.spec.errors import EmcError
from emc.structures.semiring import SUM

GENERIC = ("default", "random", "uniform", "labeled")
# structure name -> its starts that run EM (--init NAME -> function of (problem, executor, rng)
# returning expected counts), as their modules in emc/runtime/modes/ register them
RUNNING_STARTS: dict[str, dict[str, Callable]] = {}


def register_start(structure: str, name: str, counts: Callable) -> None:
    """Offer `--init NAME` to a structure's fits: a start that runs EM (emc/runtime/modes/)."""
    RUNNING_STARTS.setdefault(structure, {})[name] = counts


def structure_initializers(problem: Problem) -> dict:
    """The structure's own starts: those its data module offers and those that run EM (modes/)."""
    own = dict(problem.model.data.INITIALIZERS)
    own.update(RUNNING_STARTS.get(problem.model.checked.structure.name, {}))
    return own


def initializer_names(problem: Problem) -> list[str]:
    return list(GENERIC) + list(structure_initializers(problem))


def init_noise(problem: Problem, settings) -> float:
    """--init-noise, else for stepwise/incremental EM the structure's ONLINE_INIT_NOISE, else 1.
    Why the online variants may want more: they weigh the start as statistics, and with one
    pseudo-count per row (ONLINE_START_MASS "row") the first mini-batches would otherwise decide
    every state alike; a more varied start keeps the states apart (the chain's choice and what it
    gains: emc/structures/chain/data.py). Batch EM keeps 1, which is what it is measured with."""
    if settings.init_noise is not None:
        return settings.init_noise
    variant = VARIANTS.get(settings.algorithm)
    if variant is not None and variant.weighs_start:
        return problem.model.data.ONLINE_INIT_NOISE
    return 1.0


def start_name(problem: Problem, settings) -> str:
    """The initializer `--init` names, with `default` resolved for this problem."""
    if settings.init != "default":
        return settings.init
    mask = problem.corpus.labeled_mask
    if mask is not None and mask.any():
        return "labeled"
    return problem.model.data.DEFAULT_INIT


def describe_start(problem: Problem, settings) -> str:
    """What the fit says about its start."""
    name = start_name(problem, settings)
    if name == "labeled":
        n = int(problem.corpus.labeled_mask.sum())
        return f"labeled (the M-step of the {n} labeled examples)"
    return name


def block_starts(layout: ParamLayout, params: ParamState) -> ParamState:
    """Each table's block finishes the drawn start (a featured block fits its weights to it:
    emc/runtime/blocks/block.py)."""
    for t in layout.tables:
        t.block.start(t, params)
    return params


def initial_params(problem: Problem, settings, executor, rng: np.random.Generator) -> ParamState:
    name = start_name(problem, settings)
    layout = problem.layout
    if name == "random":
        return block_starts(layout, random_init(layout, problem.fixed_theta, rng, init_noise(problem, settings)))
    if name == "uniform":
        return block_starts(layout, random_init(layout, problem.fixed_theta, rng, 0.0))
    start = random_init(layout, problem.fixed_theta, rng, init_noise(problem, settings))
    if name == "labeled":
        mask = problem.corpus.labeled_mask
        if mask is None or not mask.any():
            raise EmcError("--init labeled: the data has no labeled examples")
        examples = np.flatnonzero(mask)
        counts = executor.estep(start, examples, SUM, np.ones(len(examples))).counts
    else:
        own = structure_initializers(problem)
        if name not in own:
            raise EmcError(f"--init {name}: not a saved run nor an initializer; choose from "
                           f"{', '.join(initializer_names(problem))}")
        counts = own[name](problem, executor, rng)
    if name == "labeled":
        counts = counts + np.where(layout.learned_mask(), start.theta, 0.0)
    return maximize(layout, counts, start, settings.regularizers, featured_iterations=settings.mstep_iterations)
