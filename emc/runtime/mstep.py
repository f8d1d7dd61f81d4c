"""M-step normalisers, one per prior, and the log-prior term of the MAP objective.

Rows are the (context) rows of each learned table. Without a prior a row is its expected counts
normalised (maximum likelihood). `smooth add(a)` adds a to every count (MAP under a symmetric
Dirichlet(1 + a)); `prior dirichlet(alpha)` is the MAP estimate max(c + alpha - 1, 0) normalised;
`prior sparse(alpha, beta)` is the smoothed-L0 prior of Vaswani, Pauls & Chiang (2010), in
emc/runtime/sparse_prior.py. A row with no counts and no prior mass becomes uniform. (Variational
Bayes has its own update: emc/runtime/variants/vb.py.) A featured block's M-step is a gradient
one over its feature weights (emc/runtime/features.py); its l2 penalty enters the objective here.
"""
from __future__ import annotations

import numpy as np

from emc.runtime.params import ParamLayout, ParamState, TableLayout, normalize_table
from emc.runtime.sparse_prior import maximize_row


def maximize(layout: ParamLayout, counts: np.ndarray, previous: ParamState, overrides: dict | None = None,
             out: np.ndarray | None = None) -> ParamState:
    """New parameters from expected counts (learned tables); fixed tables and weights are kept.
    `overrides` maps a table name to (smoothing, prior) replacing the spec's (the CLI's
    --smooth / --prior). The parameters go into `out` (a new array by default), which may be
    `counts` itself: the counts are then consumed, and no third table-sized array is needed."""
    theta = np.empty(layout.size) if out is None else out
    features: dict[str, np.ndarray] = {}
    for t in layout.tables:
        if t.featured is not None:
            features[t.name] = maximize_featured(t, counts, previous, theta)
        elif t.kind == "learned":
            smoothing, prior = _regularizer(t, overrides)
            maximize_table(counts[t.entries], t.entry_rows, t.rows, smoothing, prior, out=theta[t.entries])
        else:
            theta[t.entries] = previous.table_weights(t)
    return ParamState.plain(theta, layout, features)


def maximize_featured(t: TableLayout, counts: np.ndarray, previous: ParamState, theta: np.ndarray) -> np.ndarray:
    """The gradient M-step of a featured table (emc/runtime/features.py), warm-started from the
    previous weights; its probabilities go into theta (which may be `counts` itself)."""
    block = t.featured
    start = previous.features.get(t.name)
    if start is None:
        start = np.zeros(block.weight_shape)
    weights = block.maximize(t.values(counts).copy(), start)
    t.values(theta)[:] = np.exp(block.log_probabilities(weights))
    return weights


def _regularizer(t: TableLayout, overrides: dict | None):
    if overrides and t.name in overrides:
        return overrides[t.name]
    return t.smoothing, t.prior


def maximize_table(counts: np.ndarray, local_rows: np.ndarray | None, rows: int, smoothing: float, prior,
                   out: np.ndarray | None = None) -> np.ndarray:
    """The M-step for one table: its entries' counts and the row of each entry (None for a dense,
    outcome-major table); the new parameters go into `out` (a new array by default; it may be
    `counts` itself), with no other table-sized array made."""
    out = np.empty_like(counts) if out is None else out
    if prior is not None and prior.kind == "sparse":
        c = counts + smoothing if smoothing else counts
        if local_rows is None:
            local_rows = np.tile(np.arange(rows), len(counts) // rows)
        order = np.argsort(local_rows, kind="stable")
        bounds = np.searchsorted(local_rows[order], np.arange(rows + 1))
        for r in range(rows):
            members = order[bounds[r]:bounds[r + 1]]
            if len(members):
                out[members] = maximize_row(c[members], prior.alpha, prior.beta)
        return out
    np.add(counts, smoothing, out=out)
    if prior is not None and prior.kind == "dirichlet":
        out += prior.alpha - 1.0
        np.maximum(out, 0.0, out=out)
    return normalize_table(out, local_rows, rows, out=out)


def log_prior(layout: ParamLayout, params: ParamState, overrides: dict | None = None) -> float:
    """The log-prior term of the MAP objective (up to a constant), so that batch EM is monotone
    in log-likelihood + log-prior."""
    weights = None
    total = -sum(t.featured.penalty(params.features[t.name]) for t in layout.featured() if t.name in params.features)
    for t in layout.learned():
        smoothing, prior = _regularizer(t, overrides)
        if (not smoothing and prior is None) or t.featured is not None:
            continue
        if weights is None:
            weights = params.weights(layout)
        p = weights[t.entries]
        if smoothing:
            total += smoothing * float(np.log(np.maximum(p, 1e-300)).sum())
        if prior is not None and prior.kind == "dirichlet":
            total += (prior.alpha - 1.0) * float(np.log(np.maximum(p, 1e-300)).sum())
        elif prior is not None and prior.kind == "sparse":
            total += prior.alpha * float(np.exp(-p / prior.beta).sum())
    return total
