"""A constraint's duals across a kill: what a resumed fit reads back from its checkpoint."""
from __future__ import annotations

import numpy as np

from emc.spec.errors import EmcError


def restored_duals(extra: dict, key: str, current: np.ndarray, name: str, unit: str) -> np.ndarray:
    """A constraint's duals from a fit's state (a resumed fit's checkpoint), else `current`;
    refused when their shape is not this data's (`unit`: what one dual stands for)."""
    duals = extra.get(key)
    if duals is None:
        return current
    if np.shape(duals) != np.shape(current):
        raise EmcError(f"the checkpoint's duals of constraint '{name}' do not fit this data "
                       f"({np.shape(duals)[0]} {unit}, the data has {np.shape(current)[0]})")
    return np.array(duals, np.float64)
