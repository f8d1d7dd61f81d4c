"""Inside-outside over projective dependency trees with valence (the DMV), written once for the sum
and max semirings, in log space: Eisner's split-head algorithm, O(n^3).

Words are positions 0..n-1; the tree has one root. Scores (logs of products of factors):
    root[h]               word h is the root
    attach[h, a]          h takes a as a dependent (direction: left when a < h)
    stop[h, dir, adj, s]  h, on side dir (0 left, 1 right), stops (s = 1) or takes another
                          dependent (s = 0), adj = 1 when it has taken none on that side yet.
A tree scores root + its attachments + for each head and side one `continue` per dependent (the
first adjacent, the others not) and one `stop` (adjacent iff the side is empty).

Split heads: a word's left and right dependents are generated independently, so each side is a
half-constituent of its own. Over spans [i, j] (inclusive):
    CR[h, j]  h's right half, unsealed: h's right dependents and their subtrees cover [h, j]
    SR[h, j]  the same, sealed (h's right stop added)
    IR[h, a]  h's right half up to the attachment of a, and a's sealed left half
and CL, SL, IL the mirror images. A half is empty exactly when its span is the head alone, so
valence needs no chart dimension: it is whether the span is [h, h]. The recurrences:
    IR[h, a] = attach[h, a] + (+)_{h <= m < a} CR[h, m] + SL[m + 1, a] + cont(h, right, m == h)
    CR[h, j] = (+)_{h < a <= j} IR[h, a] + SR[a, j]               (CR[h, h] = 0)
    SR[h, j] = CR[h, j] + stop(h, right, j == h)
    log Z    = (+)_h root[h] + SL[0, h] + SR[h, n - 1]
Under sum the outside pass gives each item's posterior, hence the expected counts: root[h],
arcs[h, a] (attachments) and stops[h, dir, adj, s], each decision of the stop table counted
directly (never as a difference, so no count is negative). Under max the best tree is read back
from the inside chart (no back-pointers: each item's best split is found again) and the same
arrays hold its 0/1 (stops: 0/1/2...) counts. Sampling reads a tree back the same way from the
sum-semiring chart, drawing each split in proportion to its score (`read_back`); under a sampling
request (emc/structures/sampling.py) the arrays hold the drawn trees' average counts. An impossible sentence returns -inf (NaN from NaN
parameters) and leaves the counts at 0.
"""
import numpy as np
from numba import njit

from emc.structures.pointers import by_pointer
from emc.structures.sampling import draw_log, is_sampling, sample_count
from emc.structures.semiring import MAX, SUM, log_sum

NEG_INF = -np.inf
LEFT, RIGHT = 0, 1
# the kinds of item on the read-back stack
SEALED_RIGHT, SEALED_LEFT, OPEN_RIGHT, OPEN_LEFT = 0, 1, 2, 3


@njit(inline="always")
def log_add(a, b):
    """log(exp(a) + exp(b)), -inf the zero; a NaN is passed on."""
    if a != a or b != b:
        return np.nan
    if a == NEG_INF:
        return b
    if b == NEG_INF:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))


@njit(inline="always")
def cont(stop, h, side, empty):
    return stop[h, side, 1 if empty else 0, 0]


@njit(inline="always")
def empty_charts(n):
    """The six charts (CR, SR, IR, CL, SL, IL, or their outside scores), n x n, no item built: -inf."""
    return (np.full((n, n), NEG_INF), np.full((n, n), NEG_INF), np.full((n, n), NEG_INF),
            np.full((n, n), NEG_INF), np.full((n, n), NEG_INF), np.full((n, n), NEG_INF))


@njit(cache=True)
def inside(semiring, root, attach, stop, n, cr, sr, ir, cl, sl, il):
    """Fill the charts (n x n, see the module docstring) under `semiring`; returns log Z (under
    max, the best tree's log score)."""
    terms = np.empty(max(n, 1))
    for h in range(n):
        cr[h, h] = 0.0
        cl[h, h] = 0.0
        sr[h, h] = stop[h, RIGHT, 1, 1]
        sl[h, h] = stop[h, LEFT, 1, 1]
    for width in range(1, n):
        for i in range(n - width):
            j = i + width
            for m in range(i, j):  # i takes j (right); j takes i (left)
                terms[m - i] = cr[i, m] + sl[m + 1, j] + cont(stop, i, RIGHT, m == i)
            ir[i, j] = attach[i, j] + log_sum(semiring, terms, width, terms)
            for m in range(i, j):
                terms[m - i] = sr[i, m] + cl[m + 1, j] + cont(stop, j, LEFT, m + 1 == j)
            il[i, j] = attach[j, i] + log_sum(semiring, terms, width, terms)
        for i in range(n - width):
            j = i + width
            for a in range(i + 1, j + 1):
                terms[a - i - 1] = ir[i, a] + sr[a, j]
            cr[i, j] = log_sum(semiring, terms, width, terms)
            sr[i, j] = cr[i, j] + stop[i, RIGHT, 0, 1]
            for a in range(i, j):
                terms[a - i] = sl[i, a] + il[a, j]
            cl[i, j] = log_sum(semiring, terms, width, terms)
            sl[i, j] = cl[i, j] + stop[j, LEFT, 0, 1]
    for h in range(n):
        terms[h] = root[h] + sl[0, h] + sr[h, n - 1]
    return log_sum(semiring, terms, n, terms)


@njit(cache=True)
def posteriors(root, attach, stop, n, cr, sr, ir, cl, sl, il, log_z, root_m, arcs, stops):
    """Sum semiring, after `inside`: each item's outside score, pushed from the longest spans down,
    and the expected counts (root_m[h], arcs[h, a], stops[h, dir, adj, s]) read off as
    exp(inside + outside of a step - log Z)."""
    ocr, osr, oir, ocl, osl, oil = empty_charts(n)
    for h in range(n):
        root_m[h] = np.exp(root[h] + sl[0, h] + sr[h, n - 1] - log_z)
        osl[0, h] = log_add(osl[0, h], root[h] + sr[h, n - 1])
        osr[h, n - 1] = log_add(osr[h, n - 1], root[h] + sl[0, h])
    for width in range(n - 1, 0, -1):
        for i in range(n - width):
            j = i + width
            # sealed halves -> their unsealed halves; each seal is a `stop` after >= 1 dependent
            stops[i, RIGHT, 0, 1] += np.exp(sr[i, j] + osr[i, j] - log_z)
            stops[j, LEFT, 0, 1] += np.exp(sl[i, j] + osl[i, j] - log_z)
            ocr[i, j] = log_add(ocr[i, j], osr[i, j] + stop[i, RIGHT, 0, 1])
            ocl[i, j] = log_add(ocl[i, j], osl[i, j] + stop[j, LEFT, 0, 1])
            # unsealed halves -> their last attachment and the dependent's far half
            for a in range(i + 1, j + 1):
                oir[i, a] = log_add(oir[i, a], ocr[i, j] + sr[a, j])
                osr[a, j] = log_add(osr[a, j], ocr[i, j] + ir[i, a])
            for a in range(i, j):
                osl[i, a] = log_add(osl[i, a], ocl[i, j] + il[a, j])
                oil[a, j] = log_add(oil[a, j], ocl[i, j] + sl[i, a])
        for i in range(n - width):
            j = i + width
            arcs[i, j] = np.exp(ir[i, j] + oir[i, j] - log_z)
            arcs[j, i] = np.exp(il[i, j] + oil[i, j] - log_z)
            for m in range(i, j):  # i takes j: the half before it, and j's left half
                step = oir[i, j] + attach[i, j] + cont(stop, i, RIGHT, m == i)
                stops[i, RIGHT, 1 if m == i else 0, 0] += np.exp(step + cr[i, m] + sl[m + 1, j] - log_z)
                ocr[i, m] = log_add(ocr[i, m], step + sl[m + 1, j])
                osl[m + 1, j] = log_add(osl[m + 1, j], step + cr[i, m])
            for m in range(i, j):  # j takes i
                step = oil[i, j] + attach[j, i] + cont(stop, j, LEFT, m + 1 == j)
                stops[j, LEFT, 1 if m + 1 == j else 0, 0] += np.exp(step + sr[i, m] + cl[m + 1, j] - log_z)
                osr[i, m] = log_add(osr[i, m], step + cl[m + 1, j])
                ocl[m + 1, j] = log_add(ocl[m + 1, j], step + sr[i, m])
    for h in range(n):  # a side with no dependent: sealed at once
        stops[h, RIGHT, 1, 1] += np.exp(sr[h, h] + osr[h, h] - log_z)
        stops[h, LEFT, 1, 1] += np.exp(sl[h, h] + osl[h, h] - log_z)


@njit(inline="always")
def _choose(values, count, sampling, scratch):
    """The index of the largest of values[:count] (the first of ties), or with `sampling` one drawn
    in proportion to exp(value)."""
    if sampling:
        return draw_log(values, count, scratch)
    best, index = NEG_INF, 0
    for q in range(count):
        if values[q] > best:
            best, index = values[q], q
    return index


@njit(cache=True)
def read_back(root, attach, stop, n, cr, sr, ir, cl, sl, il, heads, sampling):
    """After `inside`: heads[a] = the head of word a (-1 for the root) of the best tree (max-semiring
    charts), or with `sampling` of a tree drawn from the posterior (sum-semiring charts; the caller
    seeds the generator). Each item's split is found again from the chart: no back-pointers."""
    values = np.empty(max(n, 1))
    scratch = np.empty(max(n, 1))
    for h in range(n):
        values[h] = root[h] + sl[0, h] + sr[h, n - 1]
    top_word = _choose(values, n, sampling, scratch)
    heads[top_word] = -1
    stack = np.empty((4 * n + 4, 3), np.int64)
    stack[0, 0], stack[0, 1], stack[0, 2] = SEALED_LEFT, 0, top_word
    stack[1, 0], stack[1, 1], stack[1, 2] = SEALED_RIGHT, top_word, n - 1
    size = 2
    while size > 0:
        size -= 1
        kind, i, j = stack[size, 0], stack[size, 1], stack[size, 2]
        if i == j and (kind == SEALED_RIGHT or kind == SEALED_LEFT):
            continue
        if kind == SEALED_RIGHT:  # i's right half: its last dependent a
            for a in range(i + 1, j + 1):
                values[a - i - 1] = ir[i, a] + sr[a, j]
            split = i + 1 + _choose(values, j - i, sampling, scratch)
            stack[size, 0], stack[size, 1], stack[size, 2] = OPEN_RIGHT, i, split
            stack[size + 1, 0], stack[size + 1, 1], stack[size + 1, 2] = SEALED_RIGHT, split, j
        elif kind == SEALED_LEFT:  # j's left half: its last (leftmost) dependent a
            for a in range(i, j):
                values[a - i] = sl[i, a] + il[a, j]
            split = i + _choose(values, j - i, sampling, scratch)
            stack[size, 0], stack[size, 1], stack[size, 2] = SEALED_LEFT, i, split
            stack[size + 1, 0], stack[size + 1, 1], stack[size + 1, 2] = OPEN_LEFT, split, j
        elif kind == OPEN_RIGHT:  # i takes j; what lies between
            heads[j] = i
            for m in range(i, j):
                values[m - i] = cr[i, m] + sl[m + 1, j] + cont(stop, i, RIGHT, m == i)
            split = i + _choose(values, j - i, sampling, scratch)
            # CR[i, m] is i's right half up to m: the sealed-right read-back without its seal
            stack[size, 0], stack[size, 1], stack[size, 2] = SEALED_RIGHT, i, split
            stack[size + 1, 0], stack[size + 1, 1], stack[size + 1, 2] = SEALED_LEFT, split + 1, j
        else:  # j takes i
            heads[i] = j
            for m in range(i, j):
                values[m - i] = sr[i, m] + cl[m + 1, j] + cont(stop, j, LEFT, m + 1 == j)
            split = i + _choose(values, j - i, sampling, scratch)
            stack[size, 0], stack[size, 1], stack[size, 2] = SEALED_RIGHT, i, split
            stack[size + 1, 0], stack[size + 1, 1], stack[size + 1, 2] = SEALED_LEFT, split + 1, j
        size += 2


@njit(cache=True)
def tree_counts(heads, n, share, root_m, arcs, stops):
    """`share` times the counts of one tree (heads[a], -1 for the root), added to the arrays in the
    layout `posteriors` fills."""
    left = np.zeros(n, np.int64)
    right = np.zeros(n, np.int64)
    for a in range(n):
        h = heads[a]
        if h < 0:
            root_m[a] += share
            continue
        arcs[h, a] += share
        if a < h:
            left[h] += 1
        else:
            right[h] += 1
    for h in range(n):
        for side in range(2):
            k = left[h] if side == LEFT else right[h]
            if k == 0:
                stops[h, side, 1, 1] += share
            else:
                stops[h, side, 1, 0] += share
                stops[h, side, 0, 0] += (k - 1.0) * share
                stops[h, side, 0, 1] += share


@njit(cache=True)
def marginals(semiring, root, attach, stop, n, root_m, arcs, stops):
    """Under sum, the expected counts of the root (root_m[h]), the attachments (arcs[h, a]) and the
    stop decisions (stops[h, dir, adj, s]); under max, those of the best tree. Returns log Z (the
    best tree's log score under max); -inf (counts all 0) when no tree is possible."""
    if semiring == SUM:
        return marginals_sum(root, attach, stop, n, root_m, arcs, stops)
    root_m[:] = 0.0
    arcs[:, :] = 0.0
    stops[:, :, :, :] = 0.0
    cr, sr, ir, cl, sl, il = empty_charts(n)
    sampling = is_sampling(semiring)
    log_z = inside(SUM if sampling else semiring, root, attach, stop, n, cr, sr, ir, cl, sl, il)
    if not log_z > NEG_INF:
        return log_z
    heads = np.empty(n, np.int64)
    draws = sample_count(semiring) if sampling else 1
    for _ in range(draws):
        read_back(root, attach, stop, n, cr, sr, ir, cl, sl, il, heads, sampling)
        tree_counts(heads, n, 1.0 / draws, root_m, arcs, stops)
    return log_z


@njit(cache=True)
def marginals_sum(root, attach, stop, n, root_m, arcs, stops):
    """marginals() under sum: what an E-step under sum calls, which then never compiles the
    read-back that the other semirings run (seconds of a cold start)."""
    root_m[:] = 0.0
    arcs[:, :] = 0.0
    stops[:, :, :, :] = 0.0
    cr, sr, ir, cl, sl, il = empty_charts(n)
    log_z = inside(np.int64(SUM), root, attach, stop, n, cr, sr, ir, cl, sl, il)  # one compile: no literal
    if log_z > NEG_INF:
        posteriors(root, attach, stop, n, cr, sr, ir, cl, sl, il, log_z, root_m, arcs, stops)
    return log_z


@njit(cache=True)
def best_tree(root, attach, stop, n, heads):
    """heads[a] = the head of word a in the best tree, -1 for the root; returns its log score
    (-inf, heads all -1, when no tree is possible)."""
    return _one_tree(MAX, root, attach, stop, n, heads)


@njit(cache=True)
def sample_tree(root, attach, stop, n, heads):
    """heads[a] of a tree drawn from the posterior (the caller seeds the generator), -1 for the
    root; returns log Z (-inf, heads all -1, when no tree is possible)."""
    return _one_tree(SUM, root, attach, stop, n, heads)


@njit(cache=True)
def _one_tree(semiring, root, attach, stop, n, heads):
    cr, sr, ir, cl, sl, il = empty_charts(n)
    heads[:] = -1
    log_score = inside(semiring, root, attach, stop, n, cr, sr, ir, cl, sl, il)
    if log_score > NEG_INF:
        read_back(root, attach, stop, n, cr, sr, ir, cl, sl, il, heads, semiring == SUM)
    return log_score


@njit(cache=True)
def harmonic_counts(n):
    """Klein & Manning's harmonic start, read as they describe it ("the ROOT always had a single
    argument and took each word with equal probability"; words "took other words as arguments in
    inverse proportion to the distance between them"): every word is the root with probability
    1 / n, and otherwise takes its head h with probability proportional to 1 / |h - a| (its
    head's mass, (n - 1) / n, spread over the other words so). The stop decisions, which that
    description leaves open, are counted as expected under the trees weighing the product over
    their attachments of 1 / distance. Returns (root_m, arcs, stops) as `marginals` does; they
    depend on n alone."""
    root = np.zeros(n)
    attach = np.zeros((n, n))
    arcs = np.zeros((n, n))
    for a in range(n):
        total = 0.0
        for h in range(n):
            if h != a:
                attach[h, a] = -np.log(abs(h - a))
                total += 1.0 / abs(h - a)
        for h in range(n):
            if h != a:
                arcs[h, a] = (n - 1.0) / n / (abs(h - a) * total)
    root_m = np.full(n, 1.0 / n)
    stop = np.zeros((n, 2, 2, 2))
    tree_root = np.zeros(n)
    tree_arcs = np.zeros((n, n))
    stops = np.zeros((n, 2, 2, 2))
    # the E-step's own DP, compiled once for both (marginals with a literal SUM compiled it, and
    # inside, a second time: a sixth of the DMV's cold start)
    marginals_sum(root, attach, stop, n, tree_root, tree_arcs, stops)
    return root_m, arcs, stops


# What the glue calls: each compiled once, not linked into every entry point (emc/structures/pointers.py).
marginals_by_pointer = by_pointer(marginals)
marginals_sum_by_pointer = by_pointer(marginals_sum)
