"""A table's rows divided by their sums: what every prior's M-step ends with, and how the runtime
makes random starts."""
from __future__ import annotations

import numpy as np

CHUNK = 1 << 20  # entries of a sparse table handled at once: no temporary as long as the table


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
    total, size = np.zeros(rows), np.zeros(rows, np.int64)
    for a in range(0, len(values), CHUNK):  # bincount copies its indices to int64: a chunk at a time
        total += np.bincount(local_rows[a:a + CHUNK], weights=values[a:a + CHUNK], minlength=rows)
        size += np.bincount(local_rows[a:a + CHUNK], minlength=rows)
    empty = total <= 0
    total[empty] = 1.0
    for a in range(0, len(values), CHUNK):
        chunk_rows = local_rows[a:a + CHUNK]
        chunk = out[a:a + CHUNK]
        np.divide(values[a:a + CHUNK], total[chunk_rows], out=chunk)
        uniform = empty[chunk_rows]
        if uniform.any():
            chunk[uniform] = 1.0 / size[chunk_rows[uniform]]
    return out
