"""Append-only buffers for compiled loops, shared by structures' index builders and the runtime's
online passes (a structure never imports the runtime, so the helper lives at this level), and
copy_into, the array copy compiled code uses instead of slice assignment."""
import numpy as np
from numba import njit


@njit(inline="always")
def copy_into(target, source):
    """target[i] = source[i] for i < len(source), for 1-d arrays or views. Not `target[:] = source`:
    numba compiles a slice assignment from an array with a shape check whose error message is
    formatted in compiled code (str, join: about 2 s of every cold start, then optimised again
    in every function that calls one that has it)."""
    for i in range(source.shape[0]):
        target[i] = source[i]


@njit(cache=True)
def grow(values, size):
    """`values` copied into an array of at least `size` (twice as long, so a run of appends costs
    amortised constant time each); for append-only buffers in compiled loops."""
    grown = np.empty(max(2 * values.shape[0], size), values.dtype)
    copy_into(grown, values)
    return grown
