"""Incremental EM (Neal & Hinton 1998): the examples are cut once into fixed blocks of
--block-size (a random partition drawn at the start; 1: every example its own block, the textbook
update), each block's expected counts s_b are kept (sparse), and after each block mu <- mu +
s_b' - s_b, the blocks in a fresh random order each pass. Neal & Hinton's argument holds for any
fixed partition; blocks let a structure with a batched E-step (the chain's) compute a block's
statistics in one call, which is what makes a pass cost about a batch iteration.

During the first pass the statistics start from the initial parameters as pseudo-counts (so the
first examples do not decide everything); when every example has contributed, those pseudo-counts
are removed from the rows the data reached, and mu is exactly the sum of the s_i from then on.

With constraints on the posterior (emc/runtime/constraints.py) each block's posterior is projected
onto them before its statistics replace the old ones (step_by_estep, in numpy on dense counts).

A row whose statistics all become zero (its last mass underflowed, or cancelled when a block's old
statistics were subtracted) reads as uniform, as batch EM's M-step makes a row with no counts, not
as 0 / 0: every path that can empty a row refills it (emc/runtime/online.py: EMPTY_ROW_MASS).

The first pass lists which entries each block writes; later passes replay those lists (see
emc/runtime/online.py). A replay pass that leaves counts behind (a block wrote outside its
list, possible only after an underflow to zero in the pass that listed it) drops them and makes
the next pass list afresh, so mu is again exactly the sum of the kept statistics after it.
"""
from __future__ import annotations

import numpy as np

from emc.runtime import online
from emc.runtime.constraints import mean_record
from emc.runtime.state import FitState, check_log_z
from emc.runtime.variants.base import Variant
from emc.runtime.variants.online_state import (additive_smoothing, count_buffer, featured_mstep_period, start_mass,
                                               statistics_state)
from emc.spec.errors import EmcError


class Incremental(Variant):
    projects = True  # each block's posterior, in step_by_estep
    name = "incremental"
    paper = "Neal & Hinton 1998"
    converges = False
    weighs_start = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # 1 for the entries the passes update in theta, 0 for featured blocks' (see featured_mstep);
        # empty without featured blocks, so the passes keep their plain loops
        featured = self.problem.layout.featured()
        self.thawed = np.ones(self.problem.layout.size if featured else 0, np.uint8)
        for t in featured:
            self.thawed[t.entries] = 0
        self.row_spans = online.spans_of_rows(self.problem.layout.tables)  # to refill an emptied row

    def start(self, state: FitState) -> None:
        if not self.executor.in_process:
            raise EmcError("incremental EM keeps every example's statistics in this process: run it without "
                           "--workers/--scheduler (stepwise EM runs on a cluster)")
        layout = self.problem.layout
        smoothing = additive_smoothing(layout, self.settings.regularizers, self.name)
        start = state.params
        state.params = statistics_state(start, layout, smoothing, start_mass(self.problem, self.settings))
        state.params.features = dict(start.features)
        if self.settings.block_size < 1:
            raise EmcError("--block-size must be at least 1")
        n = self.problem.n_examples
        # block g is members[g * m:(g + 1) * m]; with m = 1 no draw, so the shuffles are the textbook's
        members = state.rng.permutation(n) if self.settings.block_size > 1 else np.arange(n)
        blocks = -(-n // self.settings.block_size)
        state.extra.update(pseudo_counts=state.params.theta.copy(), list_next=True,
                           block_members=members.astype(np.int64), first_run=np.zeros(blocks, np.int64),
                           last_run=np.zeros(blocks, np.int64), first_value=np.zeros(blocks, np.int64),
                           **_empty_runs(0, 0))
        for t in layout.featured():
            featured_statistics(state, t)

    def finished(self, state: FitState) -> bool:
        return state.step >= self.settings.passes

    def step(self, state: FitState) -> dict:
        if self.projecting:
            return self.step_by_estep(state)
        p = self.problem
        x = state.extra
        m, members = self.settings.block_size, x["block_members"]
        order = state.rng.permutation(len(x["first_run"])).astype(np.int64)
        counts, mark, touched = count_buffer(p.layout)
        listing = bool(x["list_next"])
        if listing:
            relisted = _empty_runs(len(x["run_cell"]) or 1 << 16, len(x["pool_value"]) or 1 << 16, np.empty)
            fill = np.zeros(2, np.int64)
        total = 0.0
        featured = p.layout.featured()
        slices = self.slice_count(len(order))
        every = featured_mstep_period(slices)
        for i, (start, blocks) in enumerate(self.slices(order)):
            if listing and start > 0:
                relisted = _reserve(relisted, fill, start, len(order))
            part = np.concatenate([members[g * m:(g + 1) * m] for g in blocks])
            bounds = np.concatenate([[0], np.cumsum(np.minimum(m, len(members) - blocks * m))]).astype(np.int64)
            log_z = np.empty(len(part))
            common = (state.params, part, bounds, blocks, self.weights, self.thawed)
            if listing:
                done, grown = self.executor.incremental_pass(*common, (counts, mark, touched), log_z, _pool(x),
                                                             self.row_spans, _pool(x, relisted), fill)
                relisted = dict(zip(RUN_ARRAYS, grown[3:]))
            else:
                done = self.executor.incremental_pass(*common, (counts, mark, touched[:0]), log_z, _pool(x),
                                                      self.row_spans)
            check_log_z(p, part, log_z)
            total += done
            # mid-pass M-steps read the pool, which holds every block's statistics except during a
            # pass that lists the blocks afresh after the first (then some are in the old pool)
            if featured and (i + 1) % every == 0 and i + 1 < slices and (not listing or state.step == 0):
                pool = relisted if listing else x
                sums = pool_sums(p.layout.size, pool, fill if listing else None)
                for t in featured:
                    featured_mstep(state, t, sums, self.settings.mstep_iterations)
        if listing:
            # views of the used part: checkpoints save no spare room, and no copy (on some machines
            # first writes to fresh memory cost as much as a replay pass) is made to trim it
            x.update({k: v[:fill[0] if k != "pool_value" else fill[1]] for k, v in relisted.items()})
        x["list_next"] = bool(counts.any())  # a replayed block wrote outside its list: list afresh
        self._finish_pass(state)
        return {"pass": state.step + 1, "objective": total}

    def step_by_estep(self, state: FitState) -> dict:
        """The pass with each block's E-step through online_estep, projected onto the spec's
        constraints (emc/runtime/constraints.py): mu <- mu + s_b' - s_b on the dense counts. The
        blocks' statistics stay in the compiled passes' pool, one entry a run, rebuilt as the pass
        goes; a featured block's M-step runs as in a replay pass, on the pool's sums kept current."""
        x, m, layout = state.extra, self.settings.block_size, self.problem.layout
        members = x["block_members"]
        order = state.rng.permutation(len(x["first_run"])).astype(np.int64)
        kept, total, records = [], 0.0, []
        slices = self.slice_count(len(order))
        every = featured_mstep_period(slices)
        sums = pool_sums(layout.size, x) if layout.featured() else np.zeros(0)
        self.resume_duals(state)
        for i, (_, blocks) in enumerate(self.slices(order)):
            for g in blocks:
                counts, log_likelihood = self.online_estep(state.params, members[g * m:(g + 1) * m])
                total += log_likelihood
                records.append(self.constraint_record())
                cells = np.flatnonzero(counts)
                old_cells, old_values = _block_statistics(x, g)
                _replace_statistics(state.params, layout.row_of, self.thawed, old_cells, old_values, cells,
                                    counts[cells], self.row_spans)
                kept.append((g, cells, counts[cells]))
                if sums.size:
                    np.add.at(sums, old_cells, -old_values)
                    np.add.at(sums, cells, counts[cells])
            if sums.size and (i + 1) % every == 0 and i + 1 < slices:
                for t in layout.featured():
                    featured_mstep(state, t, sums, self.settings.mstep_iterations)
        self.keep_duals(state)
        x.update(_runs_of_entries(kept, len(order)))
        self._finish_pass(state)
        return {"pass": state.step + 1, "objective": total, **mean_record(records)}

    def _finish_pass(self, state: FitState) -> None:
        """A pass's end: the featured blocks' M-step, the first pass's pseudo-counts removed, and the
        row totals recounted."""
        layout = self.problem.layout
        if layout.featured():
            sums = pool_sums(layout.size, state.extra)
            for t in layout.featured():
                featured_mstep(state, t, sums, self.settings.mstep_iterations, drop_pseudo_counts=state.step == 0)
        if state.step == 0:
            self._remove_pseudo_counts(state)
        self._recount_rows(state)

    def _remove_pseudo_counts(self, state: FitState) -> None:
        layout = self.problem.layout
        theta, pseudo = state.params.theta, state.extra.pop("pseudo_counts")
        data = theta - pseudo
        reached = np.bincount(layout.row_of, weights=np.abs(data), minlength=layout.n_rows) > 0
        drop = layout.learned_mask() & reached[layout.row_of]
        for t in layout.featured():  # their statistics are kept apart (featured_mstep)
            drop[t.entries] = False
        theta[drop] = np.maximum(data[drop], 0.0)

    def _recount_rows(self, state: FitState) -> None:
        """Row totals from theta afresh, so rounding in the running totals never accumulates; a
        row left empty (the pseudo-counts removed from a row whose data cancelled) made uniform."""
        layout = self.problem.layout
        totals = np.bincount(layout.row_of, weights=state.params.theta, minlength=layout.n_rows)
        for t in layout.learned():
            state.params.row_total[t.row_slice] = totals[t.row_slice]
        online.refill_empty_rows(state.params, np.flatnonzero(self.row_spans[0][:, 2]), self.row_spans)


# Featured blocks (emc/runtime/blocks/features.py). The E-step must read their log-linear probabilities p,
# not normalised statistics: theta holds p (row totals 1) and the passes leave those entries alone
# (thawed = 0), while their statistics live in the pool of per-block counts like any block's. The
# gradient M-step runs a few times a pass on mu = the pool's sums plus the starting pseudo-counts
# still held (every row's during the first pass; afterwards only rows the data never reached).


def featured_statistics(state: FitState, t) -> None:
    """Keep a featured table's starting statistics apart (as pseudo-counts), and show its probabilities."""
    state.extra[f"featured_pseudo_{t.name}"] = t.values(state.params.theta).copy()
    t.featured.probabilities(state.params.features[t.name], out=t.values(state.params.theta))
    state.params.row_total[t.row_slice] = 1.0


def featured_mstep(state: FitState, t, sums: np.ndarray, iterations: int | None = None,
                   drop_pseudo_counts: bool = False) -> None:
    """The gradient M-step on mu = the pool's sums (`sums`, every entry) plus the pseudo-counts
    held, at most `iterations` of the block's optimiser (None: its own budget); after the first
    pass the rows the data reached drop theirs, as any block's do."""
    pseudo = state.extra[f"featured_pseudo_{t.name}"]
    data = t.values(sums)
    if drop_pseudo_counts:
        rows = t.local_rows().reshape(data.shape)
        pseudo[(np.bincount(rows.ravel(), weights=np.abs(data).ravel(), minlength=t.rows) > 0)[rows]] = 0.0
    mu = np.maximum(data + pseudo, 0.0)  # rounding only
    state.params.features[t.name] = t.featured.maximize(mu, state.params.features[t.name], iterations,
                                                        probabilities=t.values(state.params.theta))
    state.params.row_total[t.row_slice] = 1.0


def pool_sums(size: int, pool: dict, fill: np.ndarray | None = None) -> np.ndarray:
    """Every entry's sum over the blocks' kept statistics (the first fill[0] runs and fill[1]
    values of `pool`, default all): the pool's values follow its runs, entry by entry."""
    runs = len(pool["run_cell"]) if fill is None else int(fill[0])
    values = len(pool["pool_value"]) if fill is None else int(fill[1])
    cells = _run_entries(pool["run_cell"][:runs], pool["run_length"][:runs])
    sums = np.bincount(cells, weights=pool["pool_value"][:values], minlength=size)
    return sums.astype(np.float64, copy=False)  # an empty pool's bincount is int64


RUN_ARRAYS = ("run_cell", "run_length", "pool_value")


def _empty_runs(runs: int, values: int, allocate=np.zeros) -> dict[str, np.ndarray]:
    return {"run_cell": allocate(runs, np.int64), "run_length": allocate(runs, np.int64),
            "pool_value": allocate(values)}


def _reserve(runs: dict, fill: np.ndarray, visited: int, n: int) -> dict[str, np.ndarray]:
    """Room for the whole pass of n blocks at the rate of the blocks visited so far (they are a
    random sample), so the pool is not regrown (and its new memory first touched) again and again."""
    out = dict(runs)
    for keys, used in ((RUN_ARRAYS[:2], fill[0]), (RUN_ARRAYS[2:], fill[1])):
        need = int(used / visited * n * 1.1) + 1
        for k in keys:
            if len(out[k]) < need:
                out[k] = np.empty(max(need, len(out[k]) * 5 // 4), out[k].dtype)
                out[k][:used] = runs[k][:used]
    return out


def _block_statistics(pool: dict, g: int) -> tuple[np.ndarray, np.ndarray]:
    """Block g's kept statistics in `pool`: the entries (each run's, in order) and their values."""
    a, b = pool["first_run"][g], pool["last_run"][g]
    cells = _run_entries(pool["run_cell"][a:b], pool["run_length"][a:b])
    start = pool["first_value"][g]
    return cells, pool["pool_value"][start:start + len(cells)]


def _run_entries(cells: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The entries runs cover (run r: cells[r] .. cells[r] + lengths[r] - 1), run after run."""
    return (np.repeat(cells - (np.cumsum(lengths) - lengths), lengths) + np.arange(lengths.sum())).astype(np.int64)


def _replace_statistics(params, row_of: np.ndarray, thawed: np.ndarray, old_cells: np.ndarray,
                        old_values: np.ndarray, cells: np.ndarray, values: np.ndarray, row_spans: tuple) -> None:
    """mu <- mu - s_b + s_b' for a block's old and new statistics, theta and the row totals alike;
    entries with thawed = 0 (featured blocks', see Incremental) keep their value; a row left
    empty is refilled (online.refill_empty_rows, through `row_spans`)."""
    at = np.concatenate([old_cells, cells])
    change = np.concatenate([-old_values, values])
    if thawed.size:
        change *= thawed[at]
    rows = row_of[at]
    np.add.at(params.theta, at, change)
    np.add.at(params.row_total, rows, change)
    params.theta[at] = np.maximum(params.theta[at], 0.0)  # cancellation can leave -1e-17: clamp
    params.row_total[rows] = np.maximum(params.row_total[rows], 0.0)
    online.refill_empty_rows(params, rows, row_spans)


def _runs_of_entries(kept: list[tuple[int, np.ndarray, np.ndarray]], blocks: int) -> dict[str, np.ndarray]:
    """The pool of `kept` (block, entries, values; every block once), one entry a run."""
    visited = np.array([g for g, _, _ in kept], np.int64)
    sizes = np.array([len(cells) for _, cells, _ in kept], np.int64)
    first, last = np.zeros(blocks, np.int64), np.zeros(blocks, np.int64)
    last[visited] = np.cumsum(sizes)
    first[visited] = last[visited] - sizes
    cells = np.concatenate([c for _, c, _ in kept] or [np.zeros(0, np.int64)]).astype(np.int64)
    values = np.concatenate([v for _, _, v in kept] or [np.zeros(0)])
    return {"first_run": first, "last_run": last, "first_value": first.copy(), "run_cell": cells,
            "run_length": np.ones(len(cells), np.int64), "pool_value": values}


def _pool(extra: dict, runs: dict | None = None) -> tuple[np.ndarray, ...]:
    """The pool tuple of emc/runtime/online.py: the per-block index from `extra`, the runs from
    `runs` (default: `extra`'s own)."""
    runs = extra if runs is None else runs
    return (extra["first_run"], extra["last_run"], extra["first_value"]) + tuple(runs[k] for k in RUN_ARRAYS)
