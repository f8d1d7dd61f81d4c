"""Matrix products for a rule's sum over a state when its examples run as lanes.

A rule like the chain's `state(t, k) += state(t - 1, j)`, scored by a small table's P(k | j),
sums, for each head state k and each lane, the weights W[k, j] times the body's values over j:
at one level that is a matrix product G = W C, with C[j, lane] the body's row of the chart (the
lanes are its columns: emc/structures/rules/lanes.py lays cell c of lane l at c * lw + l, lw =
lane_stride(ln)). The outside pass takes the same products transposed: the body's outside gains
W^T D and the table's counts D C^T, with D[k, lane] the head's outside times the rule's other
factors.

W[k, j] = weights[start + k * stride + j] (a table prepare() wrote out: outcome-major) for k in
klo..khi and j in jlo..jhi; the body's rows are chart[(base + j - jlo) * lw + lane]. W and W^T
are taken contiguous, once per pass when the bounds do not change with the level (contraction.py).

The products are the chain's register tiles (emc/structures/chain/products.py: at the chain's 45
states they ran 2.5x as fast as numpy's OpenBLAS, whose small products spend as long packing as
multiplying), W C and W^T D with its wide tile on AVX-512 (the lanes' rows are long). The tiles
read and write rows of whole vectors, and the lanes' rows are: a lane's row is padded to whole
vectors (the padding lanes hold zeros, which the products carry along), so a product reads and
writes the chart in place (a group of lanes not a multiple of a vector was copied into padded rows
and back at every product). D C^T sums over the lanes, so C is read transposed, copied into rows of
a lane each a block of vectors at a time (vectors.transpose: copied one value at a time, the copy
took 4 ms of the chain's E-step). A pass takes the buffers these need once (lane_rows,
lane_scratch), not once a level.
"""
import numpy as np
from numba import njit

from emc.structures.chain.products import (TILE_ROWS, TILE_VECTORS, WIDE_ROWS, WIDE_VECTORS, multiply,
                                           multiply_wide)
from emc.structures.chain.vectors import LANES, prefetch, transpose, whole

SET, ADD = np.int64(0), np.int64(1)  # a product's result replaces its target's rows, or adds to them
LINE = 8  # doubles in a cache line


@njit(inline="always")
def lane_stride(ln):
    """The length of a lane's row of a cell (or a table's row): ln padded to whole vectors."""
    return whole(ln)


@njit(cache=True)
def lane_rows(rows, ln):
    """Zeros for `rows` rows over the lanes (row r of lane l at r * lane_stride(ln) + l), in whole
    blocks of vectors (the rows padded too), as the transposes write them."""
    return np.zeros(whole(rows) * lane_stride(ln))


@njit(cache=True)
def lane_scratch(rows, ln):
    """Zeros for `rows` rows laid out by lane (row `lane` holds its values), in whole blocks of
    vectors: the other side of a transpose."""
    return np.zeros((lane_stride(ln), whole(rows)))


@njit(cache=True)
def count_block(rows, columns):
    """Zeros for the sum over a pass's levels of D C^T, `rows` outcomes by `columns` rows (whole
    vectors): the product adds to it, and add_count_block adds it to the local counts once."""
    return np.zeros((rows, whole(columns)))


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
def _rows(values, ln, base, count):
    lw = lane_stride(ln)
    return values[base * lw:(base + count) * lw].reshape(count, lw)


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
def contract_rows(block, chart, ln, base, target, at):
    """G = W C into target's rows at, at + 1, ... (row k - klo over the lanes): the cells of the
    head's rows k in the inside's saved results (contraction.py)."""
    _times(block, _rows(chart, ln, base, block.shape[1]), _rows(target, ln, at, block.shape[0]), SET)


@njit(cache=True)
def scatter_rows(block_t, out, ln, base, heads):
    """The body's outside rows += W^T D, D = heads (rows k - klo over the lanes)."""
    _times(block_t, _rows(heads, ln, 0, block_t.shape[1]), _rows(out, ln, base, block_t.shape[0]), ADD)


@njit(cache=True)
def _by_lane(rows, count, by_lane):
    """by_lane[lane, r] = rows[r, lane] for r < count, every lane of the stride (the padding's
    zeros included), a block of vectors at a time; the columns past count of its last block
    repeat rows[count - 1] (nothing reads them)."""
    for r in range(0, count, LANES):
        for lane in range(0, rows.shape[1], LANES):
            transpose(rows, r, lane, min(LANES, count - r), by_lane, lane, r)


@njit(cache=True)
def count_rows(block, jlo, jhi, chart, ln, base, heads, by_lane):
    """block (count_block) += D C^T, over the lanes; by_lane: lane_scratch of the body's rows."""
    columns = jhi - jlo + 1
    _by_lane(_rows(chart, ln, base, columns), columns, by_lane)
    multiply(heads, np.int64(0), lane_stride(ln), np.int64(1), block.shape[0], by_lane, np.int64(0), np.int64(0), ln,
             block, np.int64(0), ADD)


@njit(cache=True)
def add_count_block(counts, stride, klo, khi, jlo, jhi, block):
    """The table's local counts (laid out as the table) += the pass's sum of D C^T."""
    for k in range(khi - klo + 1):
        for j in range(jhi - jlo + 1):
            counts[(klo + k) * stride + jlo + j] += block[k, j]


@njit(cache=True)
def prefetch_rows(values, start, rows, tokens, ln):
    """Asks for each lane's token's row values[start + tokens[lane] * rows:][:rows] (a large
    table's: the rows lie apart, a few cache lines each, and the lanes' reads of them waited on
    memory one after another), a cache line at a time."""
    for lane in range(ln):
        first = start + tokens[np.uint64(lane)] * rows
        for r in range(0, rows, LINE):
            prefetch(values, first + r)
        prefetch(values, first + rows - 1)  # the last line, when the row does not start one


@njit(cache=True)
def prefetch_token_rows(reader, tokens, ln):
    """prefetch_rows of the rows gather_rows reads through `reader`."""
    theta, offset, rows = reader[0], reader[1], reader[2]
    prefetch_rows(theta, offset, rows, tokens, ln)


@njit(cache=True)
def gather_rows(reader, tokens, ln, out, by_lane):
    """out[r * lw + lane] = the table's weight of row r at outcome tokens[lane], for every row
    (emc/codegen/abi.py: read_hoisted through `reader`): each lane's token's row, read in one
    stride into by_lane (lane_scratch of the rows), laid out as the chart lays out a level's
    cells (lanes.py: TokenRows; out is lane_rows of the rows)."""
    theta, offset, rows, scale, add, inverse = reader
    for lane in range(ln):
        first = offset + tokens[np.uint64(lane)] * rows
        row = by_lane[lane]
        for r in range(rows):
            row[r] = (theta[np.uint64(first + r)] * scale + add) * inverse[np.uint64(r)]
    target = _rows(out, ln, 0, by_lane.shape[1])
    for r in range(0, rows, LANES):  # the padding lanes' rows of by_lane stay zero
        for lane in range(0, target.shape[1], LANES):
            transpose(by_lane, lane, r, LANES, target, r, lane)


@njit(cache=True)
def add_token_rows(dense, mark, touched, listed, start, rows, tokens, ln, sums, written, by_lane):
    """The counts a pass summed over the lanes into a token's row (sums[r * lw + lane] for the
    rows r `written` marks), each lane's into its token's row of the counts, dense[start +
    tokens[lane] * rows + r], a lane's row at a time (by_lane: lane_scratch of the rows); listed
    when tracked (returns the new count listed). Leaves sums and written zero for the next level."""
    tracked = touched.shape[0] > 0
    _by_lane(_rows(sums, ln, 0, rows), rows, by_lane)
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
    sums[:rows * lane_stride(ln)] = 0.0
    for r in range(rows):
        written[np.uint64(r)] = 0
    return listed
