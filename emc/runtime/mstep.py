"""The M-step of every table, and the log-prior term of the MAP objective.

Every table's block (emc/runtime/blocks/block.py, chosen once when the layout is built) owns its
M-step and its term of the objective: a plain block's prior (emc/priors: none or `smooth add(a)`,
`prior dirichlet(alpha)`, `prior sparse(alpha, beta)`), a featured block's gradient M-step over
its feature weights and their l2 penalty, a fixed table's nothing. The CLI's --smooth / --prior
replace a plain block's prior (`overrides`, table name -> Prior). (Variational Bayes has its own
update: emc/runtime/variants/vb.py.)
"""
from __future__ import annotations

import numpy as np

from emc.priors import Prior
from emc.runtime.blocks.block import table_block
from emc.runtime.params import ParamLayout, ParamState


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
        weights = table_block(t, overrides).maximize(t, counts, previous, theta, featured_iterations)
        if weights is not None:
            features[t.name] = weights
    return ParamState.plain(theta, layout, features)


def log_prior(layout: ParamLayout, params: ParamState, overrides: dict[str, Prior] | None = None) -> float:
    """The log-prior term of the MAP objective (up to a constant), so that batch EM is monotone
    in log-likelihood + log-prior."""
    materialised: list[np.ndarray] = []

    def weights() -> np.ndarray:  # every entry's weight, materialised once and only if a term asks
        if not materialised:
            materialised.append(params.weights(layout))
        return materialised[0]

    total = 0.0
    for t in layout.tables:
        term = table_block(t, overrides).log_prior(t, params, weights)
        if term is not None:
            total += term
    return total
