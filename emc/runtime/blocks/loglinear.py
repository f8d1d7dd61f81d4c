"""The M-step of a featured block, compiled: a softmax over sparse features per context row, its
regularised expected log-likelihood, and limited-memory BFGS (Nocedal & Wright 2006, algorithms
7.4-7.5) on every row's weights at once.

The objective is a sum of independent problems, one per row (the features are conjoined with the
row and the l2 penalty is a sum over entries), and each row keeps its own line search, curvature
pairs and stopping test. The rows are stepped in lockstep all the same, with every array laid out
rows-last (weights and gradients features x rows, scores outcomes x rows): then one pass over the
sparse feature matrix serves every row, and each of its steps is one vector operation across rows.
Three choices keep that cheap:
- The line search runs in score space. Along a direction D the scores are S + t (phi D), so phi D
  is gathered once per iteration and each trial step costs one pass of exp over the scores, not an
  evaluation with its gather and scatter.
- The gradient is formed only at accepted points: its likelihood part phi^T (residuals) by one
  pass over the outcomes, then one sequential pass over the features that takes the step in the
  weights, adds the penalty's part and takes every dot product the next direction needs (a block
  of one row forms it by columns, in scalars, in that same pass).
- The two-loop recursion runs on coefficients: every vector it touches (the gradient, the steps s
  and the gradient changes y) is a per-row combination of a few stored arrays (gradients and
  directions), whose dot products the passes above take. A direction is written out (one pass)
  only when it combines several stored arrays; steepest descent, the first, is -g itself.
On CoNLL-2000's emission block (45 rows, 19k words, 41k features) a 2-iteration M-step makes three
gathers, two gradient passes and a few passes of exp; the row-by-row M-step it replaced made about
four and a half gathers and scatters per row, each reading the sparse matrix once per row.

The line search only accepts a step with Armijo's sufficient decrease, so every iterate lowers
its row's objective: the M-step never lowers the objective it maximises (a generalised EM step).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from emc.structures.buffers import copy_into

ARMIJO = 1e-4          # sufficient decrease: f(x + a d) <= f(x) + ARMIJO * a * g.d
MAX_BACKTRACKS = 30    # then the row keeps its point and stops
FAST = {"contract"}    # fused multiply-adds; no reassociation, so results do not depend on alignment
# A line search trial shifts each row's scores by a bound on their maximum (max S + t max phi D)
# instead of a pass to find it; when the bound is this far above the true maximum the sum of exps
# could lose every term to underflow, and the row's trial is summed again with the true maximum.
SHIFT_SLACK = 600.0


def feature_rows(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray) -> tuple:
    """The gathers' form of an (outcome x feature) CSR matrix: (indices, values, spill_ptr,
    spill_indices, spill_values). Each outcome's first `width` entries form a row of a dense
    (outcomes x width) pair of arrays, padded with value 0 (at feature 0, which then adds
    nothing); the entries past `width` spill into CSR arrays. `width` is the entry count 90% of
    the outcomes stay within, so a few outcomes with many entries (word vectors for some words
    only) cost no padding. Why: a loop of fixed length over a row unrolls, where a CSR row's
    bounds are read per outcome."""
    counts = np.diff(indptr)
    width = int(np.sort(counts)[int(0.9 * (len(counts) - 1))]) if len(counts) else 0
    kept = np.minimum(counts, width)
    rows = np.repeat(np.arange(len(counts)), kept)
    slots = np.arange(len(rows)) - np.repeat(np.cumsum(kept) - kept, kept)
    taken = np.repeat(indptr[:-1], kept) + slots
    fixed_indices, fixed_values = np.zeros((len(counts), width), np.int64), np.zeros((len(counts), width))
    fixed_indices[rows, slots], fixed_values[rows, slots] = indices[taken], values[taken]
    spill = np.ones(len(indices), bool)
    spill[taken] = False
    spill_ptr = np.concatenate([[0], np.cumsum(counts - kept)]).astype(np.int64)
    return (fixed_indices, fixed_values, spill_ptr, indices[spill].astype(np.int64),
            values[spill].astype(float))


def feature_columns(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, n_features: int) -> tuple:
    """The gradient pass's forms of the same matrix: by columns (CSC: column_ptr, outcomes,
    values, each column's outcomes in increasing order), then by rows as it is (CSR: indptr,
    indices, values)."""
    outcomes = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
    order = np.argsort(indices, kind="stable")
    column_ptr = np.zeros(n_features + 1, np.int64)
    np.cumsum(np.bincount(indices, minlength=n_features), out=column_ptr[1:])
    values = np.asarray(values, float)
    return (column_ptr, outcomes[order], values[order], np.asarray(indptr, np.int64), np.asarray(indices, np.int64),
            values)


# exp by range reduction, x = k ln 2 + r with |r| <= ln 2 / 2, and a degree-13 Taylor polynomial
# of exp(r) (Cody & Waite's two-part ln 2 keeps r exact to the last bits): within 4e-16 relative
# of libm's exp over [-708, 0], and a loop that vectorises, where numba calls libm per element.
LOG2E = 1.4426950408889634
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
SMALLEST = -708.0  # exp(x) for x below is under the smallest normal double: taken as 0


@njit(inline="always", fastmath=FAST)
def _exp_in_place(x):
    """x[i] = exp(x[i]) for x[i] <= 0 (a little above is fine), vectorised."""
    bits = x.view(np.int64)
    for i in range(x.shape[0]):
        y = x[i]
        kept = y >= SMALLEST
        y = max(y, SMALLEST)
        k = np.floor(y * LOG2E + 0.5)
        r = (y - k * LN2_HI) - k * LN2_LO
        p = 1.0 / 479001600.0
        p = 1.0 / 39916800.0 + r * p
        p = 1.0 / 3628800.0 + r * p
        p = 1.0 / 362880.0 + r * p
        p = 1.0 / 40320.0 + r * p
        p = 1.0 / 5040.0 + r * p
        p = 1.0 / 720.0 + r * p
        p = 1.0 / 120.0 + r * p
        p = 1.0 / 24.0 + r * p
        p = 1.0 / 6.0 + r * p
        p = 0.5 + r * p
        p = 1.0 + r * p
        x[i] = 1.0 + r * p
        bits[i] += np.int64(k) << 52  # times 2^k: k added to the exponent (normal, as y >= SMALLEST)
        x[i] *= kept


# --- passes over every row at once ----------------------------------------------------------
# Arrays are (items x rows), items being outcomes or features. The elementwise passes walk them as
# flat tiles of whole items (TILE entries or so): each row's parameters repeat along a tile, and a
# loop over a tile vectorises whatever the number of rows (45 rows leave 5 of every 45 entries to
# a scalar remainder in a loop over one item's rows; one row, a segmenter's, leaves nothing to
# vectorise). Reductions keep one partial per tile entry and fold them per row at the end.
TILE = 384


@njit(cache=True)
def _tiled(values, length):
    """values (one per row) repeated along a tile of `length` entries."""
    out = np.empty(length)
    for i in range(length):
        out[i] = values[i % values.shape[0]]
    return out


@njit(cache=True)
def _fold(partials, n_rows):
    """Each row's sum of a tile's partial sums."""
    out = np.zeros(n_rows)
    for i in range(partials.shape[0]):
        out[i % n_rows] += partials[i]
    return out


@njit(cache=True)
def _fold_max(partials, n_rows):
    out = np.full(n_rows, -np.inf)
    for i in range(partials.shape[0]):
        out[i % n_rows] = max(out[i % n_rows], partials[i])
    return out


@njit(cache=True)
def _tile_items(n_rows):
    return max(1, TILE // n_rows)


@njit(inline="always", fastmath=FAST)
def _gather_row(rows, source, v, out):
    """out = phi[v] . source (one outcome's scores, every row): source is features x rows."""
    fixed_indices, fixed_values, spill_ptr, spill_indices, spill_values = rows
    out[:] = 0.0
    for k in range(fixed_indices.shape[1]):
        x, w = fixed_values[v, k], source[fixed_indices[v, k]]
        for r in range(out.shape[0]):
            out[r] += x * w[r]
    for k in range(spill_ptr[v], spill_ptr[v + 1]):
        x, w = spill_values[k], source[spill_indices[k]]
        for r in range(out.shape[0]):
            out[r] += x * w[r]


@njit(cache=True, fastmath=FAST)
def _gather_one_row(rows, source, coefficient, counts, out):
    """gather for a block of one row (a segmenter's word distribution), in scalars: a view per
    feature read would cost more than the read."""
    fixed_indices, fixed_values, spill_ptr, spill_indices, spill_values = rows
    top, weighted = -np.inf, 0.0
    for v in range(out.shape[0]):
        s = 0.0
        for k in range(fixed_indices.shape[1]):
            s += fixed_values[v, k] * source[fixed_indices[v, k]]
        for k in range(spill_ptr[v], spill_ptr[v + 1]):
            s += spill_values[k] * source[spill_indices[k]]
        s *= coefficient
        out[v] = s
        top = max(top, s)
        if counts.shape[0]:
            weighted += counts[v, 0] * s
    return np.full(1, top), np.full(1, weighted)


@njit(cache=True, fastmath=FAST)
def gather(rows, source, coefficient, counts, out):
    """out = coefficient * (phi source), row by row (outcomes x rows; source features x rows);
    returns each row's largest entry and sum_v counts[v] out[v] (0 when counts has no outcomes)."""
    n_rows = out.shape[1]
    if n_rows == 1:
        return _gather_one_row(rows, source[:, 0], coefficient[0], counts, out[:, 0])
    top = np.full(n_rows, -np.inf)
    weighted = np.zeros(n_rows)
    part = np.empty(n_rows)
    for v in range(out.shape[0]):
        o = out[v]
        _gather_row(rows, source, v, part)
        for r in range(n_rows):
            o[r] = coefficient[r] * part[r]
            top[r] = max(top[r], o[r])
        if counts.shape[0]:
            c = counts[v]
            for r in range(n_rows):
                weighted[r] += c[r] * o[r]
    return top, weighted


@njit(cache=True, fastmath=FAST)
def log_partition(scores, direction, steps, shifts):
    """Each row's sum_v exp(scores[v] + steps * direction[v] - shifts), shifts being a bound on
    the maximum, and the true maximum: log_z = shift + log(sum)."""
    n_rows = scores.shape[1]
    size = _tile_items(n_rows) * n_rows
    s, d = scores.reshape(-1), direction.reshape(-1)
    step, shift = _tiled(steps, size), _tiled(shifts, size)
    mass, highest, x = np.zeros(size), np.full(size, -np.inf), np.empty(size)
    for a in range(0, s.shape[0], size):
        n = min(size, s.shape[0] - a)
        for i in range(n):
            k = np.uint64(a + i)
            x[i] = s[k] + step[i] * d[k]
            highest[i] = max(highest[i], x[i])
            x[i] -= shift[i]
        _exp_in_place(x[:n])
        for i in range(n):
            mass[i] += x[i]
    return _fold(mass, n_rows), _fold_max(highest, n_rows)


@njit(cache=True, fastmath=FAST)
def move_scores(scores, direction, steps, log_z, counts, totals, inverse_scale, residuals):
    """The scores step to scores + steps * direction (in place; direction is not read when every
    step is 0); residuals = (N P - counts) / scale with P the softmax (log_z: each row's at the
    new scores). Returns each row's largest score and sum_v counts[v] scores[v]."""
    n_rows = scores.shape[1]
    size = _tile_items(n_rows) * n_rows
    s, d, c, e = scores.reshape(-1), direction.reshape(-1), counts.reshape(-1), residuals.reshape(-1)
    moving = _any_nonzero(steps)
    step, shift = _tiled(steps, size), _tiled(log_z, size)
    total, inverse = _tiled(totals, size), _tiled(inverse_scale, size)
    top, weighted, x = np.full(size, -np.inf), np.zeros(size), np.empty(size)
    for a in range(0, s.shape[0], size):
        n = min(size, s.shape[0] - a)
        if moving:
            for i in range(n):
                k = np.uint64(a + i)
                s[k] += step[i] * d[k]
        for i in range(n):
            k = np.uint64(a + i)
            top[i] = max(top[i], s[k])
            weighted[i] += c[k] * s[k]
            x[i] = s[k] - shift[i]
        _exp_in_place(x[:n])
        for i in range(n):
            k = np.uint64(a + i)
            e[k] = (total[i] * x[i] - c[k]) * inverse[i]
    return _fold_max(top, n_rows), _fold(weighted, n_rows)


@njit(cache=True, fastmath=FAST)
def add_scaled(target, source, steps):
    """target += steps * source, row by row (both items x rows: the weights and a direction, or
    the scores and a direction's)."""
    n_rows = target.shape[1]
    size = _tile_items(n_rows) * n_rows
    t, s = target.reshape(-1), source.reshape(-1)
    step = _tiled(steps, size)
    for a in range(0, t.shape[0], size):
        for i in range(min(size, t.shape[0] - a)):
            k = np.uint64(a + i)
            t[k] += step[i] * s[k]


@njit(cache=True, fastmath=FAST)
def likelihood_gradient(columns, residuals, out):
    """out = phi^T residuals (features x rows), outcome by outcome: the residuals stream in order,
    and the rows of out of the features many outcomes share (suffixes, word classes: few, on
    CoNLL-2000 1.3 MB of them) stay in cache, where reading the residuals column by column jumps
    across all of them (the shared part then took twice as long). A feature of one outcome (its
    merged identity) is written once, not cleared and added to."""
    column_ptr, _, _, indptr, indices, values = columns
    for f in range(out.shape[0]):
        if column_ptr[f + 1] - column_ptr[f] != 1:
            out[f] = 0.0
    for v in range(residuals.shape[0]):
        e = residuals[v]
        for k in range(indptr[v], indptr[v + 1]):
            f, x = indices[k], values[k]
            g = out[f]
            if column_ptr[f + 1] - column_ptr[f] == 1:
                for r in range(e.shape[0]):
                    g[r] = x * e[r]
            else:
                for r in range(e.shape[0]):
                    g[r] += x * e[r]


@njit(cache=True, fastmath=FAST)
def gradient_pass(columns, residuals, kappa_scaled, weights, pool, step_slot, step, out_slot, live, previous):
    """The gradient at the weights after a step, with its dot products: phi^T residuals
    (likelihood_gradient), then one sequential pass over the features in which the weights take
    the step step * pool[step_slot] (per row; none when step_slot < 0) and the gradient
        pool[out_slot] = kappa / scale * weights + phi^T residuals
    is completed. Returns (2 n_live + 6, rows): g . pool[live[i]], then
    w . pool[live[i]], then g . g, w . g, w . w, max |g|, and with y = g - pool[previous] (when
    previous >= 0): y . y and y . (the step)."""
    column_ptr, outcomes, values = columns[:3]
    n_rows = weights.shape[1]
    size = _tile_items(n_rows) * n_rows
    if n_rows > 1:
        likelihood_gradient(columns, residuals, pool[out_slot])
    n_live = live.shape[0]
    stored = pool.reshape((pool.shape[0], -1))
    w = weights.reshape(-1)
    d_slot, y_slot = max(step_slot, 0), max(previous, 0)
    kappa_t, step_t = _tiled(kappa_scaled, size), _tiled(step, size)
    partial = np.zeros((2 * n_live + 6, size))
    base = 2 * n_live
    gg, wg, ww, largest = partial[base], partial[base + 1], partial[base + 2], partial[base + 3]
    yy, ys = partial[base + 4], partial[base + 5]
    for a in range(0, w.shape[0], size):
        n = min(size, w.shape[0] - a)
        if step_slot >= 0:
            for i in range(n):
                k = np.uint64(a + i)
                w[k] += step_t[i] * stored[d_slot, k]
        if n_rows == 1:  # by columns, in scalars: a view per entry would cost more than the entry
            for f in range(a, a + n):
                total = kappa_t[0] * w[f]
                for k in range(column_ptr[f], column_ptr[f + 1]):
                    total += values[k] * residuals[outcomes[k], 0]
                stored[out_slot, f] = total
        else:
            for i in range(n):
                k = np.uint64(a + i)
                stored[out_slot, k] += kappa_t[i] * w[k]
        for j in range(n_live):
            dg, dw, p = partial[j], partial[n_live + j], live[j]
            for i in range(n):
                k = np.uint64(a + i)
                dg[i] += stored[out_slot, k] * stored[p, k]
                dw[i] += w[k] * stored[p, k]
        for i in range(n):
            k = np.uint64(a + i)
            g_k, w_k = stored[out_slot, k], w[k]
            gg[i] += g_k * g_k
            wg[i] += w_k * g_k
            ww[i] += w_k * w_k
            largest[i] = max(largest[i], abs(g_k))
        if previous >= 0:
            for i in range(n):
                k = np.uint64(a + i)
                y = stored[out_slot, k] - stored[y_slot, k]
                yy[i] += y * y
                ys[i] += y * step_t[i] * stored[d_slot, k]
    dots = np.empty((2 * n_live + 6, n_rows))
    for j in range(2 * n_live + 6):
        copy_into(dots[j], _fold_max(partial[j], n_rows) if j == base + 3 else _fold(partial[j], n_rows))
    return dots


@njit(cache=True, fastmath=FAST)
def combine(pool, slots, coefficients, out_slot, live):
    """pool[out_slot] = sum_j coefficients[j] * pool[slots[j]] row by row; returns its dot products
    with pool[live[i]] and (last) with itself."""
    n_rows = pool.shape[2]
    size = _tile_items(n_rows) * n_rows
    n_live = live.shape[0]
    stored = pool.reshape((pool.shape[0], -1))
    tiled = np.empty((slots.shape[0], size))
    for j in range(slots.shape[0]):
        copy_into(tiled[j], _tiled(coefficients[j], size))
    partial = np.zeros((n_live + 1, size))
    own = partial[n_live]
    for a in range(0, stored.shape[1], size):
        n = min(size, stored.shape[1] - a)
        for i in range(n):
            stored[out_slot, np.uint64(a + i)] = 0.0
        for j in range(slots.shape[0]):
            c, p = tiled[j], slots[j]
            for i in range(n):
                k = np.uint64(a + i)
                stored[out_slot, k] += c[i] * stored[p, k]
        for j in range(n_live):
            dl, p = partial[j], live[j]
            for i in range(n):
                k = np.uint64(a + i)
                dl[i] += stored[out_slot, k] * stored[p, k]
        for i in range(n):
            k = np.uint64(a + i)
            own[i] += stored[out_slot, k] * stored[out_slot, k]
    dots = np.empty((n_live + 1, n_rows))
    for j in range(n_live + 1):
        copy_into(dots[j], _fold(partial[j], n_rows))
    return dots


# --- the optimiser ------------------------------------------------------------------------------


@njit(cache=True)
def _quadratic(gram, r, a, b):
    """a^T G b for coefficient vectors a, b over the pool's slots (row r's Gram matrix G)."""
    total = 0.0
    for i in range(a.shape[0]):
        if a[i] != 0.0:
            for j in range(b.shape[0]):
                if b[j] != 0.0:
                    total += a[i] * gram[r, i, j] * b[j]
    return total


@njit(cache=True)
def _direction(gram, r, gradient_slot, order, n_pairs, pair_s, pair_y, rho, gamma, out):
    """out = -H g as coefficients over the pool's slots, by the two-loop recursion over row r's
    valid pairs (pair_s[p, r] and pair_y[p]: the coefficients of s and y; rho[p, r] = 1 / s.y, 0
    for a pair row r does not use; `order`: ring positions, oldest first), H0 = (s.y / y.y) I of
    the newest valid pair (gamma[p, r]). Returns False, with out = -g, when the row has no valid
    pair or the direction does not descend (its pairs are then dropped)."""
    out[:] = 0.0
    out[gradient_slot] = 1.0
    newest = -1
    alphas = np.zeros(n_pairs)
    for i in range(n_pairs - 1, -1, -1):
        p = order[i]
        if rho[p, r] == 0.0:
            continue
        if newest < 0:
            newest = p
        alphas[i] = rho[p, r] * _quadratic(gram, r, pair_s[p, r], out)
        out -= alphas[i] * pair_y[p]
    if newest >= 0:
        out *= gamma[newest, r]
        for i in range(n_pairs):
            p = order[i]
            if rho[p, r] == 0.0:
                continue
            beta = rho[p, r] * _quadratic(gram, r, pair_y[p], out)
            out += (alphas[i] - beta) * pair_s[p, r]
        out *= -1.0
        slope = 0.0
        for b in range(out.shape[0]):
            slope += out[b] * gram[r, b, gradient_slot]
        if slope < 0.0:
            return True
        for i in range(n_pairs):  # stale curvature: restart from steepest descent
            rho[order[i], r] = 0.0
    out[:] = 0.0
    out[gradient_slot] = -1.0
    return False


def pool_size(max_iterations: int, memory: int) -> int:
    """The stored (features x rows) arrays `maximize` needs: the gradients and directions the
    curvature pairs keep, the current gradient and a direction being written out (the first
    direction, -g, is never written out)."""
    return max(1, min(2 * memory + 2, 2 * max_iterations - 1))


@njit(cache=True, nogil=True)
def maximize(rows, columns, counts, kappa, weights, scores, log_z, pool, residuals, direction,
             max_iterations, memory, gtol, ftol):
    """Improve every row's weights (features x rows, in place) by at most `max_iterations`
    L-BFGS iterations of its own, for counts (outcomes x rows). A row stops early when every
    entry of its gradient (per count) is at most gtol, when an iteration's relative decrease falls
    to ftol, or when its line search fails. `scores` (outcomes x rows) and `log_z` (rows) are left
    as the scores phi W and each row's log partition at the final weights. pool (at least
    pool_size(max_iterations, memory) x features x rows), residuals and direction (outcomes x
    rows) are scratch."""
    n_outcomes, n_rows = counts.shape
    totals = np.zeros(n_rows)
    for v in range(n_outcomes):
        totals += counts[v]
    scale = np.maximum(totals, 1.0)  # the objective per count: tolerances mean the same on any corpus
    inverse_scale = 1.0 / scale
    kappa_scaled = kappa * inverse_scale
    n_slots = pool.shape[0]
    in_use = np.zeros(n_slots, np.bool_)
    gram = np.zeros((n_rows, n_slots, n_slots))  # dot products of the stored arrays, row by row
    weight_dots = np.zeros((n_rows, n_slots))    # w . each stored array
    no_slots = np.empty(0, np.int64)
    zero_steps = np.zeros(n_rows)

    scores_and_log_z(rows, weights, scores, log_z)
    top, weighted = move_scores(scores, scores, zero_steps, log_z, counts, totals, inverse_scale, residuals)
    # np.int64, never a literal: a literal argument compiles its callee once more (Literal[int](0)
    # beside int64), seconds of a cold start each
    none = np.int64(-1)
    gradient = np.int64(0)
    in_use[gradient] = True
    dots = gradient_pass(columns, residuals, kappa_scaled, weights, pool, none, zero_steps, gradient, no_slots, none)
    squared_norm, largest, _, _ = _enter_gradient(gram, weight_dots, dots, no_slots, gradient)
    value = (totals * log_z - weighted + 0.5 * kappa * squared_norm) * inverse_scale
    done = largest <= gtol

    # Curvature pairs, a ring of `memory`: s = pair_s[p, r] and y = pair_y[p] as coefficients over
    # the stored arrays; pair_slots[p]: the arrays the pair keeps (the gradient before it, its
    # direction); rho[p, r] = 1 / s.y, 0 where row r does not use the pair.
    n_ring = max(1, memory)
    pair_s = np.zeros((n_ring, n_rows, n_slots))
    pair_y = np.zeros((n_ring, n_slots))
    pair_slots = np.full((n_ring, 2), -1, np.int64)
    rho = np.zeros((n_ring, n_rows))
    pair_gamma = np.zeros((n_ring, n_rows))  # s.y / y.y
    order = np.zeros(n_ring, np.int64)  # ring positions, oldest first
    n_pairs = np.int64(0)  # not 0: a literal compiles _directions and _direction once more

    coefficients = np.zeros((n_rows, n_slots))
    steps, slopes = np.zeros(n_rows), np.zeros(n_rows)
    along_w, along_d = np.zeros(n_rows), np.zeros(n_rows)  # w . d and d . d
    for iteration in range(1, max_iterations + 1):
        if done.all():
            break
        final = iteration == max_iterations
        _directions(gram, weight_dots, gradient, order, n_pairs, pair_s, pair_y, rho, pair_gamma, done,
                    coefficients, steps, slopes, along_w, along_d)
        used = _columns_in_use(coefficients)
        if used.size == 0:
            break
        direction_slot, direction_scale = _direction_array(pool, in_use, gram, weight_dots, coefficients, used,
                                                           along_w, final)
        d_top, d_weighted = gather(rows, pool[direction_slot], direction_scale, counts, direction)
        accepted, trial_value, trial_log_z = _line_search(
            scores, direction, top, d_top, steps, slopes, along_w, along_d, squared_norm, weighted, d_weighted,
            totals, inverse_scale, kappa, value, log_z, done)
        copy_into(log_z, trial_log_z)
        taken = steps * direction_scale
        if final:
            add_scaled(weights, pool[direction_slot], taken)
            add_scaled(scores, direction, steps)
            break
        top, weighted = move_scores(scores, direction, steps, log_z, counts, totals, inverse_scale, residuals)

        # the new pair (s = the step, y = new gradient - old); the oldest leaves a full ring first
        if n_pairs == memory:
            slot = order[0]
            copy_into(order[:n_pairs - 1], order[1:n_pairs])  # forwards: each entry read before it is overwritten
            n_pairs -= 1
            _release(in_use, pair_slots[slot], order, n_pairs, pair_slots, gradient, direction_slot)
        else:
            slot = n_pairs
        previous = gradient
        gradient = _free_slot(in_use)
        live = np.nonzero(in_use)[0]
        in_use[gradient] = True
        dots = gradient_pass(columns, residuals, kappa_scaled, weights, pool, direction_slot, taken,
                             gradient, live, previous)
        squared_norm, largest, change_norm, curvature = _enter_gradient(gram, weight_dots, dots, live, gradient)
        _store_pair(slot, previous, gradient, direction_slot, taken, accepted, curvature, change_norm,
                    pair_s, pair_y, pair_slots, rho, pair_gamma)
        _accept(accepted, value, trial_value, largest, ftol, gtol, done)
        order[n_pairs] = slot
        n_pairs += 1


@njit(cache=True)
def _columns_in_use(coefficients):
    """The columns some row's coefficient uses (nonzero), in order. A loop, not np.nonzero of the
    columns' sums: numba's sum over an axis compiled for 1.6 s of every featured spec's cold start
    (most of it its error message for a bad axis)."""
    n_rows, n_columns = coefficients.shape
    used = np.empty(n_columns, np.int64)
    count = 0
    for j in range(n_columns):
        for r in range(n_rows):
            if coefficients[r, j] != 0.0:
                used[count] = j
                count += 1
                break
    return used[:count]


@njit(cache=True)
def _any_nonzero(values):
    """Whether an entry of the 1-d `values` is nonzero (True): numba compiles .any() anew in each
    function that calls it, a few tenths of a second each."""
    for i in range(values.shape[0]):
        if values[i] != 0:
            return True
    return False


@njit(cache=True)
def _enter_gradient(gram, weight_dots, dots, live, gradient):
    """Enter a gradient_pass's dot products (the gradient pool[gradient] with each live array, w
    with each) into gram and weight_dots. Returns w . w, max |g|, y . y and y . s of the pass."""
    n_live = live.size
    for i in range(n_live):
        copy_into(gram[:, gradient, live[i]], dots[i])
        copy_into(gram[:, live[i], gradient], dots[i])
        copy_into(weight_dots[:, live[i]], dots[n_live + i])
    base = 2 * n_live
    copy_into(gram[:, gradient, gradient], dots[base])
    copy_into(weight_dots[:, gradient], dots[base + 1])
    return dots[base + 2].copy(), dots[base + 3], dots[base + 4], dots[base + 5]


@njit(cache=True)
def _directions(gram, weight_dots, gradient, order, n_pairs, pair_s, pair_y, rho, pair_gamma, done,
                coefficients, steps, slopes, along_w, along_d):
    """Each row's direction, as coefficients over the stored arrays, its slope, w . d and d . d,
    and its first trial step (a row that is done gets none: zero coefficients, step 0)."""
    n_rows, n_slots = coefficients.shape
    for r in range(n_rows):
        coefficients[r] = 0.0
        steps[r] = 0.0
        if done[r]:
            continue
        curved = _direction(gram, r, gradient, order, n_pairs, pair_s, pair_y, rho, pair_gamma, coefficients[r])
        slopes[r] = 0.0
        along_w[r] = 0.0
        for b in range(n_slots):
            slopes[r] += coefficients[r, b] * gram[r, b, gradient]
            along_w[r] += coefficients[r, b] * weight_dots[r, b]
        along_d[r] = _quadratic(gram, r, coefficients[r], coefficients[r])
        # a quasi-Newton step has unit length in its metric; steepest descent has no curvature
        # to scale it, so its first trial moves the weights by one unit
        steps[r] = 1.0 if curved else 1.0 / max(np.sqrt(-slopes[r]), 1e-300)


@njit(cache=True)
def _direction_array(pool, in_use, gram, weight_dots, coefficients, used, along_w, final):
    """The direction as (direction_slot, direction_scale): direction_scale * pool[direction_slot],
    written out to a free array when it combines several stored arrays (`used`; then its gather
    reads one array, not several), its dot products with the live arrays entered in `gram`
    (none on the `final` iteration, which needs no more)."""
    n_rows = coefficients.shape[0]
    if used.size == 1:
        direction_slot = used[0]
        return direction_slot, coefficients[:, direction_slot].copy()
    direction_slot = _free_slot(in_use)
    live = np.nonzero(in_use)[0] if not final else np.empty(0, np.int64)
    in_use[direction_slot] = True
    made = combine(pool, used, np.ascontiguousarray(coefficients[:, used].T), direction_slot, live)
    for i in range(live.size):
        copy_into(gram[:, direction_slot, live[i]], made[i])
        copy_into(gram[:, live[i], direction_slot], made[i])
    copy_into(gram[:, direction_slot, direction_slot], made[live.size])
    copy_into(weight_dots[:, direction_slot], along_w)
    return direction_slot, np.ones(n_rows)


@njit(cache=True)
def _line_search(scores, direction, top, d_top, steps, slopes, along_w, along_d, squared_norm, weighted,
                 d_weighted, totals, inverse_scale, kappa, value, log_z, done):
    """The backtracking line search, every row not done at once, from its trial step in `steps`.
    Returns which rows accepted a step, and the objective and log partition there (the others
    keep theirs); a row that accepts none keeps its point and stops (step 0, done)."""
    n_rows = value.shape[0]
    searching = ~done
    accepted = np.zeros(n_rows, np.bool_)
    trial_value, trial_log_z = value.copy(), log_z.copy()
    for _ in range(MAX_BACKTRACKS):
        if not _any_nonzero(searching):
            break
        shifts = top + steps * d_top  # max_v (S + t D) <= max S + t max D for t >= 0
        mass, highest = log_partition(scores, direction, steps, shifts)
        redo = searching & (highest < shifts - SHIFT_SLACK)
        if _any_nonzero(redo):
            exact, _ = log_partition(scores, direction, steps, highest)
            for r in range(n_rows):
                if redo[r]:
                    mass[r], shifts[r] = exact[r], highest[r]
        for r in range(n_rows):
            if not searching[r]:
                continue
            t = steps[r]
            lz = shifts[r] + np.log(mass[r])
            norm = squared_norm[r] + 2.0 * t * along_w[r] + t * t * along_d[r]
            candidate = (totals[r] * lz - weighted[r] - t * d_weighted[r] + 0.5 * kappa * norm) * inverse_scale[r]
            if np.isfinite(candidate) and candidate <= value[r] + ARMIJO * t * slopes[r]:
                searching[r] = False
                accepted[r] = True
                trial_value[r], trial_log_z[r] = candidate, lz
            elif np.isfinite(candidate):  # the minimiser of the quadratic through what is known
                quadratic = -slopes[r] * t * t / (2.0 * (candidate - value[r] - slopes[r] * t))
                steps[r] = min(max(quadratic, 0.1 * t), 0.5 * t)
            else:
                steps[r] *= 0.1
    for r in range(n_rows):
        if not accepted[r]:
            steps[r] = 0.0
            done[r] = True
    return accepted, trial_value, trial_log_z


@njit(cache=True)
def _store_pair(slot, previous, gradient, direction_slot, taken, accepted, curvature, change_norm,
                pair_s, pair_y, pair_slots, rho, pair_gamma):
    """The curvature pair of the step just taken at ring position `slot`: s = the step (`taken`
    times the direction), y = the new gradient - the previous one; a row uses it (rho > 0) when
    it moved and y.s > 0, which keeps the estimate positive definite."""
    pair_y[slot] = 0.0
    pair_y[slot, gradient] = 1.0
    pair_y[slot, previous] = -1.0
    pair_slots[slot, 0], pair_slots[slot, 1] = previous, direction_slot
    for r in range(taken.shape[0]):
        pair_s[slot, r] = 0.0
        pair_s[slot, r, direction_slot] = taken[r]
        if accepted[r] and curvature[r] > 1e-12 * change_norm[r]:
            rho[slot, r] = 1.0 / curvature[r]
            pair_gamma[slot, r] = curvature[r] / change_norm[r]
        else:
            rho[slot, r] = 0.0


@njit(cache=True)
def _accept(accepted, value, trial_value, largest, ftol, gtol, done):
    """The rows that moved take their new objective, and stop when it fell by at most ftol
    (relative) or their gradient is within gtol."""
    for r in range(value.shape[0]):
        if accepted[r]:
            decrease = value[r] - trial_value[r]
            value[r] = trial_value[r]
            if decrease <= ftol * max(abs(value[r]), 1.0) or largest[r] <= gtol:
                done[r] = True


@njit(cache=True)
def _free_slot(in_use):
    for i in range(in_use.size):
        if not in_use[i]:
            return i
    raise RuntimeError("loglinear: no free array in the pool")


@njit(cache=True)
def _release(in_use, slots, order, n_pairs, pair_slots, gradient, direction_slot):
    """Free the arrays an evicted pair kept, unless the current gradient, the direction just
    taken or a remaining pair still uses them."""
    for s in slots:
        if s < 0 or s == gradient or s == direction_slot:
            continue
        still = False
        for i in range(n_pairs):
            for kept in pair_slots[order[i]]:
                if kept == s:
                    still = True
        if not still:
            in_use[s] = False


def maximize_blocks(rows: tuple, columns: tuple, counts: np.ndarray, kappa: float, weights: np.ndarray,
                    scores: np.ndarray, log_z: np.ndarray, pool: np.ndarray, residuals: np.ndarray,
                    direction: np.ndarray, max_iterations: int, memory: int, gtol: float, ftol: float) -> None:
    """maximize on each block of rows (the leading axis of every array but rows and columns), the
    blocks in parallel, each on a thread of its own (maximize releases the GIL): the rows are
    independent problems, so threads share nothing. Not a numba prange loop: that parallel loop
    compiled for longer than everything it calls (numba links maximize and its callees into it and
    optimises them again: 30 of the 70 s of specs/hmm_features.em's cold start)."""
    def one(b: int) -> None:
        maximize(rows, columns, counts[b], kappa, weights[b], scores[b], log_z[b], pool[b], residuals[b],
                 direction[b], max_iterations, memory, gtol, ftol)

    blocks = weights.shape[0]
    if blocks == 1:
        one(0)
        return
    with ThreadPoolExecutor(blocks) as threads:
        list(threads.map(one, range(blocks)))  # list(): a block's error is raised here


@njit(cache=True)
def scores_and_log_z(rows, weights, scores, log_z):
    """scores = phi W (outcomes x rows) and each row's log partition, for weights (features x rows)."""
    n_rows = weights.shape[1]
    top, _ = gather(rows, weights, np.ones(n_rows), np.zeros((0, n_rows)), scores)
    mass, _ = log_partition(scores, scores, np.zeros(n_rows), top)
    copy_into(log_z, top + np.log(mass))


@njit(cache=True, fastmath=FAST)
def probabilities_into(scores, log_z, out, first, take_log):
    """out[v, first + r] = P(v | r) = exp(scores[v, r] - log_z[r]) (or its log, with take_log),
    for the rows r of a block that fall within out's columns."""
    n_rows = scores.shape[1]
    if first == 0 and n_rows == out.shape[1]:  # one block: flat tiles, as the other passes
        size = _tile_items(n_rows) * n_rows
        s, o = scores.reshape(-1), out.reshape(-1)
        shift = _tiled(log_z, size)
        x = np.empty(size)
        for a in range(0, s.shape[0], size):
            n = min(size, s.shape[0] - a)
            for i in range(n):
                x[i] = s[np.uint64(a + i)] - shift[i]
            if not take_log:
                _exp_in_place(x[:n])
            for i in range(n):
                o[np.uint64(a + i)] = x[i]
        return
    kept = min(n_rows, out.shape[1] - first)
    x = np.empty(n_rows)
    for v in range(scores.shape[0]):
        s, o = scores[v], out[v]
        for r in range(n_rows):
            x[r] = s[r] - log_z[r]
        if not take_log:
            _exp_in_place(x)
        for r in range(kept):
            o[first + r] = x[r]


@njit(cache=True)
def split_rows(table, blocks):
    """blocks[b, :, :] = columns b * width .. of table (items x rows), zeros past its last column."""
    width = blocks.shape[2]
    for b in range(blocks.shape[0]):
        for i in range(table.shape[0]):
            for r in range(width):
                c = b * width + r
                blocks[b, i, r] = table[i, c] if c < table.shape[1] else 0.0


@njit(cache=True)
def objective(rows, columns, counts, kappa, weights, gradient):
    """sum_{v,r} counts[v, r] log P(v | r) - kappa/2 |weights|^2 (counts outcomes x rows, weights
    features x rows), and its gradient with respect to the weights into `gradient`."""
    n_outcomes, n_rows = counts.shape
    scores, log_z = np.empty((n_outcomes, n_rows)), np.empty(n_rows)
    scores_and_log_z(rows, weights, scores, log_z)
    totals = np.zeros(n_rows)
    for v in range(n_outcomes):
        totals += counts[v]
    residuals = np.empty((n_outcomes, n_rows))
    # with scale -1 the residuals are counts - N P, the ascent direction's
    _, weighted = move_scores(scores, scores, np.zeros(n_rows), log_z, counts, totals, -np.ones(n_rows), residuals)
    pool = gradient.reshape((1,) + gradient.shape)
    none = np.int64(-1)  # not literals: see maximize
    dots = gradient_pass(columns, residuals, -kappa * np.ones(n_rows), weights, pool, none, np.zeros(n_rows),
                         np.int64(0), np.empty(0, np.int64), none)
    return (weighted - totals * log_z).sum() - 0.5 * kappa * dots[2].sum()
