"""Matrix products for a rule's sum over a state when its examples run as lanes.

A rule like the chain's `state(t, k) += state(t - 1, j)`, scored by a small table's P(k | j),
sums, for each head state k and each lane, the weights W[k, j] times the body's values over j:
at one level that is a matrix product G = W C, with C[j, lane] the body's row of the chart (the
lanes are its columns: emc/structures/rules/lanes.py lays cell c of lane l at c * ln + l). BLAS
does it at the machine's rate; a loop over the lanes per (k, j) stores its sums back on every
step. The outside pass takes the same products transposed: the body's outside gains W^T D and the
table's counts D C^T, with D[k, lane] the head's outside times the rule's other factors.

W[k, j] = weights[start + k * stride + j] (a table prepare() wrote out: outcome-major) for k in
klo..khi and j in jlo..jhi; the body's rows are chart[(base + j - jlo) * ln + lane]. W and W^T
are taken contiguous (numba's np.dot on a transposed view was slower: 40 against 32.5 ms on the
chain's outside), once per pass when the bounds do not change with the level (contraction.py).
"""
import numpy as np
from numba import njit


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
def contract_rows(block, chart, ln, base):
    """G (flat, row k - klo of ln lanes) = W C."""
    return np.dot(block, _rows(chart, ln, base, block.shape[1])).ravel()


@njit(cache=True)
def scatter_rows(block_t, out, ln, base, heads):
    """The body's outside rows += W^T D, D = heads (flat, row k - klo of ln lanes)."""
    d = heads.reshape(block_t.shape[1], ln)
    rows = _rows(out, ln, base, block_t.shape[0])
    rows += np.dot(block_t, d)


@njit(cache=True)
def count_rows(counts, stride, klo, khi, jlo, jhi, chart, ln, base, heads):
    """The table's local counts (laid out as the table) += D C^T, over the lanes."""
    d = heads.reshape(khi - klo + 1, ln)
    block = np.dot(d, _rows(chart, ln, base, jhi - jlo + 1).T.copy())
    for k in range(khi - klo + 1):
        for j in range(jhi - jlo + 1):
            counts[(klo + k) * stride + jlo + j] += block[k, j]
