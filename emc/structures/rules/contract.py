"""Matrix products for a rule's sum over a state when its examples run as lanes.

A rule like the chain's `state(t, k) += state(t - 1, j)`, scored by a small table's P(k | j),
sums, for each head state k and each lane, the weights W[k, j] times the body's values over j:
at one level that is a matrix product G = W C, with C[j, lane] the body's row of the chart (the
lanes are its columns: emc/structures/rules/lanes.py lays cell c of lane l at c * ln + l). BLAS
does it at the machine's rate; a loop over the lanes per (k, j) stores its sums back on every
step. The outside pass takes the same products transposed: the body's outside gains W^T D and the
table's counts D C^T, with D[k, lane] the head's outside times the rule's other factors.

W[k, j] = weights[start + k * stride + j] (a table prepare() wrote out: outcome-major) for k in
klo..khi and j in jlo..jhi; the body's rows are chart[(base + j - jlo) * ln + lane].
"""
import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _weights(weights, start, stride, klo, khi, jlo, jhi):
    block = weights[start + klo * stride:start + (khi + 1) * stride].reshape(khi - klo + 1, stride)
    return np.ascontiguousarray(block[:, jlo:jhi + 1])


@njit(cache=True, inline="always")
def _rows(chart, ln, base, jlo, jhi):
    return chart[base * ln:(base + jhi - jlo + 1) * ln].reshape(jhi - jlo + 1, ln)


@njit(cache=True)
def contract_rows(weights, start, stride, klo, khi, jlo, jhi, chart, ln, base):
    """G (flat, row k - klo of ln lanes) = W C."""
    return np.dot(_weights(weights, start, stride, klo, khi, jlo, jhi), _rows(chart, ln, base, jlo, jhi)).ravel()


@njit(cache=True)
def scatter_rows(weights, start, stride, klo, khi, jlo, jhi, out, ln, base, heads):
    """The body's outside rows += W^T D, D = heads (flat, row k - klo of ln lanes)."""
    d = heads.reshape(khi - klo + 1, ln)
    rows = _rows(out, ln, base, jlo, jhi)
    rows += np.dot(_weights(weights, start, stride, klo, khi, jlo, jhi).T.copy(), d)


@njit(cache=True)
def count_rows(counts, stride, klo, khi, jlo, jhi, chart, ln, base, heads):
    """The table's local counts (laid out as the table) += D C^T, over the lanes."""
    d = heads.reshape(khi - klo + 1, ln)
    block = np.dot(d, _rows(chart, ln, base, jlo, jhi).T.copy())
    for k in range(khi - klo + 1):
        for j in range(jhi - jlo + 1):
            counts[(klo + k) * stride + jlo + j] += block[k, j]
