"""`--init ibm1`: start a model from IBM Model 1 (the usual start of the HMM aligner: Och & Ney
2003; Liang, Taskar & Klein 2006 train Model 1, then the HMM).

While every jump bucket weighs the same, each target word's links are independent and equally
likely a priori (NULL included): the model is IBM 1 (up to the end buckets, which share their
weight among the positions they reach). So a few EM iterations from uniform tables, with the
jump-slot tables held uniform, train Model 1's link blocks; the returned expected counts, from one
more E-step, give the link blocks and the jump distribution of Model 1's alignments, which the
driver turns into the start parameters. For a model without jumps this is plain EM from uniform
tables, Model 1's usual start.
"""
from __future__ import annotations

import numpy as np

from emc.runtime.initialize import register_start
from emc.runtime.mstep import maximize
from emc.runtime.params import ParamState, random_init
from emc.runtime.problem import Problem
from emc.structures.alignment import JUMP, slot_tables
from emc.structures.semiring import SUM

ITERATIONS = 5


def ibm1_counts(problem: Problem, executor, rng: np.random.Generator) -> np.ndarray:
    """Model 1's expected counts, with the fit's own executor (its threads, or a cluster)."""
    layout = problem.layout
    jump_tables = [layout.table(name) for name in slot_tables(problem.model.checked.factors, JUMP)]
    examples = np.arange(problem.n_examples)
    ones = np.ones(problem.n_examples)
    params = _uniform_jumps(random_init(layout, problem.fixed_theta, rng, 0.0), jump_tables)
    for _ in range(ITERATIONS):
        counts = executor.estep(params, examples, SUM, ones).counts
        params = _uniform_jumps(maximize(layout, counts, params), jump_tables)
    return executor.estep(params, examples, SUM, ones).counts


# a start that runs EM registers itself with the driver's starts; a structure's starts that need
# only its data stay in its data module's INITIALIZERS (spantree's random-split)
register_start("alignment", "ibm1", ibm1_counts)


def _uniform_jumps(params: ParamState, tables) -> ParamState:
    for t in tables:
        params.theta[t.entries] = 1.0 / t.outcomes
    return params
