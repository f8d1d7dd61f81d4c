"""Parameter tables: their layout in one flat vector, and the lazy parameter state the E-step reads.

Every factor of a model reads a table: a learned block (re-estimated by the M-step), a fixed block
(read from a file, never re-estimated) or a fixed weight (an expression over a numeric attribute,
evaluated once over its domain). All tables live in one flat vector `theta`, table after table;
a dense table is stored outcome-major (entry = outcome * rows + row, see emc/codegen/abi.py).
A sparse table (a translation table over co-occurring word pairs) holds only the (row, outcome)
pairs its structure lists when it packs the data (in the integer type it gives them: int32 keeps
a table of millions of entries small; 16 bits do for a vocabulary's words). Each entry belongs to one global row (`row_of`), which is
what the M-step normalises over; everything below works on both kinds through the rows, so only
the code generator and the structure know which is which.

Memory: the big arrays are as long as theta. The M-step and the parameter views below read a
dense table as its (outcomes, rows) matrix and a sparse one a chunk (CHUNK entries) at a time, so
none needs a temporary as long as theta (no per-entry row index either), and `row_of` is
built only when asked for (the online variants): batch EM over a table of N entries holds
theta and the expected counts, which the M-step turns into the new theta in place: 16 N bytes.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from emc.codegen.abi import TABLE_INDEX, TABLE_OFFSET, TABLE_OUTCOMES, TABLE_ROW_OFFSET, TABLE_ROWS
from emc.codegen.layout import CodeLayout
from emc.priors import Prior
from emc.runtime.blocks.block import Block, PlainBlock
from emc.priors.normalize import CHUNK, normalize_table
from emc.spec.model import CheckedModel


@dataclass
class TableLayout:
    name: str
    kind: str  # "learned" | "fixed" | "weight"
    index: int
    offset: int
    row_offset: int
    rows: int
    outcomes: int
    context_spaces: tuple[str, ...]
    outcome_spaces: tuple[str, ...]
    # what the M-step asks of the table (emc/runtime/blocks/block.py): a plain learned block with
    # its prior (and smoothing), a fixed one, or, once bind attaches features, a featured one
    block: Block = Block()
    # sparse tables: the local row and outcome of each entry (None for dense tables)
    entry_rows: np.ndarray | None = field(default=None, repr=False)
    entry_outcomes: np.ndarray | None = field(default=None, repr=False)

    @property
    def prior(self) -> Prior:
        """The spec's prior of the block, with its smoothing (emc/priors)."""
        return self.block.prior

    @property
    def featured(self) -> Any:
        """A featured block's log-linear model (emc/runtime/blocks/features.py, pair_features.py),
        None for any other block."""
        return self.block.model

    @property
    def sparse(self) -> bool:
        return self.entry_rows is not None

    @property
    def size(self) -> int:
        return len(self.entry_rows) if self.sparse else self.rows * self.outcomes

    def local_rows(self) -> np.ndarray:
        """The row of each entry, 0..rows-1."""
        return self.entry_rows if self.sparse else np.tile(np.arange(self.rows), self.outcomes)

    def local_outcomes(self) -> np.ndarray:
        return self.entry_outcomes if self.sparse else np.repeat(np.arange(self.outcomes), self.rows)

    def row_sizes(self) -> np.ndarray:
        """How many entries (outcomes) each row has."""
        if not self.sparse:
            return np.full(self.rows, self.outcomes)
        return np.bincount(self.entry_rows, minlength=self.rows)

    @property
    def entries(self) -> slice:
        return slice(self.offset, self.offset + self.size)

    @property
    def row_slice(self) -> slice:
        return slice(self.row_offset, self.row_offset + self.rows)

    def matrix(self, flat: np.ndarray) -> np.ndarray:
        """A dense table as an (outcomes, rows) view of a flat vector laid out like theta."""
        if self.sparse:
            raise ValueError(f"table {self.name} is sparse: it has no matrix view")
        return flat[self.entries].reshape(self.outcomes, self.rows)

    def values(self, flat: np.ndarray) -> np.ndarray:
        """A table's entries as its featured block reads them: a dense table's (outcomes, rows)
        matrix, a sparse table's entry vector (both views of `flat`)."""
        return flat[self.entries] if self.sparse else self.matrix(flat)

    def row_sums(self, flat: np.ndarray) -> np.ndarray:
        if not self.sparse:
            return self.matrix(flat).sum(axis=0)
        return np.bincount(self.entry_rows, weights=flat[self.entries], minlength=self.rows)


@dataclass
class ParamLayout:
    tables: list[TableLayout]
    size: int
    n_rows: int

    @staticmethod
    def build(model: CheckedModel, sizes: dict[str, int],
              sparse: dict[str, tuple[np.ndarray, np.ndarray]] | None = None) -> "ParamLayout":
        """`sparse` maps a table name to the (rows, outcomes) of the entries it has."""
        sparse = sparse or {}
        tables = []
        offset = row_offset = 0
        for index, factor in enumerate(model.tables()):
            rows = int(np.prod([sizes[s] for s in factor.context_spaces], dtype=np.int64))
            outcomes = int(np.prod([sizes[s] for s in factor.outcome_spaces], dtype=np.int64))
            entry_rows, entry_outcomes = sparse.get(factor.table, (None, None))
            table = TableLayout(factor.table, factor.kind, index, offset, row_offset, rows, outcomes,
                                factor.context_spaces, factor.outcome_spaces,
                                PlainBlock(factor.prior) if factor.kind == "learned" else Block(factor.prior),
                                _entry_indices(entry_rows), _entry_indices(entry_outcomes))
            tables.append(table)
            offset += table.size
            row_offset += rows
        return ParamLayout(tables, offset, row_offset)

    @functools.cached_property
    def row_of(self) -> np.ndarray:
        """The global row of every entry (built on first use)."""
        row_of = np.empty(self.size, np.int64)
        for t in self.tables:
            row_of[t.entries] = t.local_rows()
            row_of[t.entries] += t.row_offset
        return row_of

    def table(self, name: str) -> TableLayout:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(name)

    def learned(self) -> list[TableLayout]:
        return [t for t in self.tables if t.kind == "learned"]

    def featured(self) -> list[TableLayout]:
        return [t for t in self.tables if t.featured is not None]

    def learned_mask(self) -> np.ndarray:
        mask = np.zeros(self.size, bool)
        for t in self.learned():
            mask[t.entries] = True
        return mask

    def meta(self, code: CodeLayout, args: dict, sizes: dict[str, int]) -> np.ndarray:
        """The meta array the generated code reads, in the model's meta slots (`code.meta`)."""
        values = np.zeros(code.meta_size, np.int64)
        tables = {t.name: t for t in self.tables}
        for slot in code.meta:
            if slot.kind == "arg":
                values[slot.index] = int(args[slot.name])
            elif slot.kind == "size":
                values[slot.index] = sizes[slot.name]
            else:
                t = tables[slot.name]
                table = values[slot.index:slot.index + slot.width]
                table[TABLE_OFFSET], table[TABLE_ROW_OFFSET] = t.offset, t.row_offset
                table[TABLE_ROWS], table[TABLE_OUTCOMES], table[TABLE_INDEX] = t.rows, t.outcomes, t.index
        return values


@dataclass
class ParamState:
    """The lazy parameters the E-step reads: weight of entry i in row r of table b is
    (theta[i] * scale + table_add[b]) / (row_total[r] * scale + row_add_den[r])."""

    theta: np.ndarray
    row_total: np.ndarray
    row_add_den: np.ndarray
    table_add: np.ndarray
    scale: np.ndarray  # shape (1,)
    # the weights (features x rows) of each featured table, by name; its entries in theta are
    # always the probabilities these weights give (emc/runtime/blocks/features.py)
    features: dict[str, np.ndarray] = field(default_factory=dict)

    @staticmethod
    def plain(theta: np.ndarray, layout: ParamLayout, features: dict[str, np.ndarray] | None = None) -> "ParamState":
        """Parameters that are their own weights (after a batch M-step), with the featured
        tables' feature weights, if any."""
        return ParamState(np.ascontiguousarray(theta, np.float64), np.ones(layout.n_rows), np.zeros(layout.n_rows),
                          np.zeros(len(layout.tables)), np.ones(1), dict(features or {}))

    def abi(self) -> tuple:
        return (self.theta, self.row_total, self.row_add_den, self.table_add, self.scale)

    def weights(self, layout: ParamLayout) -> np.ndarray:
        """The effective weight of every entry, materialised."""
        out = self.theta * self.scale[0]
        for t in layout.tables:
            self._finish(t, out[t.entries])
        return out

    def table_weights(self, table: TableLayout) -> np.ndarray:
        """The effective weights of one table's entries."""
        out = self.theta[table.entries] * self.scale[0]
        self._finish(table, out)
        return out

    def _finish(self, t: TableLayout, scaled: np.ndarray) -> None:
        """theta * scale of a table's entries -> (theta * scale + add) / row denominator, in place."""
        if self.table_add[t.index]:
            scaled += self.table_add[t.index]
        den = self.row_total[t.row_slice] * self.scale[0] + self.row_add_den[t.row_slice]
        if np.any(den != 1.0):
            if not t.sparse:
                scaled.reshape(t.outcomes, t.rows)[:] /= den
                return
            for a in range(0, t.size, CHUNK):
                scaled[a:a + CHUNK] /= den[t.entry_rows[a:a + CHUNK]]

    def copy(self) -> "ParamState":
        return ParamState(self.theta.copy(), self.row_total.copy(), self.row_add_den.copy(),
                          self.table_add.copy(), self.scale.copy(), {k: v.copy() for k, v in self.features.items()})


def _entry_indices(values) -> np.ndarray | None:
    """A sparse table's entry rows or outcomes, in the integer type given."""
    if values is None:
        return None
    values = np.asarray(values)
    if not np.issubdtype(values.dtype, np.integer):
        raise TypeError(f"sparse entries must be integers, not {values.dtype}")
    return values


def normalize_rows(values: np.ndarray, layout: ParamLayout, tables: list[TableLayout]) -> np.ndarray:
    """Each row of the given tables divided by its sum (rows summing to 0 become uniform)."""
    out = values.copy()
    for t in tables:
        normalize_table(out[t.entries], t.entry_rows, t.rows, out=out[t.entries])
    return out


def random_init(layout: ParamLayout, fixed_theta: np.ndarray, rng: np.random.Generator, noise: float) -> ParamState:
    """Learned rows proportional to 1 + noise * U(0, 1) (noise = 1 is the default: the
    reference HMM results need starts that far from uniform); fixed tables as given."""
    theta = fixed_theta.copy()
    for t in layout.learned():
        values = theta[t.entries]
        rng.random(t.size, out=values)
        values *= noise
        values += 1.0
        normalize_table(values, t.entry_rows, t.rows, out=values)
    return ParamState.plain(theta, layout)


def unknown_outcomes(theta: np.ndarray, layout: ParamLayout, hapax: dict[str, np.ndarray]) -> np.ndarray:
    """Give outcome 0 (`<unk>`) of each learned table over a vocabulary the summed probability of
    that vocabulary's training hapaxes (see emc/io/vocab.py), or, when it had none, the row's
    smallest non-zero probability. `hapax[space]` are the hapax ids."""
    out = theta.copy()
    for t in layout.learned():
        if t.sparse or len(t.outcome_spaces) != 1 or t.outcome_spaces[0] not in hapax:
            continue  # a sparse table's structure gives unseen pairs their weight itself
        ids = hapax[t.outcome_spaces[0]]
        m = t.matrix(out)
        if len(ids):
            m[0, :] = m[ids, :].sum(axis=0)
        else:
            m[0, :] = np.where(m > 0, m, np.inf).min(axis=0, initial=np.inf)
            m[0, ~np.isfinite(m[0])] = 0.0
    return out
