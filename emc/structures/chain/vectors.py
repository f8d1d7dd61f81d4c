"""Vector values for the chain DPs' inner loops: LANES doubles in one register, through numba
intrinsics (numba has no vector type).

LLVM vectorises the DPs' unit-stride loops by itself, but a loop of a few vectors (K = 45: six)
inside the loop over previous states is dominated by what it adds around them: runtime checks
that the arrays it reads and writes do not overlap, run before every sweep (a third of the
single-sequence forward pass's samples), and a value kept across sweeps goes back to memory each
time. Written with these, a loop is the vector instructions alone, and a value can stay in a
register for a whole reduction (emc/structures/chain/products.py).

Each operation is one LLVM instruction with the rounding a scalar expression under the DPs'
fastmath flags gets: `fma` is what `acc + x * v` contracts to, `pair` is what `x0 * v0 + x1 * v1`
contracts to (the first product fused, LLVM's choice), `add` and `times` are plain, `larger` is
semiring.plus under max (`a if a > b else b`). So a loop written with them sums in the order of
the scalar loop it replaces, bit for bit (tests/test_chain_wide.py).
"""
from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils, config
from numba.extending import intrinsic, models, register_model

from emc.structures.semiring import SUM


def _vector_doubles() -> int:
    """Doubles a vector register holds on the machine numba compiles for: 8 with AVX-512, else 4
    (twelve accumulators of 8 would not fit AVX2's sixteen registers)."""
    features = config.CPU_FEATURES or llvm.get_host_cpu_features().flatten()
    return 8 if "+avx512f" in features.split(",") else 4


LANES = _vector_doubles()
_VECTOR = ir.VectorType(ir.DoubleType(), LANES)


class _Lanes(types.Type):
    """LANES doubles in one (vector) register."""

    def __init__(self):
        super().__init__(name=f"float64x{LANES}")


lanes = _Lanes()


@register_model(_Lanes)
class _LanesModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _VECTOR)


@njit(inline="always")
def whole(K):
    """K rounded up to whole vectors: the padded width of rows read LANES at a time."""
    return (K + LANES - 1) // LANES * LANES


def _address(context, builder, array_type, array, i, j):
    """Where array[i, j] is, as a pointer to LANES doubles (no wraparound, no bounds check)."""
    ary = context.make_array(array_type)(context, builder, array)
    item = cgutils.get_item_pointer2(context, builder, data=ary.data, shape=cgutils.unpack_tuple(builder, ary.shape),
                                     strides=cgutils.unpack_tuple(builder, ary.strides), layout=array_type.layout,
                                     inds=[i, j], wraparound=False, boundscheck=False)
    return builder.bitcast(item, _VECTOR.as_pointer())


def _splat(builder, scalar):
    lane = ir.IntType(32)
    one = builder.insert_element(ir.Constant(_VECTOR, ir.Undefined), scalar, ir.Constant(lane, 0))
    return builder.shuffle_vector(one, ir.Constant(_VECTOR, ir.Undefined),
                                  ir.Constant(ir.VectorType(lane, LANES), [0] * LANES))


def _fused(builder, a, b, c):
    fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VECTOR, [_VECTOR] * 3),
                                         f"llvm.fma.v{LANES}f64")
    return builder.call(fma, [a, b, c])


@intrinsic
def zero(typingctx):
    def codegen(context, builder, signature, args):
        return ir.Constant(_VECTOR, [0.0] * LANES)
    return lanes(), codegen


@intrinsic
def load(typingctx, array, i, j):
    """array[i, j:j + LANES] (a row of unit stride)."""
    def codegen(context, builder, signature, args):
        return builder.load(_address(context, builder, signature.args[0], *args), align=8)
    return lanes(array, i, j), codegen


@intrinsic
def store(typingctx, array, i, j, value):
    """array[i, j:j + LANES] = value."""
    def codegen(context, builder, signature, args):
        builder.store(args[3], _address(context, builder, signature.args[0], *args[:3]), align=8)
        return context.get_dummy_value()
    return types.void(array, i, j, lanes), codegen


def _butterflies(builder, rows):
    """The LANES vectors `rows` transposed: log2(LANES) rounds of shuffles, each pairing the rows
    w apart and trading their blocks of w lanes (w = 1, 2, 4 ...)."""
    lane = ir.IntType(32)
    w = 1
    while w < LANES:
        for i in range(LANES):
            if i & w:
                continue
            low = [p if not p & w else LANES + p - w for p in range(LANES)]
            high = [p + w if not p & w else LANES + p for p in range(LANES)]
            a, b = rows[i], rows[i + w]
            rows[i] = builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(lane, LANES), low))
            rows[i + w] = builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(lane, LANES), high))
        w *= 2
    return rows


@intrinsic
def transpose(typingctx, source, i, j, rows, target, k, m):
    """target[k + p, m + q] = source[i + min(q, rows - 1), j + p] for p, q < LANES: a block of
    LANES x LANES values of a 2-D array transposed into another, in registers (loads, shuffles,
    stores: a copy a value at a time writes each one apart). A block of fewer source rows repeats
    its last one, so it reads nothing past them."""
    def codegen(context, builder, signature, args):
        src_type, _, _, _, dst_type, _, _ = signature.args
        src, i, j, rows, dst, k, m = args
        last = builder.add(i, builder.sub(rows, ir.Constant(rows.type, 1)))
        loaded = []
        for q in range(LANES):
            row = builder.add(i, ir.Constant(i.type, q))
            row = builder.select(builder.icmp_signed("<", row, last), row, last)
            loaded.append(builder.load(_address(context, builder, src_type, src, row, j), align=8))
        for p, vector in enumerate(_butterflies(builder, loaded)):
            row = builder.add(k, ir.Constant(k.type, p))
            builder.store(vector, _address(context, builder, dst_type, dst, row, m), align=8)
        return context.get_dummy_value()
    return types.void(source, i, j, rows, target, k, m), codegen


@intrinsic
def prefetch(typingctx, array, i):
    """Asks for the cache line holding array[i] (a 1-D array) ahead of its use: llvm.prefetch, a
    read, kept in every cache level. A hint, which never faults: i may lie past the array."""
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        byte = ir.IntType(8).as_pointer()
        hint = cgutils.get_or_insert_function(builder.module, ir.FunctionType(
            ir.VoidType(), [byte, ir.IntType(32), ir.IntType(32), ir.IntType(32)]), "llvm.prefetch.p0i8")
        where = builder.bitcast(builder.gep(data, [args[1]]), byte)
        builder.call(hint, [where] + [ir.Constant(ir.IntType(32), v) for v in (0, 3, 1)])
        return context.get_dummy_value()
    return types.void(array, types.int64), codegen


@intrinsic
def at(typingctx, array, i):
    """array[i] of a 1-D array, a scalar read without numba's wraparound of negative indices
    (a shift, an and and an add before every read of a product's left operand)."""
    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.load(builder.gep(ary.data, [args[1]]))
    return array.dtype(array, i), codegen


@intrinsic
def fma(typingctx, scalar, vector, acc):
    """acc + scalar * vector, rounded once per lane."""
    def codegen(context, builder, signature, args):
        return _fused(builder, _splat(builder, args[0]), args[1], args[2])
    return lanes(types.float64, lanes, lanes), codegen


@intrinsic
def pair(typingctx, x0, v0, x1, v1):
    """x0 v0 + x1 v1 as LLVM contracts it: fma(x0, v0, x1 v1)."""
    def codegen(context, builder, signature, args):
        second = builder.fmul(_splat(builder, args[2]), args[3])
        return _fused(builder, _splat(builder, args[0]), args[1], second)
    return lanes(types.float64, lanes, types.float64, lanes), codegen


@intrinsic
def scaled(typingctx, scalar, vector):
    """scalar * vector."""
    def codegen(context, builder, signature, args):
        return builder.fmul(_splat(builder, args[0]), args[1])
    return lanes(types.float64, lanes), codegen


@intrinsic
def times(typingctx, a, b):
    """a * b, lane by lane."""
    def codegen(context, builder, signature, args):
        return builder.fmul(args[0], args[1])
    return lanes(lanes, lanes), codegen


@intrinsic
def add(typingctx, a, b):
    def codegen(context, builder, signature, args):
        return builder.fadd(args[0], args[1])
    return lanes(lanes, lanes), codegen


@intrinsic
def total(typingctx, vector):
    """The sum of the lanes, in a fixed tree: (lane 0 + lane 1) + (lane 2 + lane 3), and so on."""
    def codegen(context, builder, signature, args):
        values = [builder.extract_element(args[0], ir.Constant(ir.IntType(32), i)) for i in range(LANES)]
        while len(values) > 1:
            values = [builder.fadd(values[i], values[i + 1]) for i in range(0, len(values), 2)]
        return values[0]
    return types.float64(lanes), codegen


@intrinsic
def larger(typingctx, a, b):
    """a if a > b else b, lane by lane (semiring.plus under max)."""
    def codegen(context, builder, signature, args):
        return builder.select(builder.fcmp_ordered(">", args[0], args[1]), args[0], args[1])
    return lanes(lanes, lanes), codegen


@njit(inline="always")
def plus(semiring, a, b):
    """semiring.plus, lane by lane."""
    if semiring == SUM:
        return add(a, b)
    return larger(a, b)


@njit(inline="always")
def plus_pair(semiring, x0, v0, x1, v1):
    """x0 v0 (+) x1 v1."""
    if semiring == SUM:
        return pair(x0, v0, x1, v1)
    return larger(scaled(x0, v0), scaled(x1, v1))


@njit(inline="always")
def plus_times(semiring, x, v, acc):
    """acc (+) x v."""
    if semiring == SUM:
        return fma(x, v, acc)
    return larger(acc, scaled(x, v))
