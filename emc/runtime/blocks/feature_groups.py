"""The featured M-step's compact weights: a feature seen with a single training outcome is merged
with the other such features of that outcome.

Columns of phi that each hold one outcome v (the word's identity, its lowercase form when no
other word shares it, a suffix only v has) are multiples of one column e_v: phi_i = x_i e_v. Their
weights enter the objective only through x . w over the group (the score of v) and the penalty
|w|^2, so the objective restricted to w = u c, with u = x / |x|, is the objective of one feature of
value |x| and weight c: the map c -> u c is an isometry onto a subspace that holds every gradient,
step and curvature pair of L-BFGS started in it, and L-BFGS on the merged features takes the same
iterates as on the full ones. Projecting a start onto the subspace keeps every score and only
lowers the penalty (a GEM step still). On CoNLL-2000's emission block 40,530 features become 22,831
(every word has its group), and each array the optimiser keeps shrinks with them.

A column no training outcome has (a feature of `<unk>` or of decode-only words) carries no data:
its optimal weight is 0, and the merged form drops it.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit


class Merged(NamedTuple):
    """A feature matrix with its single-outcome features merged."""

    matrix: tuple[np.ndarray, np.ndarray, np.ndarray]  # CSR (indptr, indices, values), outcomes x n_columns
    n_columns: int
    column: np.ndarray  # each feature's merged column, -1 when dropped
    unit: np.ndarray  # each feature's weight is unit * its merged column's weight


def merge_singletons(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, n_features: int) -> Merged:
    """The merged form of an (outcome x feature) CSR matrix. Merged columns: one per outcome that
    has single-outcome features, in outcome order, then the shared features in their order; each
    outcome's entries in increasing column order."""
    n_outcomes = len(indptr) - 1
    rows = np.repeat(np.arange(n_outcomes), np.diff(indptr))
    nonzero = values != 0
    rows, indices, values = rows[nonzero], indices[nonzero], values[nonzero]
    per_column = np.bincount(indices, minlength=n_features)
    single = per_column[indices] == 1  # entry by entry
    grouped = np.zeros(n_outcomes, bool)
    grouped[rows[single]] = True
    group = np.cumsum(grouped) - 1
    n_groups = int(grouped.sum())
    shared = per_column >= 2
    column = np.full(n_features, -1, np.int64)
    column[indices[single]] = group[rows[single]]
    column[shared] = n_groups + np.arange(int(shared.sum()))
    norm = np.sqrt(np.bincount(group[rows[single]], weights=values[single] ** 2, minlength=n_groups))
    unit = np.ones(n_features)
    unit[indices[single]] = values[single] / norm[group[rows[single]]]
    merged_rows = np.concatenate([np.flatnonzero(grouped), rows[~single]])
    merged_columns = np.concatenate([np.arange(n_groups), column[indices[~single]]])
    merged_values = np.concatenate([norm, values[~single]])
    order = np.lexsort((merged_columns, merged_rows))
    merged_indptr = np.zeros(n_outcomes + 1, np.int64)
    np.cumsum(np.bincount(merged_rows, minlength=n_outcomes), out=merged_indptr[1:])
    matrix = (merged_indptr, merged_columns[order].astype(np.int64), merged_values[order].astype(float))
    return Merged(matrix, n_groups + int(shared.sum()), column, unit)


@njit(cache=True)
def project(weights, column, unit, blocks):
    """blocks[b, :, r] = the merged weights of row b * width + r of `weights` (features x rows):
    sum over a merged column's features of unit * weight; zeros past the last row (the padding of
    the last block). Flat indices, no view per feature: a segmenter's block has one row and
    hundreds of thousands of features."""
    blocks[:] = 0.0
    n_rows, width = weights.shape[1], blocks.shape[2]
    source, target = weights.reshape(-1), blocks.reshape(-1)
    block_size = blocks.shape[1] * width
    for i in range(weights.shape[0]):
        c = column[i]
        if c < 0:
            continue
        u = unit[i]
        for b in range(blocks.shape[0]):
            into, first = b * block_size + c * width, i * n_rows + b * width
            for r in range(min(width, n_rows - b * width)):
                target[np.uint64(into + r)] += u * source[np.uint64(first + r)]


@njit(cache=True)
def expand(blocks, column, unit, out):
    """The inverse of project on the merged subspace: out[i, r] = unit[i] * the merged weight of
    feature i's column in row r (0 for a dropped feature)."""
    n_rows, width = out.shape[1], blocks.shape[2]
    source, target = blocks.reshape(-1), out.reshape(-1)
    block_size = blocks.shape[1] * width
    for i in range(out.shape[0]):
        c, u = column[i], unit[i]
        if c < 0:
            for r in range(n_rows):
                target[np.uint64(i * n_rows + r)] = 0.0
            continue
        for b in range(blocks.shape[0]):
            into, first = i * n_rows + b * width, b * block_size + c * width
            for r in range(min(width, n_rows - b * width)):
                target[np.uint64(into + r)] = u * source[np.uint64(first + r)]
