"""The DMV's dynamic program over projective dependency trees with valence, for every semiring:
the rule program emc/structures/deptree/chart.em (split heads, Eisner & Satta 1999), compiled by
emc as any structure written as rules is (chart.py), run on one sentence at a time.

Words are positions 0..n-1; the tree has one root. Scores (logs of products of factors), from the
generated glue (emc/codegen/templates/deptree.py.j2):
    root[h]               word h is the root
    attach[h, a]          h takes a as a dependent (direction: left when a < h)
    stop[h, dir, adj, s]  h, on side dir (0 left, 1 right), stops (s = 1) or takes another
                          dependent (s = 0), adj = 1 when it has taken none on that side yet.
A tree scores root + its attachments + for each head and side one `continue` per dependent (the
first adjacent, the others not) and one `stop` (adjacent iff the side is empty).

The chart program's tokens are the sentence's positions, so its tables, laid out per sentence
here (`_sentence`), hold these scores as weights: its root table one per position, its attachment
table one per head and dependent position, its stop table one per head position, side, valence
and decision. Its expected counts are then the marginals: root_m[h], arcs[h, a] and
stops[h, dir, adj, s] under sum; under max the best tree's 0/1 counts; under a sampling request
(emc/structures/sampling.py) the drawn trees' average counts. An impossible sentence returns -inf
and leaves the counts at 0; NaN scores (from NaN parameters) return NaN, which the runtime reports.
"""
import numpy as np
from numba import njit

from emc.codegen.abi import TABLE_INDEX, TABLE_OFFSET, TABLE_OUTCOMES, TABLE_ROW_OFFSET, TABLE_ROWS
from emc.structures.deptree import chart
from emc.structures.pointers import by_pointer
from emc.structures.semiring import SUM

NEG_INF = -np.inf
# the chart program's parts that attach a word, numbered in the program's order (decoding writes
# these numbers): right(h, m, d, a) and left(d, m, h, a); top(h) makes the root, a head of -1
RIGHT, LEFT = 2, 4


@njit(cache=True)
def _table(meta, table, offset, row_offset, rows, outcomes, index):
    meta[table + TABLE_OFFSET], meta[table + TABLE_ROW_OFFSET] = offset, row_offset
    meta[table + TABLE_ROWS], meta[table + TABLE_OUTCOMES], meta[table + TABLE_INDEX] = rows, outcomes, index


@njit(cache=True)
def _finite_max(a, b):
    return b if b > a else a


@njit(cache=True)
def _gauged(root, attach, stop, n):
    """Scores that give every tree the same score up to one constant, returned with them, each
    group of alternatives' largest at 0, so that the chart (linear, one scale a level) holds
    scores of any range: every word has one head or is the root (its root and attach scores
    shift together), every head and side stops once (its two stop scores shift together) and
    continues once per dependent there (its continue scores shift against those attachments)."""
    root, attach, stop = root.copy(), attach.copy(), stop.copy()
    shift = 0.0
    for h in range(n):
        for side in range(2):
            go = _finite_max(stop[h, side, 0, 0], stop[h, side, 1, 0])
            end = _finite_max(stop[h, side, 0, 1], stop[h, side, 1, 1])
            go = go if go > -np.inf else 0.0
            end = end if end > -np.inf else 0.0
            for adj in range(2):
                stop[h, side, adj, 0] -= go
                stop[h, side, adj, 1] -= end
            shift += end
            for a in range(h + 1, n) if side == 1 else range(h):
                attach[h, a] += go
    for a in range(n):
        top = root[a]
        for h in range(n):
            if h != a:
                top = _finite_max(top, attach[h, a])
        top = top if top > -np.inf else 0.0
        root[a] -= top
        for h in range(n):
            attach[h, a] -= top
        shift += top
    return root, attach, stop, shift


@njit(cache=True)
def _sentence(root, attach, stop, n):
    """The chart program's data for a sentence of n words: (ints, layout, meta, params), its
    tokens the positions and its tables the scores as weights (outcome-major, as every table).
    Plain loops and np.empty/np.zeros: numba compiles each numpy function it meets, seconds of a
    cold start for np.arange, np.array and friends."""
    ints = np.empty(2 + n, np.int32)
    ints[0], ints[1] = 0, n
    for h in range(n):
        ints[2 + h] = h
    # array a is ints[layout[a]:layout[a + 1]]: the offsets, the tokens, the others (a given tree's) empty
    layout = np.empty(len(chart.ARRAYS) + 1, np.int64)
    end = 0
    for a in range(len(chart.ARRAYS)):
        layout[a] = end
        end += 2 if a == chart.A_OFFSETS else n if a == chart.A_TOKENS_0 else 0
    layout[len(chart.ARRAYS)] = end
    meta = np.zeros(chart.META_SIZE, np.int64)
    meta[chart.M_SIZE_0], meta[chart.M_SIZE_1] = n, 2
    attach_at, stop_at = n, n + n * n
    _table(meta, chart.T_0, 0, 0, 1, n, 0)  # root: one row, a position per outcome
    _table(meta, chart.T_1, attach_at, 1, n, n, 1)  # attach: the head's row, the dependent's outcome
    _table(meta, chart.T_2, stop_at, 1 + n, 4 * n, 2, 2)  # stop: (head, side, valence) rows, the decision
    theta = np.zeros(stop_at + 8 * n)
    for h in range(n):
        theta[h] = np.exp(root[h])
        for a in range(n):
            if a != h:
                theta[attach_at + a * n + h] = np.exp(attach[h, a])
        for side in range(2):
            for adj in range(2):
                for s in range(2):
                    theta[stop_at + s * 4 * n + (h * 2 + side) * 2 + adj] = np.exp(stop[h, side, adj, s])
    rows = 1 + 5 * n
    row_total = np.empty(rows)
    for r in range(rows):
        row_total[r] = 1.0
    scale = np.empty(1)
    scale[0] = 1.0
    return ints, layout, meta, (theta, row_total, np.zeros(rows), np.zeros(3), scale)


@njit(cache=True)
def _any_nan(root, attach, stop, n):
    """Whether a score is NaN: the chart would take it for an impossible firing, not report it."""
    total = 0.0
    for h in range(n):
        total += root[h]
        for a in range(n):
            if a != h:
                total += attach[h, a]
        for side in range(2):
            for adj in range(2):
                for s in range(2):
                    total += stop[h, side, adj, s]
    return total != total  # NaN, or -inf + inf: a NaN


@njit(cache=True)
def _marginals_from(dense, n, root_m, arcs, stops):
    """The chart program's counts (laid out as _sentence lays out its weights) as the marginals."""
    attach_at, stop_at = n, n + n * n
    for h in range(n):
        root_m[h] = dense[h]
        for a in range(n):
            arcs[h, a] = dense[attach_at + a * n + h] if a != h else 0.0
        for side in range(2):
            for adj in range(2):
                for s in range(2):
                    stops[h, side, adj, s] = dense[stop_at + s * 4 * n + (h * 2 + side) * 2 + adj]


@njit(cache=True)
def _chart_inputs(root, attach, stop, n):
    """The chart's inputs for the sentence, its scores gauged: (ints, layout, meta, params,
    derived, counts, the gauge's shift of log Z)."""
    root, attach, stop, shift = _gauged(root, attach, stop, n)
    ints, layout, meta, params = _sentence(root, attach, stop, n)
    counts = (np.zeros(params[0].shape[0]), np.zeros(0, np.uint8), np.zeros(0, np.int64))
    return ints, layout, meta, params, chart.prepare(meta, params), counts, shift


@njit(cache=True)
def _marginals_of(log_z, counts, n, root_m, arcs, stops):
    """The chart's counts as the marginals (all 0 when no tree is possible); returns log_z."""
    if not log_z > NEG_INF:
        counts[0][:] = 0.0
    _marginals_from(counts[0], n, root_m, arcs, stops)
    return log_z


@njit(cache=True)
def _nan_marginals(root_m, arcs, stops):
    root_m[:], arcs[:, :], stops[:, :, :, :] = 0.0, 0.0, 0.0
    return np.nan


@njit(cache=True)
def marginals(semiring, root, attach, stop, n, root_m, arcs, stops):
    """Under sum, the expected counts of the root (root_m[h]), the attachments (arcs[h, a]) and the
    stop decisions (stops[h, dir, adj, s]); under max, those of the best tree; under a sampling
    request, the drawn trees' average. Returns log Z (the best tree's log score under max); -inf
    (counts all 0) when no tree is possible."""
    if _any_nan(root, attach, stop, n):
        return _nan_marginals(root_m, arcs, stops)
    ints, layout, meta, params, derived, counts, shift = _chart_inputs(root, attach, stop, n)
    log_z = chart.estep_example(0, ints, layout, meta, params, derived, semiring, 1.0, counts) + shift
    return _marginals_of(log_z, counts, n, root_m, arcs, stops)


@njit(cache=True)
def marginals_sum(root, attach, stop, n, root_m, arcs, stops):
    """marginals() under sum: what an E-step under sum calls, which then never compiles the
    read-back that the other semirings run (seconds of a cold start)."""
    if _any_nan(root, attach, stop, n):
        return _nan_marginals(root_m, arcs, stops)
    ints, layout, meta, params, derived, counts, shift = _chart_inputs(root, attach, stop, n)
    log_z = chart.estep_sum(0, ints, layout, meta, params, derived, np.int64(SUM), 1.0, counts) + shift
    return _marginals_of(log_z, counts, n, root_m, arcs, stops)


@njit(cache=True)
def _heads_of(parts, n, heads):
    """heads[a] = the head of word a in a decoded derivation (the chart program's encoding), -1
    for the root."""
    heads[:] = -1
    for q in range(parts[0]):
        row = parts[1 + q * chart.PART_WIDTH:1 + (q + 1) * chart.PART_WIDTH]
        if row[0] == RIGHT:  # (h, m, d, a): h takes d on its right
            heads[row[3]] = row[1]
        elif row[0] == LEFT:  # (d, m, h, a): h takes d on its left
            heads[row[1]] = row[3]


@njit(cache=True)
def best_tree(root, attach, stop, n, heads):
    """heads[a] = the head of word a in the best tree, -1 for the root; returns its log score
    (-inf, heads all -1, when no tree is possible)."""
    ints, layout, meta, params, derived, _, shift = _chart_inputs(root, attach, stop, n)
    parts = np.zeros(1 + (n + 3) * chart.PARTS_PER_LEVEL * chart.PART_WIDTH, np.int32)
    log_score = chart.decode_example(0, ints, layout, meta, params, derived, parts)
    _heads_of(parts, n, heads)
    return log_score + shift


@njit(cache=True)
def sample_tree(root, attach, stop, n, heads):
    """heads[a] of a tree drawn from the posterior (the caller seeds the generator), -1 for the
    root; returns log Z (-inf, heads all -1, when no tree is possible)."""
    ints, layout, meta, params, derived, _, shift = _chart_inputs(root, attach, stop, n)
    parts = np.zeros(1 + (n + 3) * chart.PARTS_PER_LEVEL * chart.PART_WIDTH, np.int32)
    log_z = chart.sample_example(0, ints, layout, meta, params, derived, parts)
    _heads_of(parts, n, heads)
    return log_z + shift


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
    # the E-step's own DP, compiled once for both
    marginals_sum(root, attach, stop, n, tree_root, tree_arcs, stops)
    return root_m, arcs, stops


# What the glue calls: each compiled once, not linked into every entry point (emc/structures/pointers.py).
marginals_by_pointer = by_pointer(marginals)
marginals_sum_by_pointer = by_pointer(marginals_sum)
