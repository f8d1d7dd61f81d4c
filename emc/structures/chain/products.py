"""Small matrix products for the batched chain DP (dp.marginals_batch), held in registers.

At a few dozen states the batched DP's products are (up to 64 rows) x K times K x K, where
OpenBLAS's small-matrix path spends as long packing and setting up as multiplying: 45-46 GFLOP/s
at K = 45 on an AVX-512 machine (numpy's OpenBLAS picks its AVX2 kernel there), about a third of
the core's peak. The products here keep a 4 x 24 tile of the result in twelve vector registers
for the whole reduction and read each operand once per tile: 120-125 GFLOP/s at K = 45, 64 rows,
on the same machine (one thread, the same sums in the same order as BLAS's, bit-identical there).

numba has no vector type, so `_Lanes` is one: LANES doubles (an AVX-512 register; LLVM splits it
into two where the machine has AVX2 only) with four intrinsics, `_zero`, `_load`, `_store` and
`_fma`, which LLVM keeps in registers (loop-carried values, not memory). A product's result rows
and its right operand are padded to `padded_width(K)` columns, whole vectors; the padding of the
right operand must be zero (it is what the padded result columns hold), and a caller never reads
the result's padding.
"""
from __future__ import annotations

import numpy as np
import llvmlite.binding as llvm
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils, config
from numba.extending import intrinsic, models, register_model

def _vector_doubles() -> int:
    """Doubles a vector register holds on the machine numba compiles for: 8 with AVX-512, else 4
    (twelve accumulators of 8 would not fit AVX2's sixteen registers)."""
    features = config.CPU_FEATURES or llvm.get_host_cpu_features().flatten()
    return 8 if "+avx512f" in features.split(",") else 4


LANES = _vector_doubles()
TILE_ROWS, TILE_VECTORS = 4, 3  # 12 accumulators + 3 operand vectors + a broadcast: 16 registers
TILE_COLUMNS = TILE_VECTORS * LANES

_VECTOR = ir.VectorType(ir.DoubleType(), LANES)


class _Lanes(types.Type):
    """LANES doubles in one (vector) register."""

    def __init__(self):
        super().__init__(name=f"float64x{LANES}")


_lanes = _Lanes()


@register_model(_Lanes)
class _LanesModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _VECTOR)


def _address(context, builder, array_type, array, i, j):
    """Where array[i, j] is, as a pointer to LANES doubles (no wraparound, no bounds check)."""
    ary = context.make_array(array_type)(context, builder, array)
    item = cgutils.get_item_pointer2(context, builder, data=ary.data, shape=cgutils.unpack_tuple(builder, ary.shape),
                                     strides=cgutils.unpack_tuple(builder, ary.strides), layout=array_type.layout,
                                     inds=[i, j], wraparound=False, boundscheck=False)
    return builder.bitcast(item, _VECTOR.as_pointer())


@intrinsic
def _zero(typingctx):
    def codegen(context, builder, signature, args):
        return ir.Constant(_VECTOR, [0.0] * LANES)
    return _lanes(), codegen


@intrinsic
def _load(typingctx, array, i, j):
    """array[i, j:j + LANES] (a row of unit stride)."""
    def codegen(context, builder, signature, args):
        return builder.load(_address(context, builder, signature.args[0], *args), align=8)
    return _lanes(array, i, j), codegen


@intrinsic
def _store(typingctx, array, i, j, value):
    """array[i, j:j + LANES] = value."""
    def codegen(context, builder, signature, args):
        builder.store(args[3], _address(context, builder, signature.args[0], *args[:3]), align=8)
        return context.get_dummy_value()
    return types.void(array, i, j, _lanes), codegen


@intrinsic
def _fma(typingctx, scalar, vector, acc):
    """acc + scalar * vector, rounded once per lane (as BLAS's kernels and fastmath's contract)."""
    def codegen(context, builder, signature, args):
        x, v, acc = args
        lane = ir.IntType(32)
        one = builder.insert_element(ir.Constant(_VECTOR, ir.Undefined), x, ir.Constant(lane, 0))
        splat = builder.shuffle_vector(one, ir.Constant(_VECTOR, ir.Undefined),
                                       ir.Constant(ir.VectorType(lane, LANES), [0] * LANES))
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VECTOR, [_VECTOR] * 3),
                                             f"llvm.fma.v{LANES}f64")
        return builder.call(fma, [splat, v, acc])
    return _lanes(types.float64, _lanes, _lanes), codegen


@njit(inline="always")
def padded_width(K):
    """The columns of a product's right operand and result for K states: whole vectors."""
    return (K + LANES - 1) // LANES * LANES


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
def _start(C, row, rows, k, add):
    """A tile's accumulators: zero, or the rows of C it adds to (a row past `rows` repeats the last)."""
    if not add:
        z = _zero()
        return z, z, z, z, z, z, z, z, z, z, z, z
    r1, r2, r3 = row + min(1, rows - 1), row + min(2, rows - 1), row + min(3, rows - 1)
    k1, k2 = k[1], k[2]
    k0 = k[0]
    return (_load(C, row, k0), _load(C, row, k1), _load(C, row, k2), _load(C, r1, k0), _load(C, r1, k1),
            _load(C, r1, k2), _load(C, r2, k0), _load(C, r2, k1), _load(C, r2, k2), _load(C, r3, k0),
            _load(C, r3, k1), _load(C, r3, k2))


@njit(inline="always")
def _store_row(C, row, k, vectors, v0, v1, v2):
    _store(C, row, k[0], v0)
    if vectors > 1:
        _store(C, row, k[1], v1)
    if vectors > 2:
        _store(C, row, k[2], v2)


@njit(inline="always")
def _tile(A, a, row_step, j_step, rows, M, m, mk, n, C, c, k, vectors, add):
    """C[c + r, k + columns] (+)= sum_{j < n} A[a + r row_step + j j_step] M[m + j, mk + columns]
    for r < rows (1 to TILE_ROWS), the columns `vectors` (1 to TILE_VECTORS) vectors. Short of a
    whole tile, the last row and vector are computed again in the missing ones' registers and not
    stored: one tile shape, no remainder loops."""
    last = (vectors - 1) * LANES
    at = (k, k + min(LANES, last), k + min(2 * LANES, last))
    mat = (mk, mk + min(LANES, last), mk + min(2 * LANES, last))
    a1 = a + min(1, rows - 1) * row_step
    a2 = a + min(2, rows - 1) * row_step
    a3 = a + min(3, rows - 1) * row_step
    p0, p1, p2, q0, q1, q2, r0, r1, r2, s0, s1, s2 = _start(C, c, rows, at, add)
    for j in range(n):
        v0, v1, v2 = _load(M, m + j, mat[0]), _load(M, m + j, mat[1]), _load(M, m + j, mat[2])
        step = j * j_step
        x = A[a + step]
        p0, p1, p2 = _fma(x, v0, p0), _fma(x, v1, p1), _fma(x, v2, p2)
        x = A[a1 + step]
        q0, q1, q2 = _fma(x, v0, q0), _fma(x, v1, q1), _fma(x, v2, q2)
        x = A[a2 + step]
        r0, r1, r2 = _fma(x, v0, r0), _fma(x, v1, r1), _fma(x, v2, r2)
        x = A[a3 + step]
        s0, s1, s2 = _fma(x, v0, s0), _fma(x, v1, s1), _fma(x, v2, s2)
    _store_row(C, c, at, vectors, p0, p1, p2)
    if rows > 1:
        _store_row(C, c + 1, at, vectors, q0, q1, q2)
    if rows > 2:
        _store_row(C, c + 2, at, vectors, r0, r1, r2)
    if rows > 3:
        _store_row(C, c + 3, at, vectors, s0, s1, s2)


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
