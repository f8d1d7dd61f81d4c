"""Inside-outside over labeled binary trees (a PCFG in Chomsky normal form), written once for the
sum and max semirings.

A sentence of n symbols has the spans (i, j), 0 <= i < j <= n. A tree holds 2n - 1 of them as
nodes, each with one of K labels: a span of one symbol is a preterminal (score emit[i, a]), a
longer span (i, j) with label a is split at k into (i, k) with label b and (k, j) with label c
(score rule[b, c, a]), and the whole sentence's label a scores root[a]. Scores are linear (the
product of the blocks' probabilities); rule is laid out (left, right, parent) so that the inner
loops over the parent label run over contiguous memory.

Charts are linear too, one row of K values per span with a log scale of its own: the true inside
score of (i, j) with label a is inside[i, j, a] * exp(scale[i, j]), the row normalised to a max of 1.
A sentence of 40 symbols spans far more than a double's range, but one span's K values do not; a
span's terms from different splits are brought to their largest scale first (terms more than
~700 nats below it vanish, as they would in a log-space sum). Both semirings commute with the
rescaling, so the max instance is the sum instance with `plus`. O(n^3 K^3) per sentence as the
textbook writes it; here O(n^3 K^2 + n^2 K^3), since the children's labels are combined over the
splits before the rule scores (which do not depend on the split) multiply in.

Sampling draws trees top-down from the sum-semiring inside charts (`read_back` with sampling: the root's label
by root * inside, then each node's split and children's labels by rule * inside(left) *
inside(right)); under a sampling request (emc/structures/sampling.py) `marginals` fills the
average counts of the drawn trees and returns the exact log Z.

Under sum, `marginals` fills the expected counts of the sentence's rewrites (rule_counts, the
layout of rule), preterminals (emit_counts[i, a]) and root label (root_counts[a]) and returns log Z;
under max, the 0/1 counts of the best tree and its log score. An impossible sentence (every
tree has probability 0) returns -inf and leaves the counts at 0.
"""
import numpy as np
from numba import njit

from emc.structures.buffers import copy_into
from emc.structures.pointers import by_pointer
from emc.structures.sampling import draw, is_sampling, sample_count
from emc.structures.semiring import MAX, SUM, plus

NEG_INF = -np.inf


@njit(cache=True)
def _normalise(row, K):
    """Scale a chart row to a max of 1; returns the log of the factor (-inf for an all-zero row)."""
    m = 0.0
    for a in range(K):
        if row[a] > m:
            m = row[a]
    if not m > 0.0:
        row[:] = 0.0
        return NEG_INF
    for a in range(K):
        row[a] /= m
    return np.log(m)


@njit(inline="always")
def _open_span(chart, scale, i, j, top):
    """Clears the row of span (i, j) before its sums; False, with its scale -inf, when nothing
    reaches it (top, the largest scale among its terms, is -inf)."""
    chart[i, j, :] = 0.0
    if top == NEG_INF:
        scale[i, j] = NEG_INF
        return False
    return True


@njit(cache=True)
def inside(semiring, rule, emit, n, K, chart, scale):
    """chart[i, j, a] * exp(scale[i, j]): the (+) over the subtrees of (i, j) rooted in label a
    of their scores. The children's labels are combined over the splits first, pairs[b, c] = (+)
    over k of inside(i, k, b) inside(k, j, c), then rewritten: O(n K^2) + O(K^3) per span, not
    O(n K^3) (the rule scores do not depend on k, and both semirings distribute over them)."""
    pairs = np.empty((K, K))
    for i in range(n):
        copy_into(chart[i, i + 1], emit[i])
        scale[i, i + 1] = _normalise(chart[i, i + 1], K)
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length
            top = NEG_INF
            for k in range(i + 1, j):
                top = max(top, scale[i, k] + scale[k, j])
            if not _open_span(chart, scale, i, j, top):
                continue
            row = chart[i, j]
            _child_pairs(semiring, chart, scale, i, j, top, K, pairs)
            for b in range(K):
                for c in range(K):
                    w = pairs[b, c]
                    if w == 0.0:
                        continue
                    for a in range(K):
                        row[a] = plus(semiring, row[a], rule[b, c, a] * w)
            scale[i, j] = top + _normalise(row, K)


@njit(cache=True)
def _child_pairs(semiring, chart, scale, i, j, shift, K, pairs):
    """pairs[b, c] = (+) over the splits k of (i, j) of chart[i, k, b] chart[k, j, c] exp(scale[i, k]
    + scale[k, j] - shift)."""
    pairs[:, :] = 0.0
    for k in range(i + 1, j):
        f = np.exp(scale[i, k] + scale[k, j] - shift)
        if f == 0.0:
            continue
        for b in range(K):
            lb = chart[i, k, b] * f
            if lb == 0.0:
                continue
            for c in range(K):
                pairs[b, c] = plus(semiring, pairs[b, c], lb * chart[k, j, c])


@njit(cache=True)
def outside(rule, root, inside_chart, inside_scale, n, K, chart, scale):
    """chart[i, j, a] * exp(scale[i, j]): the sum over the rest of the tree given that (i, j) is a
    node with label a (root score included), so that P(node (i, j) with label a) = inside *
    outside / Z. Gathered from the longer spans that can be its parent: (i, p) split at j, with
    (j, p) the right sibling, or (h, j) split at i, with (h, i) the left sibling. Each parent's
    rewrites are summed once, below[h, p, b, c] = sum over a of rule[b, c, a] chart[h, p, a], so a
    span costs O(n K^2) + O(K^3)."""
    below = np.zeros((n + 1, n + 1, K, K))
    copy_into(chart[0, n], root)
    scale[0, n] = _normalise(chart[0, n], K)
    _rewrites_below(rule, chart[0, n], K, below[0, n])
    for length in range(n - 1, 0, -1):
        for i in range(n - length + 1):
            j = i + length
            top = NEG_INF
            for p in range(j + 1, n + 1):
                top = max(top, scale[i, p] + inside_scale[j, p])
            for h in range(i):
                top = max(top, scale[h, j] + inside_scale[h, i])
            if not _open_span(chart, scale, i, j, top):
                continue
            row = chart[i, j]
            for p in range(j + 1, n + 1):  # (i, j) is the left child of (i, p)
                f = np.exp(scale[i, p] + inside_scale[j, p] - top)
                if f == 0.0:
                    continue
                parent = below[i, p]
                for b in range(K):
                    acc = 0.0
                    for c in range(K):
                        acc += parent[b, c] * inside_chart[j, p, c]
                    row[b] += acc * f
            for h in range(i):  # (i, j) is the right child of (h, j)
                f = np.exp(scale[h, j] + inside_scale[h, i] - top)
                if f == 0.0:
                    continue
                parent = below[h, j]
                for b in range(K):
                    w = inside_chart[h, i, b] * f
                    if w == 0.0:
                        continue
                    for c in range(K):
                        row[c] += parent[b, c] * w
            scale[i, j] = top + _normalise(row, K)
            if length > 1:
                _rewrites_below(rule, row, K, below[i, j])


@njit(cache=True)
def _rewrites_below(rule, outside_row, K, below):
    """below[b, c] = sum over a of rule[b, c, a] outside_row[a]."""
    for b in range(K):
        for c in range(K):
            s = 0.0
            for a in range(K):
                s += rule[b, c, a] * outside_row[a]
            below[b, c] = s


@njit(cache=True)
def _root_total(semiring, root, inside_chart, inside_scale, n, K):
    """log of the (+) over root labels a of root[a] * inside(0, n, a): log Z, or the best tree's log score."""
    total = 0.0
    for a in range(K):
        total = plus(semiring, total, root[a] * inside_chart[0, n, a])
    if not total > 0.0:
        return NEG_INF if total == 0.0 else total  # NaN passes on
    return np.log(total) + inside_scale[0, n]


@njit(cache=True)
def _expected_counts(rule, root, ins, ins_scale, out, out_scale, n, K, log_z, rule_counts, emit_counts, root_counts):
    """The posterior expected counts from the inside and outside charts: of each root label, of each
    preterminal (i, a), and of each rewrite (b, c, a) summed over the nodes of the sentence."""
    f = np.exp(ins_scale[0, n] - log_z)
    for a in range(K):
        root_counts[a] = root[a] * ins[0, n, a] * f
    for i in range(n):
        f = np.exp(out_scale[i, i + 1] + ins_scale[i, i + 1] - log_z)
        for a in range(K):
            emit_counts[i, a] = out[i, i + 1, a] * ins[i, i + 1, a] * f
    pairs = np.empty((K, K))
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length
            if out_scale[i, j] == NEG_INF:
                continue
            parent = out[i, j]
            # pairs[b, c]: inside(i, k, b) inside(k, j, c) over the splits, times outside(i, j) / Z's scales
            # np.int64, as inside passes the semiring: a literal SUM compiles _child_pairs once more
            _child_pairs(np.int64(SUM), ins, ins_scale, i, j, log_z - out_scale[i, j], K, pairs)
            for b in range(K):
                for c in range(K):
                    w = pairs[b, c]
                    if w == 0.0:
                        continue
                    for a in range(K):
                        rule_counts[b, c, a] += parent[a] * rule[b, c, a] * w


@njit(inline="always")
def _choose(weights, count, sampling):
    """The index of the largest of weights[:count] (the first of ties), or with `sampling` one drawn
    in proportion to its weight."""
    if sampling:
        return draw(weights, count)
    best, index = -1.0, 0
    for q in range(count):
        if weights[q] > best:
            best, index = weights[q], q
    return index


@njit(cache=True)
def read_back(rule, root, ins, ins_scale, n, K, nodes, sampling):
    """A tree read back from the inside charts: the best one from max-semiring charts, or with
    `sampling` one drawn from the posterior given sum-semiring charts (the caller seeds the
    generator); each node's split and children's labels are found again, no back-pointers
    stored. nodes[q] = (i, j, label, split) in preorder, split 0 for a preterminal. Returns the
    number of nodes (2n - 1)."""
    weights = np.empty(max(K, n * K * K))
    for a in range(K):
        weights[a] = root[a] * ins[0, n, a]
    stack = np.empty((2 * n + 2, 3), np.int64)
    stack[0, 0], stack[0, 1], stack[0, 2] = 0, n, _choose(weights, K, sampling)
    top, count = 1, 0
    while top > 0:
        top -= 1
        i, j, a = stack[top, 0], stack[top, 1], stack[top, 2]
        nodes[count, 0], nodes[count, 1], nodes[count, 2], nodes[count, 3] = i, j, a, 0
        count += 1
        if j - i < 2:
            continue
        q = 0
        for k in range(i + 1, j):
            f = np.exp(ins_scale[i, k] + ins_scale[k, j] - ins_scale[i, j])
            for b in range(K):
                for c in range(K):
                    weights[q] = rule[b, c, a] * ins[i, k, b] * ins[k, j, c] * f
                    q += 1
        q = _choose(weights, q, sampling)
        split, left, right = i + 1 + q // (K * K), (q // K) % K, q % K
        nodes[count - 1, 3] = split
        stack[top, 0], stack[top, 1], stack[top, 2] = split, j, right  # popped after the left child
        stack[top + 1, 0], stack[top + 1, 1], stack[top + 1, 2] = i, split, left
        top += 2
    return count


@njit(cache=True)
def _add_tree_counts(nodes, count, share, rule_counts, emit_counts, root_counts):
    """`share` times the 0/1 counts of the tree in nodes[:count] (preorder, see read_back)."""
    root_counts[nodes[0, 2]] += share
    for q in range(count):
        i, j, a, k = nodes[q, 0], nodes[q, 1], nodes[q, 2], nodes[q, 3]
        if j - i == 1:
            emit_counts[i, a] += share
        else:
            left, right = _child_label(nodes, count, i, k), _child_label(nodes, count, k, j)
            rule_counts[left, right, a] += share


@njit(cache=True)
def _charts(n, K):
    return np.zeros((n + 1, n + 1, K)), np.full((n + 1, n + 1), NEG_INF)


@njit(cache=True)
def marginals(semiring, rule, emit, root, n, K, rule_counts, emit_counts, root_counts):
    """Under sum, the expected counts of one sentence (rule_counts, emit_counts, root_counts) and
    log Z; under max, the counts of the best tree and its log score (see the module docstring)."""
    if semiring == SUM:
        return marginals_sum(rule, emit, root, n, K, rule_counts, emit_counts, root_counts)
    rule_counts[:, :, :] = 0.0
    emit_counts[:, :] = 0.0
    root_counts[:] = 0.0
    sampling = is_sampling(semiring)
    chart_semiring = SUM if sampling else semiring
    ins, ins_scale = _charts(n, K)
    inside(chart_semiring, rule, emit, n, K, ins, ins_scale)
    log_z = _root_total(chart_semiring, root, ins, ins_scale, n, K)
    if not log_z > NEG_INF:  # -inf, or NaN from NaN parameters
        return log_z
    nodes = np.empty((2 * n - 1, 4), np.int64)
    draws = sample_count(semiring) if sampling else 1
    for _ in range(draws):
        _add_tree_counts(nodes, read_back(rule, root, ins, ins_scale, n, K, nodes, sampling), 1.0 / draws,
                         rule_counts, emit_counts, root_counts)
    return log_z


@njit(cache=True)
def marginals_sum(rule, emit, root, n, K, rule_counts, emit_counts, root_counts):
    """marginals() under sum: what an E-step under sum calls, which then never compiles the
    read-back that the other semirings run (seconds of a cold start)."""
    rule_counts[:, :, :] = 0.0
    emit_counts[:, :] = 0.0
    root_counts[:] = 0.0
    ins, ins_scale = _charts(n, K)
    semiring = np.int64(SUM)  # one compile of each pass, whoever calls it: no literal
    inside(semiring, rule, emit, n, K, ins, ins_scale)
    log_z = _root_total(semiring, root, ins, ins_scale, n, K)
    if not log_z > NEG_INF:  # -inf, or NaN from NaN parameters
        return log_z
    out, out_scale = _charts(n, K)
    outside(rule, root, ins, ins_scale, n, K, out, out_scale)
    _expected_counts(rule, root, ins, ins_scale, out, out_scale, n, K, log_z, rule_counts, emit_counts, root_counts)
    return log_z


@njit(cache=True)
def _child_label(nodes, count, i, j):
    for q in range(count):
        if nodes[q, 0] == i and nodes[q, 1] == j:
            return nodes[q, 2]
    return -1


@njit(inline="always")
def read_tree(semiring, rule, emit, root, n, K, nodes):
    """One tree as nodes (see read_back), read back from the inside pass under `semiring`: the
    best (MAX) or one drawn from the posterior (SUM); returns its log score or log Z, -inf (no
    nodes written) when no tree is possible."""
    ins, ins_scale = _charts(n, K)
    inside(semiring, rule, emit, n, K, ins, ins_scale)
    total = _root_total(semiring, root, ins, ins_scale, n, K)
    if total > NEG_INF:
        read_back(rule, root, ins, ins_scale, n, K, nodes, semiring != MAX)
    return total


@njit(cache=True)
def viterbi(rule, emit, root, n, K, nodes):
    """The best tree as nodes (i, j, label, split) in preorder (see read_back) and its log score;
    -inf (no nodes written) when no tree is possible."""
    return read_tree(MAX, rule, emit, root, n, K, nodes)


@njit(cache=True)
def sample(rule, emit, root, n, K, nodes):
    """A tree drawn from the posterior as nodes (see read_back) and log Z; -inf (no nodes
    written) when no tree is possible. The caller seeds the generator."""
    return read_tree(SUM, rule, emit, root, n, K, nodes)


@njit(cache=True)
def span_marginals(rule, emit, root, n, K, constituent):
    """constituent[i, j] = P((i, j) is a node of the tree, whatever its label), for every
    non-empty span; returns log Z."""
    ins, ins_scale = _charts(n, K)
    semiring = np.int64(SUM)  # the E-step's compile of each pass serves: no literal
    inside(semiring, rule, emit, n, K, ins, ins_scale)
    log_z = _root_total(semiring, root, ins, ins_scale, n, K)
    constituent[:, :] = 0.0
    if not log_z > NEG_INF:
        return log_z
    out, out_scale = _charts(n, K)
    outside(rule, root, ins, ins_scale, n, K, out, out_scale)
    for i in range(n):
        for j in range(i + 1, n + 1):
            f = np.exp(ins_scale[i, j] + out_scale[i, j] - log_z)
            total = 0.0
            for a in range(K):
                total += ins[i, j, a] * out[i, j, a]
            constituent[i, j] = min(total * f, 1.0)
    return log_z


# What the glue calls: each compiled once, not linked into every entry point (emc/structures/pointers.py).
marginals_by_pointer = by_pointer(marginals)
marginals_sum_by_pointer = by_pointer(marginals_sum)
span_marginals_by_pointer = by_pointer(span_marginals)
