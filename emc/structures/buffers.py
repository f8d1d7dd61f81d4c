"""Append-only buffers for compiled loops, shared by structures' index builders and the runtime's
online passes (a structure never imports the runtime, so the helper lives at this level)."""
import numpy as np
from numba import njit


@njit(cache=True)
def grow(values, size):
    """`values` copied into an array of at least `size` (twice as long, so a run of appends costs
    amortised constant time each); for append-only buffers in compiled loops."""
    grown = np.empty(max(2 * values.shape[0], size), values.dtype)
    grown[:values.shape[0]] = values
    return grown
