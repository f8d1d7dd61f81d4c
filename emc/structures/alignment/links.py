"""Reading and writing a link block's entries from the generated glue (alignment.py.j2).

The packed arrays (see data.py: pack) give, per sentence pair, its link ranks (index.py) and the
row of each context-side position; a block's entry for link (i, j) is
row_start[row] + rank, local to its table. The link scores of a pair form a matrix
scores[i, j] over source positions i (NULL last when null=yes) and target positions j.

A pair never seen in training (decoding new data) has no entry: it weighs UNSEEN_WEIGHT, a small
floor, so such a link loses to any trained one but a sentence of new words still aligns (under
IBM 1 its new words link to NULL, which wins ties).
"""
import numpy as np
from numba import njit

from emc.codegen.abi import TABLE_OFFSET, array, mass_terms, row_mass
from emc.structures.alignment.index import NARROW_LIMIT, NONE, SOURCE, UNSEEN

UNSEEN_WEIGHT = 1e-7


@njit(inline="always")
def context_count(side, width, m):
    """How many context-side positions a pair has: its source positions, target positions, or
    one (a block without context)."""
    if side == SOURCE:
        return width
    if side == NONE:
        return 1
    return m


@njit(inline="always")
def context_position(side, i, j):
    if side == SOURCE:
        return i
    if side == NONE:
        return 0
    return j


@njit(cache=True)
def block(ints, layout, index_arrays, ex, k, width, m):
    """Link block k of pair ex: (its context side, the pair's context-side rows, the block's CSR
    row starts, the packed ranks, where the pair's ranks of this block start, 16-bit ranks?).
    `index_arrays` are the array numbers of pair_rows, pair_ranks, link_rows, link_ranks,
    row_starts, blocks and rank_format (see codegen.py)."""
    pair_rows, pair_ranks, link_rows, link_ranks, row_starts, blocks, rank_format = index_arrays
    info = array(ints, layout, blocks)
    narrow = array(ints, layout, rank_format)[0] != 0
    n = width * m
    words = (n + 1) // 2 if narrow else n
    rows_at = array(ints, layout, pair_rows)[ex]
    for b in range(k):
        rows_at += context_count(info[2 * b], width, m)
    side = info[2 * k]
    rows = array(ints, layout, link_rows)[rows_at:rows_at + context_count(side, width, m)]
    row_start = array(ints, layout, row_starts)[info[2 * k + 1]:]
    base = array(ints, layout, pair_ranks)[ex] + k * words
    return side, rows, row_start, array(ints, layout, link_ranks), base, narrow


@njit(cache=True)
def entries(meta, table, side, rows, row_start, ranks, base, narrow, out):
    """out[i, j] = the flat entry of link (i, j), UNSEEN when its pair has none."""
    width, m = out.shape
    flat = out.reshape(width * m)
    if narrow:  # two 16-bit ranks per int32 word, the first in the low half
        for t in range(width * m):
            rank = (ranks[base + (t >> 1)] >> (16 * (t & 1))) & 0xFFFF
            flat[t] = UNSEEN if rank == NARROW_LIMIT else rank
    else:
        for t in range(width * m):
            flat[t] = ranks[base + t]
    start = np.empty(rows.shape[0], np.int64)
    for c in range(rows.shape[0]):
        start[c] = meta[table + TABLE_OFFSET] + row_start[rows[c]]
    if side == SOURCE:  # the common case, a row per source position: its start read once
        for i in range(width):
            for j in range(m):
                if out[i, j] != UNSEEN:
                    out[i, j] += start[i]
    else:
        for i in range(width):
            for j in range(m):
                if out[i, j] != UNSEEN:
                    out[i, j] += start[context_position(side, i, j)]


@njit(cache=True)
def multiply_scores(params, meta, table, side, rows, flat, scores):
    """scores[i, j] *= the block's weight of link (i, j), whose flat entry is flat[i, j]. A row's
    shared denominator (abi.row_mass) is computed once per context position."""
    width, m = scores.shape
    inverse = np.empty(rows.shape[0])
    for c in range(rows.shape[0]):
        inverse[c] = 1.0 / row_mass(params, meta, table, rows[c])
    theta, scale, add = mass_terms(params, meta, table)  # read once: stores to scores may alias them
    for i in range(width):
        for j in range(m):
            e = flat[i, j]
            c = i if side == SOURCE else context_position(side, i, j)
            scores[i, j] *= UNSEEN_WEIGHT if e == UNSEEN else (theta[e] * scale + add) * inverse[c]


@njit(cache=True)
def add_counts(counts, flat, posterior, weight):
    """The block's expected counts: posterior[i, j] * weight into entry flat[i, j] (listing the
    entries written first, as emc/codegen/templates/_counts.j2 does, inline: a call per count
    would cost more than the count)."""
    dense, mark, touched = counts
    tracked = touched.shape[0] > 0
    listed = touched[0] if tracked else 0
    width, m = posterior.shape
    for i in range(width):
        for j in range(m):
            p = posterior[i, j]
            cell = flat[i, j]
            if p != 0.0 and cell != UNSEEN:  # decoding data: a pair without an entry counts nothing
                if tracked and mark[cell] == 0:
                    mark[cell] = 1
                    listed += 1
                    touched[listed] = cell
                dense[cell] += p * weight
    if tracked:
        touched[0] = listed
