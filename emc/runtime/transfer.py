"""Starting a fit from a saved model (`emc fit --init RUN`) on data that may hold new values.

The new corpus is read with the saved vocabularies extended, so every id the saved model knows
keeps its meaning and new values come after. Each table's saved block is copied into the new
table; entries for new values start at the smallest probability of their row; rows are then
renormalised. A featured table keeps its saved weights (when fitted with the same features) or gets
weights fitted to its copied probabilities.
"""
from __future__ import annotations

import numpy as np

from emc.runtime.blocks.features import FeaturedBlock
from emc.runtime.model_dir import SavedRun
from emc.runtime.params import ParamLayout, ParamState, TableLayout, normalize_rows
from emc.runtime.problem import Problem
from emc.spec.errors import EmcError


def transfer_params(saved: SavedRun, problem: Problem) -> ParamState:
    old_layout = ParamLayout.build(saved.model.checked, _saved_sizes(saved), saved.sparse)
    layout = problem.layout
    theta = problem.fixed_theta.copy()
    for table in layout.learned():
        try:
            old = old_layout.table(table.name)
        except KeyError:
            raise EmcError(f"--init {saved.path}: the saved model has no table '{table.name}'") from None
        if old.rows > table.rows or old.outcomes > table.outcomes:
            raise EmcError(f"--init {saved.path}: table '{table.name}' is {old.outcomes}x{old.rows} there but "
                           f"{table.outcomes}x{table.rows} here (different structure arguments?)")
        saved_values = saved.theta[old.entries]
        # match entries by (row, outcome): ids the saved model knows kept their meaning
        old_keys = old.local_outcomes().astype(np.int64) * table.rows + old.local_rows()
        new_keys = table.local_outcomes().astype(np.int64) * table.rows + table.local_rows()
        order = np.argsort(old_keys)
        found = np.searchsorted(old_keys[order], new_keys)
        found = np.minimum(found, len(order) - 1)
        known = old_keys[order][found] == new_keys
        values = np.full(table.size, saved_values.min(initial=1.0))
        values[known] = saved_values[order][found[known]]
        theta[table.entries] = values
    params = ParamState.plain(normalize_rows(theta, layout, layout.learned()), layout)
    return _featured_weights(saved, layout, params)


def _featured_weights(saved: SavedRun, layout: ParamLayout, params: ParamState) -> ParamState:
    """Each featured table's starting weights. A table the saved model fitted with the same
    features keeps its weights: the new vocabulary extends the saved one, so the saved features
    keep their columns, and features first seen in the new data weigh nothing (as at decode time);
    the table's probabilities then follow from the weights, new words' included. Otherwise (a
    plain or differently featured saved table, or a sparse pair table, whose entries depend on the
    data) the weights are fitted to the copied probabilities, as a random start's are. Either way
    the weights and the probabilities agree: from zero weights, the first (partial) M-step would
    fall below the start."""
    for t in layout.featured():
        weights = _saved_weights(saved, t)
        if weights is None:
            t.block.start(t, params)
            continue
        start = np.zeros(t.featured.weight_shape)
        start[:weights.shape[0]] = weights
        params.features[t.name] = start
        t.featured.probabilities(start, out=t.values(params.theta))
    return params


def _saved_weights(saved: SavedRun, t: TableLayout) -> np.ndarray | None:
    """The saved weights of a featured token table, if they were fitted with the same features."""
    weights = saved.features.get(t.name)
    if weights is None or not isinstance(t.featured, FeaturedBlock):
        return None
    factor = next(f for f in saved.model.checked.factors if f.table == t.name)
    same = {f.text for f in factor.features} == {f.text for f in t.featured.features}
    fits = weights.ndim == 2 and weights.shape[1] == t.rows and weights.shape[0] <= t.featured.n_features
    return weights if same and fits else None


def _saved_sizes(saved: SavedRun) -> dict[str, int]:
    return dict(saved.info["sizes"])
