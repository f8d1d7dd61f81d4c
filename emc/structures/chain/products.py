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


# A wider tile for products whose result rows are long (a rule program's lanes, emc/structures/
# rules/contract.py: K rows of up to 128 lanes): 5 rows x 4 vectors, 20 accumulators, which only
# AVX-512's 32 registers hold. Over 45 x 46 weights times 46 x 128 lanes it ran at 109 GFLOP/s
# where `multiply`'s 4 x 3 tile ran at 82 (128 lanes are 16 vectors: five panels of three and one
# of a single vector computed as three); bit-identical to it (the same sums in the same order).
WIDE_ROWS, WIDE_VECTORS = 5, 4
WIDE_COLUMNS = WIDE_VECTORS * LANES


@njit(inline="always")
def _wide_start(C, row, columns, add):
    """A row of the wide tile's accumulators: zero, or the row of C it adds to."""
    if not add:
        z = zero()
        return z, z, z, z
    return load(C, row, columns[0]), load(C, row, columns[1]), load(C, row, columns[2]), load(C, row, columns[3])


@njit(inline="always")
def _wide_store(C, row, columns, vectors, v0, v1, v2, v3):
    _store_row(C, row, columns, vectors, v0, v1, v2)
    if vectors > 3:
        store(C, row, columns[3], v3)


@njit(inline="always")
def _wide_tile(A, a, row_step, j_step, rows, M, m, n, C, c, k, vectors, add):
    """_tile's sums over WIDE_ROWS rows and WIDE_VECTORS vectors (M's columns are C's)."""
    last = (vectors - 1) * LANES
    columns = (k, k + min(LANES, last), k + min(2 * LANES, last), k + min(3 * LANES, last))
    a1, a2 = a + min(1, rows - 1) * row_step, a + min(2, rows - 1) * row_step
    a3, a4 = a + min(3, rows - 1) * row_step, a + min(4, rows - 1) * row_step
    c1, c2, c3, c4 = c + min(1, rows - 1), c + min(2, rows - 1), c + min(3, rows - 1), c + min(4, rows - 1)
    p0, p1, p2, p3 = _wide_start(C, c, columns, add)
    q0, q1, q2, q3 = _wide_start(C, c1, columns, add)
    r0, r1, r2, r3 = _wide_start(C, c2, columns, add)
    s0, s1, s2, s3 = _wide_start(C, c3, columns, add)
    t0, t1, t2, t3 = _wide_start(C, c4, columns, add)
    for j in range(n):
        row, step = m + j, j * j_step
        v0, v1 = load(M, row, columns[0]), load(M, row, columns[1])
        v2, v3 = load(M, row, columns[2]), load(M, row, columns[3])
        x = at(A, a + step)
        p0, p1, p2, p3 = fma(x, v0, p0), fma(x, v1, p1), fma(x, v2, p2), fma(x, v3, p3)
        x = at(A, a1 + step)
        q0, q1, q2, q3 = fma(x, v0, q0), fma(x, v1, q1), fma(x, v2, q2), fma(x, v3, q3)
        x = at(A, a2 + step)
        r0, r1, r2, r3 = fma(x, v0, r0), fma(x, v1, r1), fma(x, v2, r2), fma(x, v3, r3)
        x = at(A, a3 + step)
        s0, s1, s2, s3 = fma(x, v0, s0), fma(x, v1, s1), fma(x, v2, s2), fma(x, v3, s3)
        x = at(A, a4 + step)
        t0, t1, t2, t3 = fma(x, v0, t0), fma(x, v1, t1), fma(x, v2, t2), fma(x, v3, t3)
    _wide_store(C, c, columns, vectors, p0, p1, p2, p3)
    if rows > 1:
        _wide_store(C, c1, columns, vectors, q0, q1, q2, q3)
    if rows > 2:
        _wide_store(C, c2, columns, vectors, r0, r1, r2, r3)
    if rows > 3:
        _wide_store(C, c3, columns, vectors, s0, s1, s2, s3)
    if rows > 4:
        _wide_store(C, c4, columns, vectors, t0, t1, t2, t3)


@njit(cache=True)
def multiply_wide(A, a, row_step, j_step, rows, M, m, n, C, c, add):
    """multiply's C[c + r] (+)= sum_{j < n} A[a + r row_step + j j_step] M[m + j] with the wide
    tile; M's rows as wide as C's (padded_width columns, the padding zero). AVX-512 only (on
    AVX2 its accumulators would not fit the registers: callers take `multiply` there)."""
    width = C.shape[1]
    for panel in range((width + WIDE_COLUMNS - 1) // WIDE_COLUMNS):
        k = panel * WIDE_COLUMNS
        vectors = min(WIDE_VECTORS, (width - k) // LANES)
        for first in range(0, rows, WIDE_ROWS):
            _wide_tile(A, a + first * row_step, row_step, j_step, min(WIDE_ROWS, rows - first), M, m, n, C,
                       c + first, k, vectors, add)
