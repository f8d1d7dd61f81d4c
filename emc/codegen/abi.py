"""The one interface between a generated model module and the runtime (the E-step ABI).

Every generated module exports, with exactly these numba signatures:

    prepare(meta, params) -> float64[::1]
        Scores that do not depend on the example (a chain's transition matrix), computed once
        per E-step call and handed to the per-example functions as `derived`.
    estep_example(ex, ints, layout, meta, params, derived, semiring, weight, counts) -> float64
        Part scores for example `ex` from the blocks, the structure's DP in `semiring`, and the
        posterior part marginals (sum), the best structure's parts (max) or the average parts of
        sampled structures (a sampling request, emc/structures/sampling.py) scattered into
        `counts`, scaled by `weight`. Returns the example's log Z (log max score for max).
    decode_example(ex, ints, layout, meta, params, derived, out) -> float64
        The best structure, written into `out` in the structure's encoding; returns its log score.
    sample_example(ex, ints, layout, meta, params, derived, out) -> float64
        A structure drawn from the posterior with numba's generator (which the caller seeds:
        emc/structures/sampling.py), written into `out` as decode_example writes; returns log Z.
    posterior_example(ex, ints, layout, meta, params, derived, out) -> float64
        Posterior part marginals, written into `out` in the structure's encoding; returns log Z.

and may export

    estep_batch(examples, ints, layout, meta, params, derived, weights, counts, log_z, deferred) -> int64
        estep_example under sum for each examples[q] with weights[q], log Z into log_z[q], all into
        the one `counts`: a structure whose DP runs faster over many examples at once (the chain's,
        as matrix products) does so here. The batch E-step uses it when present. The examples it
        does not take (the chain's constrained ones) it leaves to estep_example: their positions q
        go to deferred[:the count it returns], and the caller runs them. So a fit whose examples
        all batch never compiles estep_example (seconds on a cold cache).
    estep_sum(ex, ints, layout, meta, params, derived, semiring, weight, counts) -> float64
        estep_example under sum whatever `semiring` says, which the batch and online E-steps call
        in its place under sum (emc/runtime/kernels.py: estep_for): a glue whose E-step branches on the semiring (a
        rules program's read-back for hard EM and sampling; the DMV's, the PCFG's and the HMM aligner's DP under
        sum, the other semirings' apart) compiles only the sum's branch there.
    estep_fold(examples, ints, layout, meta, params, weights, scales, log_z) -> None
        Stepwise EM's updates with m = 1 (emc/runtime/online.py) over examples[q] in turn: its
        E-step under sum from `params` as they stand (log Z into log_z[q]), its expected counts
        times weights[q] added straight into the statistics `params` holds (theta[i] += c_i *
        weights[q], and as much to the total of entry i's row) after every read of `params` the
        example makes, then params' scale set to scales[q]: no count buffer, marks or list of the
        entries written, which the update would walk again, and one call for a run of examples.

Data travel as one int32 array `ints` holding every packed array of the corpus, cut by `layout`
(array a is ints[layout[a]:layout[a+1]]), and the sizes the code needs (space sizes, table
offsets) as `meta`. Because the signature is fixed, the runtime's loops over examples (batch,
stepwise, incremental) are compiled and cached once, and call any model through a function
pointer.

`params` is the lazy parameter view (theta, row_total, row_add_den, table_add, scale): the weight
of entry i in row r of table b is

    (theta[i] * scale + table_add[b]) / (row_total[r] * scale + row_add_den[r])

which is theta itself after a batch M-step (row_total = 1, scale = 1, adds 0), and the smoothed,
normalised sufficient statistics during stepwise EM, where a global `scale` makes an update cost
time proportional to the entries a mini-batch touched (Liang & Klein 2009, section 3.2).

`counts` is (dense counts, mark, touched): when `touched` is non-empty, every entry written for
the first time is marked and listed in `touched` (touched[0] holds how many slots are used), so
the online variants visit only the entries a mini-batch touched. A slot holds an entry's index,
or two slots -(c + 1), n hold a run of n >= 2 entries c .. c + n - 1 in consecutive rows of one
outcome (add_column lists a column so, and the update then streams it).
"""
import numpy as np
from numba import njit, types

PARAMS = types.UniTuple(types.float64[::1], 5)
COUNTS = types.Tuple((types.float64[::1], types.uint8[::1], types.int64[::1]))
INTS = types.int32[::1]
LAYOUT = types.int64[::1]
META = types.int64[::1]

DERIVED = types.float64[::1]

PREPARE_SIGNATURE = DERIVED(META, PARAMS)
ESTEP_SIGNATURE = types.float64(types.int64, INTS, LAYOUT, META, PARAMS, DERIVED, types.int64, types.float64, COUNTS)
DECODE_SIGNATURE = types.float64(types.int64, INTS, LAYOUT, META, PARAMS, DERIVED, types.int32[::1])
POSTERIOR_SIGNATURE = types.float64(types.int64, INTS, LAYOUT, META, PARAMS, DERIVED, types.float64[::1])
ESTEP_BATCH_SIGNATURE = types.int64(types.int64[::1], INTS, LAYOUT, META, PARAMS, DERIVED, types.float64[::1], COUNTS,
                                    types.float64[::1], types.int64[::1])

PREPARE_FUNCTION = types.FunctionType(PREPARE_SIGNATURE)
ESTEP_FUNCTION = types.FunctionType(ESTEP_SIGNATURE)
DECODE_FUNCTION = types.FunctionType(DECODE_SIGNATURE)
SAMPLE_FUNCTION = DECODE_FUNCTION  # sample_example has decode_example's signature
POSTERIOR_FUNCTION = types.FunctionType(POSTERIOR_SIGNATURE)
ESTEP_BATCH_FUNCTION = types.FunctionType(ESTEP_BATCH_SIGNATURE)

# Meta slots of a table: where its entries and rows start, and its shape.
TABLE_OFFSET, TABLE_ROW_OFFSET, TABLE_ROWS, TABLE_OUTCOMES, TABLE_INDEX = range(5)
TABLE_META_SIZE = 5


@njit(inline="always")
def entry(meta, table, row, outcome):
    """Flat index of (row, outcome) in a dense table; tables are stored outcome-major, so all the
    rows of one outcome (say, every state's probability of one word) are adjacent."""
    return meta[table + TABLE_OFFSET] + outcome * meta[table + TABLE_ROWS] + row


@njit(inline="always")
def add_column(counts, listed, cell, marg, weight, positive=False):
    """dense[cell + k] += marg[k] * weight for every k (a column: entries of one outcome in
    consecutive rows); when tracked, the entries written for the first time are marked and
    listed after touched[listed], zero posteriors left out. Returns the new count listed.
    Stepwise EM with m = 1 writes every token's emission column per sentence, so the two common
    cases loop without a branch, which vectorises: a column none of whose entries is listed yet,
    with no zero posterior (listed as a run), and a column listed already (a word seen earlier
    in the mini-batch). In a stepwise pass on CoNLL-2000 the emission counts take 25% less time
    than with a branch per entry. `positive` says every marg[k] * weight is known to be non-zero
    (all_positive over all the columns at once, one loop that vectorises), so the check per
    column reads the marks alone. A table written whole (a chain's transitions) is better checked
    once: nothing_to_list."""
    dense, mark, touched = counts
    size = marg.shape[0]
    if touched.shape[0] == 0:
        add_listed_column(counts, cell, marg, weight)
        return listed
    column = dense[cell:cell + size]
    marks = mark[cell:cell + size]
    seen, zeros = 0, 0
    if positive:
        for k in range(size):
            seen += marks[k]
    else:
        for k in range(size):
            seen += marks[k]
            zeros += marg[k] * weight == 0.0
    if seen == size:
        for k in range(size):
            column[k] += marg[k] * weight
        return listed
    if seen == 0 and zeros == 0 and size > 1:
        for k in range(size):
            column[k] += marg[k] * weight
            marks[k] = 1
        touched[listed + 1], touched[listed + 2] = -(cell + 1), size
        return listed + 2
    for k in range(size):
        p = marg[k] * weight
        if p != 0.0:
            if marks[k] == 0:
                marks[k] = 1
                listed += 1
                touched[listed] = cell + k
            column[k] += p
    return listed


@njit(inline="always")
def all_positive(values, weight):
    """Whether every values[i] * weight is non-zero (and not NaN), in one loop that vectorises."""
    flat = values.ravel()
    zeros = 0
    for i in range(flat.shape[0]):
        zeros += not flat[i] * weight != 0.0
    return zeros == 0


@njit(inline="always")
def nothing_to_list(counts, meta, table):
    """Whether no entry of a table can need listing: the counts are untracked, or every entry of
    the table is marked already (stepwise EM marks the tables it adds whole, emc/runtime/online.py).
    Glue that adds a table column by column checks this once and then adds through
    add_listed_column: one loop over the table's marks vectorises, where add_column's check per
    column cost 3x the adds themselves (the chain's transition counts in a stepwise pass on
    CoNLL-2000: 0.0146 s with a check per column, 0.0045 with one per table)."""
    dense, mark, touched = counts
    if touched.shape[0] == 0:
        return True
    first = meta[table + TABLE_OFFSET]
    marks = mark[first:first + meta[table + TABLE_ROWS] * meta[table + TABLE_OUTCOMES]]
    seen = 0
    for i in range(marks.shape[0]):
        seen += marks[i]
    return seen == marks.shape[0]


@njit(inline="always")
def add_listed_column(counts, cell, marg, weight):
    """dense[cell + k] += marg[k] * weight for every k, for a column with nothing to list."""
    column = counts[0][cell:cell + marg.shape[0]]
    for k in range(marg.shape[0]):
        column[k] += marg[k] * weight


@njit(inline="always")
def fold_column(params, meta, table, outcome, marg, t, weight):
    """estep_fold's add of a column, the entries of one outcome of a table in every row:
    theta[entry(row k)] and row k's total += marg[t, k] * weight. Unsigned indices, and marg read
    in place: a view of it or of theta would take and drop a reference at every token (atomic, 10%
    of a stepwise pass in all), and a signed index is checked for being negative at every read,
    which keeps LLVM from vectorising the loop."""
    theta, row_total = params[0], params[1]
    cell, first_row = entry(meta, table, 0, outcome), meta[table + TABLE_ROW_OFFSET]
    for k in range(marg.shape[1]):
        p = marg[t, k] * weight
        theta[np.uint64(cell + k)] += p
        row_total[np.uint64(first_row + k)] += p


@njit(inline="always")
def fold_entry(params, meta, table, row, outcome, value):
    """estep_fold's add of one entry: theta at (row, outcome) of a table and its row's total += value."""
    theta, row_total = params[0], params[1]
    theta[entry(meta, table, row, outcome)] += value
    row_total[meta[table + TABLE_ROW_OFFSET] + row] += value


@njit(inline="always")
def weight_at(params, meta, table, row, i):
    """The weight of flat entry i in row `row` of a table (see the module docstring)."""
    return entry_mass(params, meta, table, i) / row_mass(params, meta, table, row)


@njit(inline="always")
def entry_mass(params, meta, table, i):
    """The numerator of entry i's weight, theta[i] * scale + the table's add."""
    theta, scale, add = mass_terms(params, meta, table)
    return theta[i] * scale + add


@njit(inline="always")
def mass_terms(params, meta, table):
    """(theta, scale, add), the terms of entry_mass, for a loop over many entries to read once."""
    theta, _, _, table_add, scale = params
    return theta, scale[0], table_add[meta[table + TABLE_INDEX]]


@njit(inline="always")
def row_mass(params, meta, table, row):
    """The denominator every entry of a row shares, row_total * scale + row_add_den: a loop over
    one row's entries computes it once."""
    _, row_total, row_add_den, _, scale = params
    r = meta[table + TABLE_ROW_OFFSET] + row
    return row_total[r] * scale[0] + row_add_den[r]


# A call LLVM inlines, not inline="always": numba's own inlining runs its analyses over the whole
# caller again at every call site, which in a rules program's chart passes (dozens of sites) cost
# seconds of a cold start (bench/README.md, "Start-up, round 7"). Its one signature: the glue passes
# a table's number as a constant, which numba would compile a specialisation for, table by table.
@njit(types.float64(PARAMS, META, types.int64, types.int64, types.int64), cache=True)
def read(params, meta, table, row, outcome):
    return weight_at(params, meta, table, row, entry(meta, table, row, outcome))


@njit(inline="always")
def row_inverses(params, meta, table):
    """1 / row_mass for every row of a small table, so a loop over all its entries multiplies
    instead of dividing (table_reader)."""
    _, row_total, row_add_den, _, scale = params
    first, rows = meta[table + TABLE_ROW_OFFSET], meta[table + TABLE_ROWS]
    # slices, not row_mass per row: its index from meta is checked for being negative per read,
    # and the loop then divides one row at a time
    totals, adds = row_total[first:first + rows], row_add_den[first:first + rows]
    inverse = np.empty(rows)
    s = scale[0]
    for row in range(rows):
        inverse[row] = 1.0 / (totals[row] * s + adds[row])
    return inverse


@njit(inline="always")
def table_reader(params, meta, table):
    """What reading a table's entries needs, read once: (theta, offset, rows, scale, add, 1 /
    row_mass of every row). A loop over many entries reads them with read_hoisted, which LLVM
    vectorises: read() loads meta and divides per entry (3x the time of the chain's emission
    scores). Costs a division per row of the table, so it suits tables with few rows."""
    theta, scale, add = mass_terms(params, meta, table)
    return theta, meta[table + TABLE_OFFSET], meta[table + TABLE_ROWS], scale, add, row_inverses(params, meta, table)


@njit(inline="always")
def read_hoisted(reader, row, outcome):
    """read() through a table_reader. The indices are unsigned: numba turns a negative signed
    index into one from the end, a check per read that keeps LLVM from vectorising the loop
    (the chain's transition scores took 3x the time, its emission scores 2x)."""
    theta, offset, rows, scale, add, inverse = reader
    return (theta[np.uint64(offset + outcome * rows + row)] * scale + add) * inverse[np.uint64(row)]


@njit(inline="always")
def array(ints, layout, a):
    return ints[layout[a]:layout[a + 1]]
