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
multiplying), W C and W^T D with its wide tile on AVX-512 (the lanes' rows are long). The tiles
read and write rows of whole vectors: the lanes' rows are, when ln is a multiple of
vectors.LANES (a full group of 128 lanes); a shorter group's rows are copied into zero-padded ones
first (a copy of a row per product, against a row's worth of multiply-adds per state). D C^T sums
over the lanes, so C is read transposed, copied into rows of a lane each a block of vectors at a
time (vectors.transpose: copied one value at a time, the copy took 4 ms of the chain's E-step).
"""
import numpy as np
from numba import njit

from emc.structures.chain.products import (TILE_ROWS, TILE_VECTORS, WIDE_ROWS, WIDE_VECTORS, multiply,
                                           multiply_wide, padded_width)
from emc.structures.chain.vectors import LANES, transpose

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
def _times_wide(block, right, target, add):
    """target (+)= block @ right: right and target with the same whole-vector width."""
    rows, n = block.shape
    multiply_wide(block.reshape(block.size), np.int64(0), n, np.int64(1), rows, right, np.int64(0), n, target,
                  np.int64(0), add)


@njit(cache=True)
def _times_narrow(block, right, target, add):
    rows, n = block.shape
    multiply(block.reshape(block.size), np.int64(0), n, np.int64(1), rows, right, np.int64(0), np.int64(0), n,
             target, np.int64(0), add)


@njit(inline="always")
def _tiled(rows, vectors, tile_rows, tile_vectors):
    """The values a tile computes over rows x vectors, its last ones short of a tile included."""
    return (rows + tile_rows - 1) // tile_rows * tile_rows * ((vectors + tile_vectors - 1) // tile_vectors * tile_vectors)


@njit(cache=True)
def _times_best(block, right, target, add):
    """target (+)= block @ right with the tile that computes the fewest padded values: the wide
    tile but where the narrow one fits the rows and vectors better (3 or 6 vectors of lanes)."""
    rows, vectors = block.shape[0], target.shape[1] // LANES
    if _tiled(rows, vectors, TILE_ROWS, TILE_VECTORS) < _tiled(rows, vectors, WIDE_ROWS, WIDE_VECTORS):
        _times_narrow(block, right, target, add)
    else:
        _times_wide(block, right, target, add)


_times = _times_best if LANES == 8 else _times_narrow


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
    """rows (count x ln) transposed: row `lane` holds the lane's values, its padding to whole
    vectors left as it is (a product's padded result columns, which count_rows does not read)."""
    count, ln = rows.shape
    out = np.empty((ln, padded_width(count)))
    whole_lanes = ln // LANES * LANES
    for r in range(0, count, LANES):
        for lane in range(0, whole_lanes, LANES):
            transpose(rows, r, lane, min(LANES, count - r), out, lane, r)
    for r in range(count):  # the lanes short of a vector, a value at a time
        for lane in range(whole_lanes, ln):
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


@njit(cache=True)
def _lanes_by_row(by_lane, rows, ln, out):
    """out[r * ln + lane] = by_lane[lane, r] for r < rows, lane < ln: blocks of vectors transposed
    in registers, the rows and lanes short of a block a value at a time."""
    whole_rows, whole_lanes = rows // LANES * LANES, ln // LANES * LANES
    target = out[:whole_rows * ln].reshape(whole_rows, ln)
    for r in range(0, whole_rows, LANES):
        for lane in range(0, whole_lanes, LANES):
            transpose(by_lane, lane, r, LANES, target, r, lane)
    for r in range(rows):
        for lane in range(whole_lanes if r < whole_rows else 0, ln):
            out[np.uint64(r * ln + lane)] = by_lane[lane, r]


@njit(cache=True)
def _rows_by_lane(values, rows, ln, by_lane):
    """by_lane[lane, r] = values[r * ln + lane]: _lanes_by_row the other way."""
    whole_rows, whole_lanes = rows // LANES * LANES, ln // LANES * LANES
    source = values[:whole_rows * ln].reshape(whole_rows, ln)
    for r in range(0, whole_rows, LANES):
        for lane in range(0, whole_lanes, LANES):
            transpose(source, r, lane, LANES, by_lane, lane, r)
    for r in range(rows):
        for lane in range(whole_lanes if r < whole_rows else 0, ln):
            by_lane[lane, r] = values[np.uint64(r * ln + lane)]


@njit(cache=True)
def gather_rows(reader, tokens, ln, out):
    """out[r * ln + lane] = the table's weight of row r at outcome tokens[lane], for every row
    (emc/codegen/abi.py: read_hoisted through `reader`): each lane's token's row, read in one
    stride, laid out as the chart lays out a level's cells (lanes.py: TokenRows)."""
    theta, offset, rows, scale, add, inverse = reader
    by_lane = np.empty((ln, rows))
    for lane in range(ln):
        first = offset + tokens[np.uint64(lane)] * rows
        row = by_lane[lane]
        for r in range(rows):
            row[r] = (theta[np.uint64(first + r)] * scale + add) * inverse[np.uint64(r)]
    _lanes_by_row(by_lane, rows, ln, out)


@njit(cache=True)
def add_token_rows(dense, mark, touched, listed, start, rows, tokens, ln, sums, written):
    """The counts a pass summed over the lanes into a token's row (sums[r * ln + lane] for the rows
    r `written` marks), each lane's into its token's row of the counts, dense[start + tokens[lane]
    * rows + r], a lane's row at a time; listed when tracked (returns the new count listed). Leaves
    sums and written zero for the next level."""
    tracked = touched.shape[0] > 0
    by_lane = np.empty((ln, rows))
    _rows_by_lane(sums, rows, ln, by_lane)
    for lane in range(ln):
        first = start + tokens[np.uint64(lane)] * rows
        column, values = dense[first:first + rows], by_lane[lane]
        for r in range(rows):  # an unwritten row's sums are zero
            column[r] += values[r]
        if tracked:
            for r in range(rows):
                cell = first + r
                if written[np.uint64(r)] != 0 and mark[cell] == 0:
                    mark[cell] = 1
                    listed += 1
                    touched[listed] = cell
    for q in range(rows * ln):
        sums[np.uint64(q)] = 0.0
    for r in range(rows):
        written[np.uint64(r)] = 0
    return listed
