"""The M-step of every learned table, and the log-prior term of the MAP objective.

Each table's prior (emc/priors: none or `smooth add(a)`, `prior dirichlet(alpha)`, `prior
sparse(alpha, beta)`) owns its M-step and its log prior; the CLI's --smooth / --prior replace a
block's (`overrides`, table name -> Prior). (Variational Bayes has its own update:
emc/runtime/variants/vb.py.) A featured block's M-step is a gradient one over its feature weights
(emc/runtime/blocks/features.py); its l2 penalty enters the objective here.
"""
from __future__ import annotations

import numpy as np

from emc.priors import Prior
from emc.runtime.params import ParamLayout, ParamState, TableLayout


def maximize(layout: ParamLayout, counts: np.ndarray, previous: ParamState, overrides: dict[str, Prior] | None = None,
             out: np.ndarray | None = None, featured_iterations: int | None = None) -> ParamState:
    """New parameters from expected counts (learned tables); fixed tables and weights are kept.
    `overrides` maps a table name to the prior replacing the spec's (the CLI's --smooth /
    --prior). The parameters go into `out` (a new array by default), which may be `counts`
    itself: the counts are then consumed, and no third table-sized array is needed.
    `featured_iterations` caps a featured block's optimiser (--mstep-iterations; None: the
    block's own budget)."""
    theta = np.empty(layout.size) if out is None else out
    features: dict[str, np.ndarray] = {}
    for t in layout.tables:
        if t.featured is not None:
            features[t.name] = maximize_featured(t, counts, previous, theta, featured_iterations)
        elif t.kind == "learned":
            prior = table_prior(t, overrides)
            start = previous.table_weights(t) if prior.WARM_STARTED else None
            prior.maximize(counts[t.entries], t.entry_rows, t.rows, out=theta[t.entries], start=start)
        else:
            theta[t.entries] = previous.table_weights(t)
    return ParamState.plain(theta, layout, features)


def maximize_featured(t: TableLayout, counts: np.ndarray, previous: ParamState, theta: np.ndarray,
                      iterations: int | None = None) -> np.ndarray:
    """The gradient M-step of a featured table (emc/runtime/blocks/features.py), warm-started from the
    previous weights; its probabilities go into theta (which may be `counts` itself)."""
    block = t.featured
    start = previous.features.get(t.name)
    if start is None:
        start = np.zeros(block.weight_shape)
    # the counts are read before theta, which may be the same array, is written
    return block.maximize(t.values(counts), start, iterations, probabilities=t.values(theta))


def table_prior(t: TableLayout, overrides: dict[str, Prior] | None) -> Prior:
    """The table's prior: the override's if it has one, else the spec's."""
    return overrides[t.name] if overrides and t.name in overrides else t.prior


def log_prior(layout: ParamLayout, params: ParamState, overrides: dict[str, Prior] | None = None) -> float:
    """The log-prior term of the MAP objective (up to a constant), so that batch EM is monotone
    in log-likelihood + log-prior."""
    weights = None
    total = -sum(t.featured.penalty(params.features[t.name]) for t in layout.featured() if t.name in params.features)
    for t in layout.learned():
        prior = table_prior(t, overrides)
        if prior.uniform or t.featured is not None:
            continue
        if weights is None:
            weights = params.weights(layout)
        total += prior.log_prior(weights[t.entries])
    return total
