"""Reading and writing a link block's entries from the generated glue (alignment.py.j2).

The packed arrays (see data.py: pack) give, per sentence pair, its link ranks (index.py) and the
row of each context-side position; a block's entry for link (i, j) is
row_start[row] + rank, local to its table. The link scores of a pair form a matrix
scores[i, j] over source positions i (NULL last when null=yes) and target positions j.

A pair never seen in training (decoding new data) has no entry: it weighs UNSEEN_WEIGHT, the
floor GIZA++ gives unseen translation pairs, so such a link loses to any trained one but a
sentence of new words still aligns (its words then link to NULL, which wins ties).
"""
import numpy as np
from numba import njit

from emc.codegen.abi import add_count, array, table_entry, weight_at
from emc.structures.alignment.index import NARROW_LIMIT, NONE, SOURCE, UNSEEN

UNSEEN_WEIGHT = 1e-7


@njit(inline="always")
def link_rank(ranks, base, t, narrow):
    """Rank of link t of a block whose ranks start at int32 word `base` (-1: UNSEEN)."""
    if narrow:
        half = (ranks[base + (t >> 1)] >> (16 * (t & 1))) & 0xFFFF
        return UNSEEN if half == NARROW_LIMIT else half
    return ranks[base + t]


@njit(inline="always")
def context_count(side, width, m):
    """How many context-side positions a pair has: its source positions, target positions, or
    one (a block without context)."""
    if side == SOURCE:
        return width
    if side == NONE:
        return 1
    return m


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


@njit(inline="always")
def context_position(side, i, j):
    if side == SOURCE:
        return i
    if side == NONE:
        return 0
    return j


@njit(cache=True)
def multiply_scores(params, meta, table, side, rows, row_start, ranks, rank_base, narrow, scores):
    """scores[i, j] *= the block's weight of link (i, j). `rows` are the pair's context-side
    rows, `row_start` the block's CSR row starts."""
    width, m = scores.shape
    for i in range(width):
        for j in range(m):
            row = rows[context_position(side, i, j)]
            rank = link_rank(ranks, rank_base, i * m + j, narrow)
            if rank == UNSEEN:
                scores[i, j] *= UNSEEN_WEIGHT
            else:
                scores[i, j] *= weight_at(params, meta, table, row, table_entry(meta, table, row_start[row] + rank))


@njit(cache=True)
def add_counts(counts, meta, table, side, rows, row_start, ranks, rank_base, narrow, posterior, weight):
    """The block's expected counts: posterior[i, j] * weight into the entry of each link."""
    width, m = posterior.shape
    for i in range(width):
        for j in range(m):
            p = posterior[i, j]
            if p != 0.0:
                row = rows[context_position(side, i, j)]
                rank = link_rank(ranks, rank_base, i * m + j, narrow)
                if rank == UNSEEN:  # decoding data: nothing is counted for a pair without an entry
                    continue
                add_count(counts, table_entry(meta, table, row_start[row] + rank), p * weight)
