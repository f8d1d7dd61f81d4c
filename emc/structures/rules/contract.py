"""Matrix products for a rule's sum over a state when its examples run as lanes.

A rule like the chain's `state(t, k) += state(t - 1, j)`, scored by a small table's P(k | j),
sums, for each head state k and each lane, the weights W[k, j] times the body's values over j:
at one level that is a matrix product G = W C, with C[j, lane] the body's row of the chart (the
lanes are its columns: emc/structures/rules/lanes.py lays cell c of lane l at c * ln + l). The
outside pass takes the same products transposed: the body's outside gains W^T D and the table's
counts D C^T, with D[k, lane] the head's outside times the rule's other factors.

W[k, j] = weights[start + k * stride + j] (a table prepare() wrote out: outcome-major) for k in
klo..khi and j in jlo..jhi; the body's rows are chart[(base + j - jlo) * ln + lane]. W and W^T
are taken contiguous, once per pass when the bounds do not change with the level (contraction.py).

The products are the chain's register tiles (emc/structures/chain/products.py: at the chain's 45
states they ran 2.5x as fast as numpy's OpenBLAS, whose small products spend as long packing as
multiplying). The tiles read and write rows of whole vectors: the lanes' rows are, when ln is a
multiple of vectors.LANES (a full group of 128 lanes); a shorter group's rows are copied into
zero-padded ones first (a copy of a row per product, against a row's worth of multiply-adds per
state). D C^T sums over the lanes, so C is read transposed, copied into rows of a lane each.
"""
import numpy as np
from numba import njit

from emc.structures.chain.products import multiply, padded_width

SET, ADD = np.int64(0), np.int64(1)  # a product's result replaces its target's rows, or adds to them


@njit(cache=True)
def weight_block(weights, start, stride, klo, khi, jlo, jhi):
    """W, contiguous: rows k = klo..khi, columns j = jlo..jhi (none when a range is empty)."""
    rows, columns = max(0, khi - klo + 1), max(0, jhi - jlo + 1)
    first = start + klo * stride
    block = weights[first:first + rows * stride].reshape(rows, stride)
    return np.ascontiguousarray(block[:, jlo:jlo + columns])


@njit(cache=True)
def transposed(block):
    return np.ascontiguousarray(block.T)


@njit(cache=True, inline="always")
def _rows(chart, ln, base, count):
    return chart[base * ln:(base + count) * ln].reshape(count, ln)


@njit(cache=True)
def _padded(rows):
    """rows (count x ln) with their columns padded with zeros to whole vectors: as they are when
    they are whole already."""
    count, ln = rows.shape
    width = padded_width(ln)
    if width == ln:
        return rows
    out = np.zeros((count, width))
    for r in range(count):
        for lane in range(ln):
            out[r, lane] = rows[r, lane]
    return out


@njit(cache=True)
def _times(block, right, target, add):
    """target (+)= block @ right: right and target with the same whole-vector width."""
    rows, n = block.shape
    multiply(block.reshape(block.size), np.int64(0), n, np.int64(1), rows, right, np.int64(0), np.int64(0), n,
             target, np.int64(0), add)


@njit(cache=True)
def contract_rows(block, chart, ln, base):
    """G (flat, row k - klo of ln lanes) = W C."""
    rows = block.shape[0]
    body = _padded(_rows(chart, ln, base, block.shape[1]))
    width = body.shape[1]
    g = np.empty((rows, width))
    _times(block, body, g, SET)
    if width == ln:
        return g.reshape(rows * ln)
    flat = np.empty(rows * ln)
    for k in range(rows):
        for lane in range(ln):
            flat[k * ln + lane] = g[k, lane]
    return flat


@njit(cache=True)
def scatter_rows(block_t, out, ln, base, heads):
    """The body's outside rows += W^T D, D = heads (flat, row k - klo of ln lanes)."""
    rows = _rows(out, ln, base, block_t.shape[0])
    d = _padded(heads.reshape(block_t.shape[1], ln))
    if d.shape[1] == ln:
        _times(block_t, d, rows, ADD)
        return
    gained = np.empty((rows.shape[0], d.shape[1]))
    _times(block_t, d, gained, SET)
    for j in range(rows.shape[0]):
        for lane in range(ln):
            rows[j, lane] += gained[j, lane]


@njit(cache=True)
def _by_lane(rows):
    """rows (count x ln) transposed: row `lane` holds the lane's values, zero-padded to whole vectors."""
    count, ln = rows.shape
    out = np.zeros((ln, padded_width(count)))
    for r in range(count):
        for lane in range(ln):
            out[lane, r] = rows[r, lane]
    return out


@njit(cache=True)
def count_rows(counts, stride, klo, khi, jlo, jhi, chart, ln, base, heads):
    """The table's local counts (laid out as the table) += D C^T, over the lanes."""
    rows, columns = khi - klo + 1, jhi - jlo + 1
    body = _by_lane(_rows(chart, ln, base, columns))
    block = np.empty((rows, body.shape[1]))
    multiply(heads, np.int64(0), ln, np.int64(1), rows, body, np.int64(0), np.int64(0), ln, block, np.int64(0), SET)
    for k in range(rows):
        for j in range(columns):
            counts[(klo + k) * stride + jlo + j] += block[k, j]
