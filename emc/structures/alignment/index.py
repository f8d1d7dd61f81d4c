"""The sparse index of a link block's table: which (row, outcome) pairs exist, and where each
link of the corpus finds its entry.

A link block's row is read on one side of the pair (its context side: a source word, or a target
word, or nothing for P(a.source)) and its outcome on the other. Its table holds only the
(row, outcome) pairs that co-occur in some sentence pair: stored row by row (CSR), each row's
outcomes in the order the corpus first shows them (frequent words early, so the entries most
links read sit together at the start of their rows), and entry = row_start[row] + rank. Per link the corpus keeps only
that rank: 16 bits while no row has more than 65,535 outcomes (two ranks per packed int32), 32
bits otherwise. The index is built by visiting, row by row, the sentence pairs the row occurs in
(counting sort), so time and memory are linear in the number of links and no dense
rows x outcomes array is ever made.

At decode time the entries are the trained ones and a link whose pair was never seen in training
gets rank UNSEEN (see links.py for its weight).
"""
import numpy as np
from numba import njit

from emc.structures.buffers import grow

SOURCE, TARGET, NONE = 0, 1, 2  # the side a block's context (row) is read on
NARROW_LIMIT = 0xFFFF  # ranks 0..65534 fit 16 bits; 0xFFFF is UNSEEN
UNSEEN = -1


@njit(cache=True)
def postings(row_values, n_rows):
    """Context-side positions grouped by row value (a counting sort): positions of row r are
    order[start[r]:start[r + 1]]."""
    start = np.zeros(n_rows + 1, np.int64)
    for v in row_values:
        start[v + 1] += 1
    for r in range(n_rows):
        start[r + 1] += start[r]
    fill = start[:-1].copy()
    order = np.empty(row_values.shape[0], np.int32)
    for p in range(row_values.shape[0]):
        v = row_values[p]
        order[fill[v]] = p
        fill[v] += 1
    return order, start


@njit(cache=True)
def build_entries(order, start, row_pair, outcome_values, outcome_offsets, n_rows, n_outcomes):
    """The co-occurring (row, outcome) pairs, as (row_start[n_rows + 1], outcomes[entries]):
    row r holds outcomes[row_start[r]:row_start[r + 1]], in the order first met. (order, start)
    are the context-side positions' postings."""
    seen = np.zeros(n_outcomes, np.int64)  # seen[o] = r + 1 once o is an outcome of row r
    outcomes = np.empty(max(16, order.shape[0]), np.int32)
    row_start = np.zeros(n_rows + 1, np.int64)
    used = 0
    for r in range(n_rows):
        for q in range(start[r], start[r + 1]):
            pair = row_pair[order[q]]
            for t in range(outcome_offsets[pair], outcome_offsets[pair + 1]):
                o = outcome_values[t]
                if seen[o] != r + 1:
                    seen[o] = r + 1
                    if used == outcomes.shape[0]:
                        outcomes = grow(outcomes, used + 1)
                    outcomes[used] = o
                    used += 1
        row_start[r + 1] = used
    return row_start, outcomes[:used].copy()


@njit(cache=True)
def assign_ranks(side, order, start, row_pair, row_position, outcome_values, outcome_offsets, row_start, outcomes,
                 n_rows, n_outcomes, widths, lengths, link_start, narrow, ranks):
    """Write every link's rank in its row (UNSEEN when the pair is not an entry). The links of
    pair k are (i, j), i over its `widths[k]` source positions (NULL last), j over its
    `lengths[k]` target positions, stored i-major from link_start[k] (in ranks of this block's
    width: 16-bit ranks when `narrow`, so ranks is then a uint16 array). (order, start) are the
    context-side positions' postings."""
    rank_of = np.full(n_outcomes, UNSEEN, np.int64)
    unseen = NARROW_LIMIT if narrow else UNSEEN
    for r in range(n_rows):
        lo, hi = row_start[r], row_start[r + 1]
        for e in range(lo, hi):
            rank_of[outcomes[e]] = e - lo
        for q in range(start[r], start[r + 1]):
            p = order[q]
            pair = row_pair[p]
            pos = row_position[p]
            width, m, base, first = widths[pair], lengths[pair], link_start[pair], outcome_offsets[pair]
            if side == SOURCE:  # row at source position i = pos, outcome at target position j
                for j in range(m):
                    rank = rank_of[outcome_values[first + j]]
                    ranks[base + pos * m + j] = unseen if rank == UNSEEN else rank
            elif side == TARGET:  # row at target position j = pos, outcome at source position i
                for i in range(width):
                    rank = rank_of[outcome_values[first + i]]
                    ranks[base + i * m + pos] = unseen if rank == UNSEEN else rank
            else:  # one row; the outcome at source position i, whatever j
                for i in range(width):
                    rank = rank_of[outcome_values[first + i]]
                    for j in range(m):
                        ranks[base + i * m + j] = unseen if rank == UNSEEN else rank
        for e in range(lo, hi):
            rank_of[outcomes[e]] = UNSEEN
