"""Small matrix products for the batched chain DP (dp.marginals_batch), held in registers.

At a few dozen states the batched DP's products are (up to 64 rows) x K times K x K, where
OpenBLAS's small-matrix path spends as long packing and setting up as multiplying: 45-46 GFLOP/s
at K = 45 on an AVX-512 machine (numpy's OpenBLAS picks its AVX2 kernel there), about a third of
the core's peak. The products here keep a 4 x 24 tile of the result in twelve vector registers
for the whole reduction and read each operand once per tile: 120-125 GFLOP/s at K = 45, 64 rows,
on the same machine (one thread, the same sums in the same order as BLAS's, bit-identical there).

The tiles are written with emc/structures/chain/vectors.py's vector values, which LLVM keeps in
registers (loop-carried values, not memory). A product's result rows and its right operand are
padded to `padded_width(K)` columns, whole vectors; the padding of the right operand must be zero
(it is what the padded result columns hold), and a caller never reads the result's padding.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from emc.structures.chain.vectors import LANES, at, fma, load, store, whole, zero

TILE_ROWS, TILE_VECTORS = 4, 3  # 12 accumulators + 3 operand vectors + a broadcast: 16 registers
TILE_COLUMNS = TILE_VECTORS * LANES


@njit(inline="always")
def padded_width(K):
    """The columns of a product's right operand and result for K states: whole vectors."""
    return whole(K)


@njit(cache=True)
def panels(matrix, width):
    """matrix (K x K) as a product's right operand that every product reads whole: its columns in
    panels of TILE_COLUMNS, one after the other (row p K + j holds matrix[j, p TILE_COLUMNS:(p + 1)
    TILE_COLUMNS], zero-padded), so a tile reads its panel as one stream. Read in place, a panel's
    rows lie a row of the matrix apart: at K = 1024 a page apart each, and the forward product ran
    at 45 GFLOP/s where BLAS's packed ones run at 58."""
    K = matrix.shape[0]
    count = (width + TILE_COLUMNS - 1) // TILE_COLUMNS
    out = np.zeros((count * K, TILE_COLUMNS))
    for p in range(count):
        for j in range(K):
            row = out[p * K + j]
            for q in range(min(TILE_COLUMNS, K - p * TILE_COLUMNS)):
                row[q] = matrix[j, p * TILE_COLUMNS + q]
    return out


@njit(inline="always")
def _start(C, row, rows, columns, add):
    """A tile's accumulators: zero, or the rows of C it adds to (a row past `rows` repeats the last)."""
    if not add:
        z = zero()
        return z, z, z, z, z, z, z, z, z, z, z, z
    r1, r2, r3 = row + min(1, rows - 1), row + min(2, rows - 1), row + min(3, rows - 1)
    k0, k1, k2 = columns
    return (load(C, row, k0), load(C, row, k1), load(C, row, k2), load(C, r1, k0), load(C, r1, k1),
            load(C, r1, k2), load(C, r2, k0), load(C, r2, k1), load(C, r2, k2), load(C, r3, k0),
            load(C, r3, k1), load(C, r3, k2))


@njit(inline="always")
def _store_row(C, row, columns, vectors, v0, v1, v2):
    store(C, row, columns[0], v0)
    if vectors > 1:
        store(C, row, columns[1], v1)
    if vectors > 2:
        store(C, row, columns[2], v2)


@njit(inline="always")
def _tile(A, a, row_step, j_step, rows, M, m, mk, n, C, c, k, vectors, add):
    """C[c + r, k + columns] (+)= sum_{j < n} A[a + r row_step + j j_step] M[m + j, mk + columns]
    for r < rows (1 to TILE_ROWS), the columns `vectors` (1 to TILE_VECTORS) vectors. Short of a
    whole tile, the last row and vector are computed again in the missing ones' registers and not
    stored: one tile shape, no remainder loops."""
    last = (vectors - 1) * LANES
    columns = (k, k + min(LANES, last), k + min(2 * LANES, last))
    read = (mk, mk + min(LANES, last), mk + min(2 * LANES, last))  # M's columns
    a1 = a + min(1, rows - 1) * row_step
    a2 = a + min(2, rows - 1) * row_step
    a3 = a + min(3, rows - 1) * row_step
    p0, p1, p2, q0, q1, q2, r0, r1, r2, s0, s1, s2 = _start(C, c, rows, columns, add)
    for j in range(n):
        v0, v1, v2 = load(M, m + j, read[0]), load(M, m + j, read[1]), load(M, m + j, read[2])
        step = j * j_step
        x = at(A, a + step)
        p0, p1, p2 = fma(x, v0, p0), fma(x, v1, p1), fma(x, v2, p2)
        x = at(A, a1 + step)
        q0, q1, q2 = fma(x, v0, q0), fma(x, v1, q1), fma(x, v2, q2)
        x = at(A, a2 + step)
        r0, r1, r2 = fma(x, v0, r0), fma(x, v1, r1), fma(x, v2, r2)
        x = at(A, a3 + step)
        s0, s1, s2 = fma(x, v0, s0), fma(x, v1, s1), fma(x, v2, s2)
    _store_row(C, c, columns, vectors, p0, p1, p2)
    if rows > 1:
        _store_row(C, c + 1, columns, vectors, q0, q1, q2)
    if rows > 2:
        _store_row(C, c + 2, columns, vectors, r0, r1, r2)
    if rows > 3:
        _store_row(C, c + 3, columns, vectors, s0, s1, s2)


@njit(cache=True)
def multiply(A, a, row_step, j_step, rows, M, m, panel_rows, n, C, c, add):
    """C[c + r] = sum_{j < n} A[a + r row_step + j j_step] M_j for r < rows (add = 1: C[c + r] +=
    it; an int64, not a bool, as a literal True and False would compile this twice). The left
    operand is read from the flat array A: a C-contiguous matrix's rows (row_step = its columns,
    j_step = 1) or its columns (the other way round). The right one's rows M_j are M[m + j] (M
    with padded_width columns, the padding zero; panel_rows = 0) or laid out by `panels`
    (panel_rows = its K, m = 0). C has padded_width columns. The sums run over j in order, as
    BLAS's do. Column panels outermost: a panel of M stays in cache while the rows stream by."""
    width = C.shape[1]
    for panel in range((width + TILE_COLUMNS - 1) // TILE_COLUMNS):
        k = panel * TILE_COLUMNS
        vectors = min(TILE_VECTORS, (width - k) // LANES)
        m_row, m_column = (m + panel * panel_rows, 0) if panel_rows > 0 else (m, k)
        for first in range(0, rows, TILE_ROWS):
            _tile(A, a + first * row_step, row_step, j_step, min(TILE_ROWS, rows - first), M, m_row, m_column, n, C,
                  c + first, k, vectors, add)
