"""Parameter tables: their layout in one flat vector, and the lazy parameter state the E-step reads.

Every factor of a model reads a table: a learned block (re-estimated by the M-step), a fixed block
(read from a file, never re-estimated) or a fixed weight (an expression over a numeric attribute,
evaluated once over its domain). All tables live in one flat vector `theta`, table after table;
a dense table is stored outcome-major (entry = outcome * rows + row, see emc/codegen/abi.py).
A sparse table (a translation table over co-occurring word pairs) holds only the (row, outcome)
pairs its structure lists when it packs the data. Each entry belongs to one global row
(`row_of`), which is what the M-step normalises over; everything below works on both kinds
through `row_of`, so only the code generator and the structure know which is which.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from emc.codegen.abi import TABLE_META_SIZE, TABLE_INDEX, TABLE_OFFSET, TABLE_OUTCOMES, TABLE_ROW_OFFSET, TABLE_ROWS
from emc.codegen.layout import meta_names
from emc.spec.check import CheckedModel, Prior


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
    smoothing: float = 0.0
    prior: Prior | None = None
    # sparse tables: the local row and outcome of each entry (None for dense tables)
    entry_rows: np.ndarray | None = field(default=None, repr=False)
    entry_outcomes: np.ndarray | None = field(default=None, repr=False)

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

    def row_sums(self, flat: np.ndarray) -> np.ndarray:
        return np.bincount(self.local_rows(), weights=flat[self.entries], minlength=self.rows)


@dataclass
class ParamLayout:
    tables: list[TableLayout]
    size: int
    n_rows: int
    row_of: np.ndarray = field(repr=False)

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
                                factor.context_spaces, factor.outcome_spaces, factor.smoothing, factor.prior,
                                None if entry_rows is None else np.asarray(entry_rows, np.int64),
                                None if entry_outcomes is None else np.asarray(entry_outcomes, np.int64))
            tables.append(table)
            offset += table.size
            row_offset += rows
        row_of = np.empty(offset, np.int64)
        for t in tables:
            row_of[t.entries] = t.row_offset + t.local_rows()
        return ParamLayout(tables, offset, row_offset, row_of)

    def table(self, name: str) -> TableLayout:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(name)

    def learned(self) -> list[TableLayout]:
        return [t for t in self.tables if t.kind == "learned"]

    def learned_mask(self) -> np.ndarray:
        mask = np.zeros(self.size, bool)
        for t in self.learned():
            mask[t.entries] = True
        return mask


    def meta(self, model: CheckedModel, args: dict, sizes: dict[str, int]) -> np.ndarray:
        """The meta array the generated code reads (see emc.codegen.layout.meta_names)."""
        values = []
        tables = {t.name: t for t in self.tables}
        for name in meta_names(model):
            kind, _, key = name.partition(":")
            if kind == "arg":
                values.append(int(args[key]))
            elif kind == "size":
                values.append(sizes[key])
            elif "#" not in key:
                t = tables[key]
                slots = [0] * TABLE_META_SIZE
                slots[TABLE_OFFSET], slots[TABLE_ROW_OFFSET] = t.offset, t.row_offset
                slots[TABLE_ROWS], slots[TABLE_OUTCOMES], slots[TABLE_INDEX] = t.rows, t.outcomes, t.index
                values.extend(slots)
        return np.array(values, np.int64)


@dataclass
class ParamState:
    """The lazy parameters the E-step reads: weight of entry i in row r of table b is
    (theta[i] * scale + table_add[b]) / (row_total[r] * scale + row_add_den[r])."""

    theta: np.ndarray
    row_total: np.ndarray
    row_add_den: np.ndarray
    table_add: np.ndarray
    scale: np.ndarray  # shape (1,)

    @staticmethod
    def plain(theta: np.ndarray, layout: ParamLayout) -> "ParamState":
        """Parameters that are their own weights (after a batch M-step)."""
        return ParamState(np.ascontiguousarray(theta, np.float64), np.ones(layout.n_rows), np.zeros(layout.n_rows),
                          np.zeros(len(layout.tables)), np.ones(1))

    def abi(self) -> tuple:
        return (self.theta, self.row_total, self.row_add_den, self.table_add, self.scale)

    def weights(self, layout: ParamLayout) -> np.ndarray:
        """The effective weight of every entry, materialised."""
        s = self.scale[0]
        table_add = np.repeat(self.table_add, [t.size for t in layout.tables])
        den = self.row_total * s + self.row_add_den
        return (self.theta * s + table_add) / den[layout.row_of]

    def copy(self) -> "ParamState":
        return ParamState(self.theta.copy(), self.row_total.copy(), self.row_add_den.copy(),
                          self.table_add.copy(), self.scale.copy())


def normalize_table(values: np.ndarray, local_rows: np.ndarray, rows: int) -> np.ndarray:
    """Each row of one table's entries divided by its sum (a row summing to 0 becomes uniform)."""
    total = np.bincount(local_rows, weights=values, minlength=rows)
    size = np.bincount(local_rows, minlength=rows)
    empty = total <= 0
    total[empty] = 1.0
    out = values / total[local_rows]
    uniform = empty[local_rows]
    out[uniform] = 1.0 / size[local_rows[uniform]]
    return out


def normalize_rows(values: np.ndarray, layout: ParamLayout, tables: list[TableLayout]) -> np.ndarray:
    """Each row of the given tables divided by its sum (rows summing to 0 become uniform)."""
    out = values.copy()
    for t in tables:
        out[t.entries] = normalize_table(out[t.entries], t.local_rows(), t.rows)
    return out


def random_init(layout: ParamLayout, fixed_theta: np.ndarray, rng: np.random.Generator, noise: float) -> ParamState:
    """Learned rows proportional to 1 + noise * U(0, 1) (noise = 1 is the default: the
    reference HMM results need starts that far from uniform); fixed tables as given."""
    theta = fixed_theta.copy()
    for t in layout.learned():
        theta[t.entries] = 1.0 + noise * rng.random(t.size)
    return ParamState.plain(normalize_rows(theta, layout, layout.learned()), layout)


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
