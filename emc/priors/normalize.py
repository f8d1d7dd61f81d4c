"""A table's rows divided by their sums: what every prior's M-step ends with, and how the runtime
makes random starts."""
from __future__ import annotations

import numpy as np
from numba import njit

CHUNK = 1 << 20  # entries of a sparse table a numpy step takes at once: no temporary as long as the table


def normalize_table(values: np.ndarray, local_rows: np.ndarray | None, rows: int,
                    out: np.ndarray | None = None) -> np.ndarray:
    """Each row of one table's entries divided by its sum (a row summing to 0 becomes uniform),
    into `out` (which may be `values`; a new array by default). `local_rows` is the row of each
    entry, or None for a dense table, which is then read as its (outcomes, rows) matrix, with no
    per-entry index made."""
    out = np.empty(len(values)) if out is None else out
    if local_rows is None:
        matrix, result = values.reshape(-1, rows), out.reshape(-1, rows)
        total = matrix.sum(axis=0)
        empty = total <= 0
        total[empty] = 1.0
        np.divide(matrix, total, out=result)
        result[:, empty] = 1.0 / matrix.shape[0]
        return out
    return _normalize_rows(values, local_rows, rows, out)


@njit(cache=True)
def _normalize_rows(values, local_rows, rows, out):
    """The sparse case in two passes over the entries (the rows' sums, then the division), where
    numpy took five and a temporary a chunk: 0.050 against 0.095 s on the 10.5M entries of
    bench/alignment_speed.py's t-table at 100k pairs, one thread."""
    total = np.zeros(rows)
    size = np.zeros(rows, np.int64)
    for i in range(values.shape[0]):
        total[local_rows[i]] += values[i]
        size[local_rows[i]] += 1
    for i in range(values.shape[0]):
        row = local_rows[i]
        out[i] = values[i] / total[row] if total[row] > 0.0 else 1.0 / size[row]
    return out
