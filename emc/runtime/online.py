"""Online EM passes (Liang & Klein 2009), compiled once against the E-step ABI.

Both keep the sufficient statistics mu in the lazy parameter form of emc/codegen/abi.py:
    mu = scale * theta,   row_total[r] = sum of theta over row r,
and the E-step reads the smoothed, normalised mu directly, so no M-step ever touches the whole
table. A mini-batch's E-step marks the entries it writes (`touched`; generated code writes counts of
learned tables only; a column written whole is listed as one run, emc/codegen/abi.py); the update
visits only those.

stepwise (Sato & Ishii 2000; Cappe & Moulines 2009): mu <- (1 - eta_k) mu + eta_k s, with
eta_k = (k + 2)^(-alpha). Scaling every entry by (1 - eta_k) is a change of `scale`, and adding
eta_k s is theta += eta_k s / scale on the touched entries (section 3.2): an update costs time in
proportion to what the mini-batch touched. When `scale` drifts far from 1, theta and the row totals
are rescaled (once in many updates) so nothing under- or overflows. With m = 1, a module that
exports estep_fold (emc/codegen/abi.py; the first-order chain's) adds eta_k s / scale into theta and
the row totals itself, as its E-step makes s: one example's E-step reads the parameters before it
writes any count, so nothing is kept, marked, listed or walked again, and one call runs a whole
run of updates with its buffers taken once (a stepwise pass over CoNLL-2000 a third shorter).

incremental (Neal & Hinton 1998): the examples are cut once into fixed blocks (one example each
in the textbook update; Neal & Hinton allow any fixed partition); each block's statistics s_b are
kept (sparse: the entries it touched, in a pool), and mu <- mu + s_b' - s_b after each block. A
block's E-step is the module's batched one (estep_batch) when it has it: the sum over the block
is exactly what that computes. A listing pass (the first) runs the tracked E-step and records,
per block, which entries it wrote, as runs of adjacent entries in consecutive rows (a column of an
outcome-major table: a word's probability in every state). A replay pass (every later one) runs
the untracked E-step, as batch EM does, and walks the block's runs: no marks, no list compared,
and each run's update streams. That is exact as long as a block writes no entry outside its list,
and lists only grow (a listing pass keeps the entries a block wrote before). An entry's posterior is zero only where a factor of every part
using it is zero, which stays zero (nothing ever adds to an entry of weight zero), or where it
underflows; so a replayed block can write outside its list only after an underflow in the pass
that listed it (the first pass starts from positive parameters). Such a write either stays behind
in the dense counts, and the variant then lists afresh (emc/runtime/variants/incremental.py), or
a later block whose list holds that entry takes it in with its own: mu then stays exactly the
sum of the kept statistics, with that mass kept under the other block.

A row whose kept statistics all become zero (every block's posterior of it underflowed, or the
subtraction of a block's old statistics cancelled the last of it: clamped to 0) would be read as
0 / 0. Batch EM's M-step makes a row with no counts uniform (emc/priors/normalize.py), and so do
the incremental passes: each of the row's entries is set to EMPTY_ROW_MASS (refill_rows), which
reads 1 / outcomes and lies below the rounding of any count that later comes back to the row.

Both passes visit `examples` in blocks (stepwise: mini-batches of `batch_size`; incremental:
examples[bounds[g]:bounds[g+1]] is block blocks[g]), each block's E-step through _block_estep.
"""
import sys

import numpy as np
from numba import njit, types

from emc.codegen.abi import (COUNTS, ESTEP_BATCH_FUNCTION, ESTEP_BATCH_SIGNATURE, ESTEP_FUNCTION, INTS, LAYOUT,
                             META, PARAMS, PREPARE_FUNCTION, TABLE_OFFSET, TABLE_OUTCOMES)
from emc.runtime.kernels import compile_on_first_use, estep_batch_for, estep_for
from emc.structures.buffers import grow
from emc.structures.semiring import SUM

I64 = types.int64[::1]
F64 = types.float64[::1]
U8 = types.uint8[::1]

# Rescale theta when the global scale leaves [RESCALE_BELOW, 1 / RESCALE_BELOW]. The compiled pass
# takes it as an argument: numba would freeze a global's value into its on-disk cache.
RESCALE_BELOW = 1e-100
# Each entry of a row whose statistics are all zero, so that it reads as uniform (see the module
# docstring): far below any count (c + EMPTY_ROW_MASS == c for c > 1e-284), far above the
# smallest normal number, so a row of a million entries still sums to a normal one.
EMPTY_ROW_MASS = 1e-300


def esteps(module, block: int) -> tuple:
    """The passes' first arguments for a generated module whose blocks hold at most `block`
    examples: prepare, its E-step under sum (estep_for), its estep_batch (no_estep_batch when it
    has none or the blocks are too small for it: estep_batch_for) and whether it has one."""
    estep_batch = estep_batch_for(module, block)
    stand_in = estep_batch or _compiled("no_estep_batch")
    return module.prepare, estep_for(module, SUM), stand_in, estep_batch is not None


def _no_estep_batch(examples, ints, layout, meta, params, derived, weights, counts, log_z, deferred):
    """Stands in for estep_batch in the passes' arguments for a module without one (batched =
    False): never called."""
    return 0


@njit(inline="always")
def _block_estep(estep, estep_batch, batched, examples, a, b, weights, ints, layout, meta, params, derived, buffer,
                 log_z):
    """The E-step of examples[a:b] into `buffer` (log Z of examples[q] into log_z[q]), through
    estep_batch when the module has one (batched) and the block holds more than one example;
    returns the sum of the weighted log Z."""
    if batched and b - a > 1:
        block = examples[a:b]
        deferred = np.empty(b - a, np.int64)
        left = estep_batch(block, ints, layout, meta, params, derived, weights[block], buffer, log_z[a:b], deferred)
        for i in range(left):
            q = a + deferred[i]
            log_z[q] = estep(examples[q], ints, layout, meta, params, derived, SUM, weights[examples[q]], buffer)
    else:
        for q in range(a, b):
            log_z[q] = estep(examples[q], ints, layout, meta, params, derived, SUM, weights[examples[q]], buffer)
    total = 0.0
    for q in range(a, b):
        total += weights[examples[q]] * log_z[q]
    return total


@njit(cache=True)
def _rescale(theta, row_total, scale):
    s = scale[0]
    for i in range(theta.shape[0]):
        theta[i] *= s
    for r in range(row_total.shape[0]):
        row_total[r] *= s
    scale[0] = 1.0


def whole_tables(module, meta: np.ndarray) -> np.ndarray:
    """The tables a generated module writes in full for every example (its WHOLE_TABLES, say
    the chain's K x K transitions), as (offset, row offset, rows, outcomes) after one another:
    stepwise EM updates them as blocks (_add_whole_tables) rather than entry by entry."""
    tables = getattr(module, "WHOLE_TABLES", ())
    return np.array([meta[t + TABLE_OFFSET:t + TABLE_OUTCOMES + 1] for t in tables], np.int64).reshape(-1)


def mark_whole_tables(mark: np.ndarray, whole: np.ndarray) -> None:
    """Marks the whole tables' entries as written already, so that the E-step never lists them
    (a mark stays set: the update does not clear the marks of the tables it adds as blocks)."""
    for offset, _, rows, outcomes in whole.reshape(-1, 4):
        mark[offset:offset + rows * outcomes] = 1


@njit(inline="always")
def _add_whole_tables(theta, row_total, counts, whole, step):
    """theta += step * counts over the whole tables, consuming the counts: one outcome's rows
    are adjacent entries (emc/codegen/abi.py), so each outcome is a loop that streams."""
    for w in range(0, whole.shape[0], 4):
        offset, row_offset, rows, outcomes = whole[w], whole[w + 1], whole[w + 2], whole[w + 3]
        totals = row_total[row_offset:row_offset + rows]
        for o in range(outcomes):
            first = offset + o * rows
            th, new = theta[first:first + rows], counts[first:first + rows]
            for r in range(rows):
                add = step * new[r]
                th[r] += add
                totals[r] += add
                new[r] = 0.0


@njit(inline="always")
def _stepwise_update(theta, row_total, scale, counts, mark, touched, row_of, whole, k, alpha, rescale_below):
    """Update k of stepwise EM: mu <- (1 - eta_k) mu + eta_k s for the counts s of the touched
    entries (touched[1:touched[0] + 1]) and of the whole tables (see whole_tables), which are
    consumed; mu = theta * scale, so only those entries are written. theta is rescaled when the
    scale leaves [rescale_below, 1 / rescale_below]."""
    eta = (k + 2.0) ** (-alpha)
    scale[0] *= 1.0 - eta
    step = eta / scale[0]
    t = 1
    while t <= touched[0]:
        i = touched[t]
        if i >= 0:
            add = step * counts[i]
            theta[i] += add
            row_total[row_of[i]] += add
            counts[i] = 0.0
            mark[i] = 0
            t += 1
            continue
        # a run (emc/codegen/abi.py): slices of known length stream
        c, m = -i - 1, touched[t + 1]
        w = row_of[c]
        th, new, rt, marks = theta[c:c + m], counts[c:c + m], row_total[w:w + m], mark[c:c + m]
        for u in range(m):
            add = step * new[u]
            th[u] += add
            rt[u] += add
            new[u] = 0.0
            marks[u] = 0
        t += 2
    _add_whole_tables(theta, row_total, counts, whole, step)
    if scale[0] < rescale_below or scale[0] > 1.0 / rescale_below:
        _rescale(theta, row_total, scale)


def _stepwise_apply(theta, row_total, scale, counts, mark, touched, row_of, k, alpha, rescale_below):
    """_stepwise_update for counts an executor elsewhere computed (stepwise EM on a cluster)."""
    _stepwise_update(theta, row_total, scale, counts, mark, touched, row_of, np.empty(0, np.int64), k, alpha,
                     rescale_below)


def stepwise_pass(prepare, estep, estep_batch, batched, order, batch_size: int, k: int, alpha: float, weights, ints,
                  layout, meta, params, row_of, whole, buffer, log_z, rescale_below: float) -> tuple[float, int]:
    """One pass of stepwise EM over `order` in mini-batches of `batch_size`, the first four
    arguments as esteps gives them; returns (sum of weighted log Z, updates done so far). The
    whole tables' entries must be marked (mark_whole_tables). theta is rescaled when the scale
    leaves [rescale_below, 1 / rescale_below]. With m = 1 through the module's estep_fold when
    it has one (emc/codegen/abi.py; _fold_pass), else the tracked E-step and update."""
    fold = getattr(sys.modules[prepare.py_func.__module__], "estep_fold", None) if batch_size == 1 else None
    if fold is not None:
        return _fold_pass(fold, order, k, alpha, weights, ints, layout, meta, params, log_z, rescale_below)
    return _compiled("stepwise_tracked_pass")(prepare, estep, estep_batch, batched, order, batch_size, k, alpha,
                                              weights, ints, layout, meta, params, row_of, whole, buffer, log_z,
                                              rescale_below)


def _compiled(name: str):
    """The pass `name` of _PASSES, compiled (or loaded from numba's cache) on first use."""
    return globals().get(name) or __getattr__(name)


def _fold_pass(fold, order: np.ndarray, k: int, alpha: float, weights: np.ndarray, ints, layout, meta, params,
               log_z: np.ndarray, rescale_below: float) -> tuple[float, int]:
    """stepwise_pass with m = 1 through estep_fold: update k + q's counts s, times eta / the new
    scale, go straight into theta and the row totals (theta += eta s / scale, the tracked update's
    add, and the same scales, multiplied in the same order), in runs that end where theta is
    rescaled."""
    theta, row_total, _, _, scale = params
    done = 0
    while done < len(order):
        etas = (k + done + 2.0 + np.arange(len(order) - done)) ** -alpha
        scales = np.cumprod(np.concatenate(([scale[0]], 1.0 - etas)))[1:]
        leaving = (scales < rescale_below) | (scales > 1.0 / rescale_below)
        size = int(np.argmax(leaving)) + 1 if leaving.any() else len(etas)
        run = order[done:done + size]
        fold(run, ints, layout, meta, params, weights[run] * (etas[:size] / scales[:size]), scales[:size],
             log_z[done:done + size])
        if leaving.any():
            _rescale(theta, row_total, scale)
        done += size
    # added in turn, as the tracked pass adds them
    total = float(np.cumsum(weights[order] * log_z[:len(order)])[-1]) if len(order) else 0.0
    return total, k + len(order)


def _stepwise_tracked_pass(prepare, estep, estep_batch, batched, order, batch_size, k, alpha, weights, ints, layout,
                           meta, params, row_of, whole, buffer, log_z, rescale_below):
    """stepwise_pass through the tracked E-step: each mini-batch's counts into `buffer`, and the
    update visits the entries listed (and the whole tables)."""
    theta, row_total, _, _, scale = params
    counts, mark, touched = buffer
    total = 0.0
    n = order.shape[0]
    for start in range(0, n, batch_size):
        derived = prepare(meta, params)
        touched[0] = 0
        total += _block_estep(estep, estep_batch, batched, order, start, min(start + batch_size, n), weights, ints,
                              layout, meta, params, derived, buffer, log_z)
        _stepwise_update(theta, row_total, scale, counts, mark, touched, row_of, whole, k, alpha, rescale_below)
        k += 1
    return total, k


def spans_of_rows(tables) -> tuple[np.ndarray, np.ndarray]:
    """Where the entries of every row of `tables` (a ParamLayout's, all of them, in order) are,
    for the passes to refill an emptied row: spans[r] = (first, step, size), the entries
    first + k * step (k < size) of a dense table's row (outcome-major), or, with step 0,
    sparse[first + k] of a sparse table's. Only the rows of learned tables without features are
    refilled: the others get size 0."""
    spans = np.zeros((sum(t.rows for t in tables), 3), np.int64)
    sparse, used = [np.zeros(0, np.int64)], 0
    for t in tables:
        if t.kind != "learned" or t.featured is not None:
            continue
        rows = spans[t.row_slice]
        if t.sparse:
            sizes = np.bincount(t.entry_rows, minlength=t.rows)
            rows[:, 0] = used + np.cumsum(sizes) - sizes
            rows[:, 2] = sizes
            sparse.append(np.argsort(t.entry_rows, kind="stable").astype(np.int64) + t.offset)
            used += t.size
        else:
            rows[:, 0] = t.offset + np.arange(t.rows)
            rows[:, 1], rows[:, 2] = t.rows, t.outcomes
    return spans, np.concatenate(sparse)


@njit(inline="always")
def _refill_row(theta, row_total, r, row_spans):
    """Row r's total recounted from its entries (spans_of_rows) after it fell to 0: their sum when
    they hold statistics (the running total lost them to a clamp), else a uniform row of
    EMPTY_ROW_MASS. A refilled row whose entries a block's clamped subtraction zeroed again holds
    less than its refill: it is refilled whole, never left uniform over some entries only."""
    spans, sparse = row_spans
    first, step, size = spans[r, 0], spans[r, 1], spans[r, 2]
    if size == 0:  # not a row the passes re-estimate
        return
    total = 0.0
    for k in range(size):
        total += theta[first + k * step if step else sparse[first + k]]
    if total > size * EMPTY_ROW_MASS:
        row_total[r] = total
        return
    for k in range(size):
        theta[first + k * step if step else sparse[first + k]] = EMPTY_ROW_MASS
    row_total[r] = size * EMPTY_ROW_MASS


@njit(inline="always")
def _refill_emptied_runs(theta, row_total, row_of, run_cell, run_length, a, b, row_spans):
    """_refill_row for every row of runs a..b-1 whose total is 0."""
    for r in range(a, b):
        w = row_of[run_cell[r]]
        for u in range(run_length[r]):
            if row_total[w + u] <= 0.0:
                _refill_row(theta, row_total, w + u, row_spans)


def _refill_rows(theta, row_total, rows, row_spans):
    """_refill_row for every one of `rows` whose total is 0 (the numpy paths of incremental EM)."""
    for r in rows:
        if row_total[r] <= 0.0:
            _refill_row(theta, row_total, r, row_spans)


def refill_empty_rows(params, rows: np.ndarray, row_spans: tuple) -> None:
    """_refill_row for every one of `rows` (of `params`) whose total is 0 (see the module
    docstring), compiled only once a row is."""
    rows = np.ascontiguousarray(rows, np.int64)
    if rows.size and (params.row_total[rows] <= 0.0).any():
        refill = globals().get("refill_rows") or __getattr__("refill_rows")  # compiled on first use
        refill(params.theta, params.row_total, rows, row_spans)


# The pool of per-block statistics: block g's runs are run_cell/run_length[first_run[g]:
# last_run[g]] (run r covers entries run_cell[r] + u, in rows row_of[run_cell[r]] + u, for
# u < run_length[r]) and their values are pool_value[first_value[g]:], run after run.
RUNS = types.Tuple((I64, I64, I64, I64, I64, F64))
# spans_of_rows: each row's (first, step, size), and the sparse tables' entries row by row
ROW_SPANS = types.Tuple((types.int64[:, ::1], I64))


def _incremental_replay_pass(prepare, estep, estep_batch, batched, examples, bounds, blocks, weights, ints, layout,
                             meta, params, row_of, thawed, untracked, log_z, pool, row_spans):
    """One pass, one block at a time, over blocks listed before: mu <- mu - s_g + s_g', walking
    g's runs. `untracked` is (dense counts, marks, empty). Entries with thawed = 0 (a featured
    block's: see variants/incremental.py; thawed is empty when there is none) keep their value in
    theta; their statistics live in the pool alone. A row the update empties is refilled
    (`row_spans`: spans_of_rows). Returns the sum of weighted log Z."""
    theta, row_total, _, _, _ = params
    counts = untracked[0]
    first_run, last_run, first_value, run_cell, run_length, pool_value = pool
    total = 0.0
    for q in range(blocks.shape[0]):
        g = blocks[q]
        derived = prepare(meta, params)
        total += _block_estep(estep, estep_batch, batched, examples, bounds[q], bounds[q + 1], weights, ints, layout,
                              meta, params, derived, untracked, log_z)
        v = first_value[g]
        emptied = 0  # row totals the update left at 0, counted in the streamed loops without a branch
        for r in range(first_run[g], last_run[g]):
            c, m = run_cell[r], run_length[r]
            w = row_of[c]
            # slices of known length let the compiler stream the run (about 3x the indexed loop)
            new, old, th, rt = counts[c:c + m], pool_value[v:v + m], theta[c:c + m], row_total[w:w + m]
            if thawed.size == 0:  # no featured block: the loop the compiler streams
                for u in range(m):
                    change = new[u] - old[u]
                    th[u] = max(th[u] + change, 0.0)  # cancellation can leave -1e-17: clamp
                    rt[u] = max(rt[u] + change, 0.0)
                    emptied += rt[u] == 0.0
                    old[u] = new[u]
                    new[u] = 0.0
            else:
                on = thawed[c:c + m]
                for u in range(m):
                    change = on[u] * (new[u] - old[u])
                    th[u] = max(th[u] + change, 0.0)
                    rt[u] = max(rt[u] + change, 0.0)
                    emptied += rt[u] == 0.0
                    old[u] = new[u]
                    new[u] = 0.0
            v += m
        if emptied:  # rare: a later run of the block may have refilled the row already
            _refill_emptied_runs(theta, row_total, row_of, run_cell, run_length, first_run[g], last_run[g], row_spans)
    return total


def _incremental_listing_pass(prepare, estep, estep_batch, batched, examples, bounds, blocks, weights, ints, layout,
                              meta, params, row_of, thawed, buffer, log_z, listed, row_spans, relisted, fill):
    """One pass like incremental_replay_pass with the tracked E-step: each block's statistics
    leave `listed` (its old runs, if any) and are appended to `relisted` as new runs holding
    every entry it writes now or held before (so they cover every row the update can empty).
    fill = (runs, values) used in `relisted`. Returns (sum of weighted log Z, `relisted`, whose
    arrays may have grown)."""
    theta, row_total, _, _, _ = params
    counts, mark, touched = buffer
    first_run, last_run, first_value, old_cell, old_length, old_value = listed
    _, _, _, run_cell, run_length, pool_value = relisted
    total = 0.0
    for q in range(blocks.shape[0]):
        g = blocks[q]
        derived = prepare(meta, params)
        touched[0] = 0
        total += _block_estep(estep, estep_batch, batched, examples, bounds[q], bounds[q + 1], weights, ints, layout,
                              meta, params, derived, buffer, log_z)
        m = touched[0]
        v = first_value[g]
        for r in range(first_run[g], last_run[g]):
            for u in range(old_length[r]):
                i = old_cell[r] + u
                on = 1.0 if thawed.size == 0 else thawed[i]
                theta[i] = max(theta[i] - on * old_value[v], 0.0)
                row_total[row_of[i]] = max(row_total[row_of[i]] - on * old_value[v], 0.0)
                v += 1
                if mark[i] == 0:  # held before, not written now: keep it listed
                    mark[i] = 1
                    m += 1
                    touched[m] = i
        runs, values = fill[0], fill[1]
        if runs + m > run_cell.shape[0]:
            run_cell, run_length = grow(run_cell, runs + m), grow(run_length, runs + m)
        first_run[g], first_value[g] = runs, values
        t, last, entries = 1, -2, 0
        while t <= m:
            i, n = touched[t], 1
            if i < 0:  # a run (emc/codegen/abi.py)
                i, n = -i - 1, touched[t + 1]
                t += 1
            t += 1
            if runs > first_run[g] and i == last + 1 and row_of[i] == row_of[last] + 1:
                run_length[runs - 1] += n
            else:
                run_cell[runs], run_length[runs] = i, n
                runs += 1
            last = i + n - 1
            entries += n
        if values + entries > pool_value.shape[0]:
            pool_value = grow(pool_value, values + entries)
        emptied = 0
        for r in range(first_run[g], runs):
            c, n = run_cell[r], run_length[r]
            w = row_of[c]
            new, kept, th, rt, marks = counts[c:c + n], pool_value[values:values + n], theta[c:c + n], \
                row_total[w:w + n], mark[c:c + n]
            for u in range(n):
                kept[u] = new[u]
                on = 1.0 if thawed.size == 0 else thawed[c + u]
                th[u] += on * new[u]
                rt[u] += on * new[u]
                emptied += rt[u] == 0.0
                new[u] = 0.0
                marks[u] = 0
            values += n
        last_run[g] = runs
        fill[0], fill[1] = runs, values
        if emptied:
            _refill_emptied_runs(theta, row_total, row_of, run_cell, run_length, first_run[g], runs, row_spans)
    return total, (first_run, last_run, first_value, run_cell, run_length, pool_value)


# prepare, the E-step under sum, estep_batch (or no_estep_batch) and whether there is one
_ESTEPS = (PREPARE_FUNCTION, ESTEP_FUNCTION, ESTEP_BATCH_FUNCTION, types.boolean)
# name -> (pass, its signature), compiled on first use (kernels.compile_on_first_use): a batch fit
# never compiles or loads them
_PASSES = {
    "no_estep_batch": (_no_estep_batch, ESTEP_BATCH_SIGNATURE),
    "stepwise_apply": (_stepwise_apply, types.void(F64, F64, F64, F64, U8, I64, I64, types.int64, types.float64,
                                                   types.float64)),
    "stepwise_tracked_pass": (_stepwise_tracked_pass, types.Tuple((types.float64, types.int64))(
        *_ESTEPS, I64, types.int64, types.int64, types.float64, F64, INTS, LAYOUT, META, PARAMS, I64, I64, COUNTS,
        F64, types.float64)),
    "incremental_replay_pass": (_incremental_replay_pass, types.float64(
        *_ESTEPS, I64, I64, I64, F64, INTS, LAYOUT, META, PARAMS, I64, U8, COUNTS, F64, RUNS, ROW_SPANS)),
    "incremental_listing_pass": (_incremental_listing_pass, types.Tuple((types.float64, RUNS))(
        *_ESTEPS, I64, I64, I64, F64, INTS, LAYOUT, META, PARAMS, I64, U8, COUNTS, F64, RUNS, ROW_SPANS, RUNS, I64)),
    "refill_rows": (_refill_rows, types.void(F64, F64, I64, ROW_SPANS)),
}
__getattr__ = compile_on_first_use(globals(), _PASSES)
