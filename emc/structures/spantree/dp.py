"""Inside-outside over binary bracketings (the constituent-context model), written once for the
sum and max semirings, in log space.

A sentence of n symbols has the spans (i, j), 0 <= i < j <= n (fenceposts). A binary bracketing
holds 2n - 1 of them as constituents: the n single symbols, the whole sentence, and n - 2 others;
every other span is a distituent. Each span is scored both ways: score[1, i, j] is the log of its
factors as a constituent, score[0, i, j] as a distituent. Single symbols and the whole sentence
are constituents in every bracketing, so their distituent scores are never read; score[0, i, i]
is the log score of the empty span at fencepost i, a distituent in every bracketing (0 when empty
spans are not modelled).

The distituents of a bracketing are exactly the spans that straddle the split of the smallest
node containing them: a node (i, j) split at k makes every (a, b) with i <= a < k < b <= j,
(a, b) != (i, j), a distituent, and no other node makes that span one. So with

    cross[i, j, k] = the sum of score[0, a, b] over those spans,

    log Z = log sum over bracketings of exp(sum over nodes (i, j, k) of score[1, i, j] + cross[i, j, k]
                                            + sum over symbols of score[1, i, i + 1])

is an ordinary inside pass over binary trees, O(n^3). The usual formulation divides by the
all-distituent product (phi = P(. | constituent) / P(. | distituent)); this one never divides, so
a distituent probability of exactly 0 (a span that must be a constituent, e.g. after hard EM)
needs no special case and nothing is ever 0/0 or inf - inf. Log space, because the products over
a sentence of 40 symbols span far more than a double's range.

Under max, `marginals` gives the 0/1 indicators of the best bracketing and its log score; an
impossible sentence (every bracketing has probability 0) returns -inf and leaves them at 0.
Sampling (emc/structures/sampling.py) runs the sum inside pass and draws top-down: node (i, j)
splits at k with probability proportional to exp(cross[i, j, k] + inside[i, k] + inside[k, j]).
"""
import numpy as np
from numba import njit

from emc.structures.pointers import by_pointer
from emc.structures.sampling import draw_log, is_sampling, sample_count
from emc.structures.semiring import MAX, SUM, log_sum

NEG_INF = -np.inf


@njit(inline="always")
def span_index(n, i, j):
    """Position of span (i, j) among the spans of a sentence of n symbols: the n (n + 1) / 2
    non-empty ones ordered by start, then end, then the n + 1 empty ones (i, i)."""
    if i == j:
        return (n * (n + 1)) // 2 + i
    return i * n - (i * (i - 1)) // 2 + (j - i - 1)


@njit(inline="always")
def always_constituent(n, i, j):
    """Single symbols and the whole sentence are constituents of every binary bracketing."""
    return j - i == 1 or (i == 0 and j == n)


@njit(inline="always")
def scored(n, i, j, c):
    """Whether span (i, j) can take the bracket value c (1: constituent, 0: distituent): empty
    spans are always distituents, single symbols and the whole sentence always constituents."""
    if c == 1:
        return j > i
    return not always_constituent(n, i, j)


@njit(cache=True)
def crossing_scores(score, n):
    """cross[i, j, k]: the sum of the distituent scores of the spans that node (i, j) split at k
    makes distituents (see the module docstring). For each split k, with
        row[a, b] = sum of score[0, a, b'] over k < b' <= b,
    cross[i, j, k] = (sum of row[a, j] over i < a < k) + row[i, j - 1]: sums of scores only, so
    -inf (a span that cannot be a distituent) propagates and nothing is subtracted."""
    cross = np.zeros((n + 1, n + 1, n + 1))
    row = np.zeros((n + 1, n + 1))
    for k in range(1, n):
        for a in range(k):
            acc = 0.0
            row[a, k] = 0.0
            for b in range(k + 1, n + 1):
                acc += score[0, a, b]
                row[a, b] = acc
        for j in range(k + 1, n + 1):
            inner = 0.0  # sum of row[a, j] over the starts a already passed (a > i)
            for i in range(k - 1, -1, -1):
                cross[i, j, k] = inner + row[i, j - 1]
                inner += row[i, j]
    return cross


@njit(cache=True)
def inside(semiring, score, cross, n, chart):
    """chart[i, j]: log of the (+) over the bracketings of (i, j) of their scores, span (i, j)'s
    constituent score included. Returns chart[0, n]."""
    terms = np.empty(max(n, 1))
    for i in range(n):
        chart[i, i + 1] = score[1, i, i + 1]
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length
            for k in range(i + 1, j):
                terms[k - i - 1] = cross[i, j, k] + chart[i, k] + chart[k, j]
            chart[i, j] = score[1, i, j] + log_sum(semiring, terms, length - 1, terms)
    return chart[0, n]


@njit(cache=True)
def outside(score, cross, inside_chart, n, chart):
    """chart[i, j]: log of the sum over the rest of the sentence's bracketings given that (i, j)
    is a constituent (sum semiring), so that P(constituent) = exp(inside + outside - log Z).
    Gathered from the longer spans that can be (i, j)'s parent: (i, p) split at j, or (h, j)
    split at i."""
    above = np.empty((n + 1, n + 1))  # outside score times the span's own constituent score
    terms = np.empty(max(n, 1))
    chart[0, n] = 0.0
    above[0, n] = score[1, 0, n]
    for length in range(n - 1, 0, -1):
        for i in range(n - length + 1):
            j = i + length
            count = 0
            for p in range(j + 1, n + 1):
                terms[count] = above[i, p] + cross[i, p, j] + inside_chart[j, p]
                count += 1
            for h in range(i):
                terms[count] = above[h, j] + cross[h, j, i] + inside_chart[h, i]
                count += 1
            chart[i, j] = log_sum(SUM, terms, count, terms)
            above[i, j] = chart[i, j] + score[1, i, j]


@njit(cache=True)
def best_bracketing(cross, inside_chart, n, constituent):
    """Mark the best bracketing's spans in `constituent`, from max-semiring inside scores (no
    back-pointers stored: each node's best split is found again)."""
    stack = np.empty((2 * n + 2, 2), np.int64)
    stack[0, 0], stack[0, 1] = 0, n
    top = 1
    while top > 0:
        top -= 1
        i, j = stack[top, 0], stack[top, 1]
        constituent[i, j] = 1.0
        if j - i < 2:
            continue
        best, split = NEG_INF, i + 1
        for k in range(i + 1, j):
            v = cross[i, j, k] + inside_chart[i, k] + inside_chart[k, j]
            if v > best:
                best, split = v, k
        stack[top, 0], stack[top, 1] = i, split
        stack[top + 1, 0], stack[top + 1, 1] = split, j
        top += 2


@njit(cache=True)
def sample_bracketing(cross, inside_chart, n, constituent, share):
    """Add `share` to constituent[i, j] for every span of a bracketing drawn from the posterior,
    given sum-semiring inside scores (each node's split drawn top-down)."""
    stack = np.empty((2 * n + 2, 2), np.int64)
    terms = np.empty(max(n, 1))
    scratch = np.empty(max(n, 1))
    stack[0, 0], stack[0, 1] = 0, n
    top = 1
    while top > 0:
        top -= 1
        i, j = stack[top, 0], stack[top, 1]
        constituent[i, j] += share
        if j - i < 2:
            continue
        for k in range(i + 1, j):
            terms[k - i - 1] = cross[i, j, k] + inside_chart[i, k] + inside_chart[k, j]
        split = i + 1 + draw_log(terms, j - i - 1, scratch)
        stack[top, 0], stack[top, 1] = i, split
        stack[top + 1, 0], stack[top + 1, 1] = split, j
        top += 2


@njit(cache=True)
def marginals(semiring, score, n, constituent):
    """Under sum, constituent[i, j] = P(span (i, j) is a constituent) for every non-empty span;
    under max, the 0/1 indicators of the best bracketing. Returns log Z (the log best score under
    max), empty spans included; -inf (indicators all 0) when no bracketing is possible."""
    cross = crossing_scores(score, n)
    inside_chart = np.empty((n + 1, n + 1))
    log_z = inside(SUM if is_sampling(semiring) else semiring, score, cross, n, inside_chart)
    for i in range(n + 1):
        log_z += score[0, i, i]
    constituent[:, :] = 0.0
    if not log_z > NEG_INF:  # -inf, or NaN from NaN parameters
        return log_z
    if semiring == MAX:
        best_bracketing(cross, inside_chart, n, constituent)
        return log_z
    if is_sampling(semiring):  # the average indicators of `samples` drawn bracketings
        draws = sample_count(semiring)
        for _ in range(draws):
            sample_bracketing(cross, inside_chart, n, constituent, 1.0 / draws)
        return log_z
    outside_chart = np.empty((n + 1, n + 1))
    outside(score, cross, inside_chart, n, outside_chart)
    log_trees = inside_chart[0, n]
    for i in range(n):
        for j in range(i + 1, n + 1):
            if always_constituent(n, i, j):
                constituent[i, j] = 1.0
            else:
                constituent[i, j] = min(np.exp(inside_chart[i, j] + outside_chart[i, j] - log_trees), 1.0)
    return log_z


@njit(cache=True)
def random_split_marginals(n):
    """P(span (i, j) is a constituent) under Klein & Manning's random-split bracketings: the
    sentence is split at a uniformly random point, then each part likewise. A bracketing's
    probability is the product over its nodes of 1 / (length - 1), so these are the marginals of
    the DP above with those node scores and no distituent scores."""
    score = np.zeros((2, n + 1, n + 1))
    for i in range(n):
        for j in range(i + 2, n + 1):
            score[1, i, j] = -np.log(j - i - 1.0)
    constituent = np.zeros((n + 1, n + 1))
    marginals(SUM, score, n, constituent)
    return constituent


# What the glue calls: each compiled once, not linked into every entry point (emc/structures/pointers.py).
marginals_by_pointer = by_pointer(marginals)
