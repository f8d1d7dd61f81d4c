"""Starting a fit from a saved model (`emc fit --init RUN`) on data that may hold new values.

The new corpus is read with the saved vocabularies extended, so every id the saved model knows
keeps its meaning and new values come after. Each table's saved block is copied into the new
table; entries for new values start at the smallest probability of their row; rows are then
renormalised.
"""
from __future__ import annotations

import numpy as np

from emc.runtime.model_dir import SavedRun
from emc.runtime.params import ParamLayout, ParamState, normalize_rows
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
        old_keys = old.local_outcomes() * table.rows + old.local_rows()
        new_keys = table.local_outcomes() * table.rows + table.local_rows()
        order = np.argsort(old_keys)
        found = np.searchsorted(old_keys[order], new_keys)
        found = np.minimum(found, len(order) - 1)
        known = old_keys[order][found] == new_keys
        values = np.full(table.size, saved_values.min(initial=1.0))
        values[known] = saved_values[order][found[known]]
        theta[table.entries] = values
    return ParamState.plain(normalize_rows(theta, layout, layout.learned()), layout)


def _saved_sizes(saved: SavedRun) -> dict[str, int]:
    return dict(saved.info["sizes"])
