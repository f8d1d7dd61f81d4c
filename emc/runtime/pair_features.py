"""Featured sparse tables: log-linear blocks over word pairs, with pair features shared by every
row (the word-alignment models of Berg-Kirkpatrick, Bouchard-Cote, DeNero & Klein 2010).

A link block P(a.target | a.source) holds only the (row, outcome) pairs that co-occur in the data
(its entries, emc/structures/alignment/). Featured, entry e = (v, r) scores
    score(v, r) = phi(v) . w_r + psi(v, r) . u
phi(v) are the outcome's features (`a.target`, `a.target.lower`, ...), each conjoined with the row
as in emc/runtime/features.py, but with a weight only for the (feature value, row) pairs some entry
has (a dense features x rows matrix over two vocabularies would not fit); psi(v, r) are the pair
features (`pair.same`, `pair.prefix(4)`, ...: emc/io/views.py), whose weights u are shared by every
row. P(v | r) is the softmax of the scores over row r's entries, so the E-step and the DPs read
the table as before. Both kinds are columns of one sparse (entry x feature) matrix X; with expected
counts C per entry and row totals N,
    objective = sum_e C[e] log P(e) - kappa/2 ||(w, u)||^2
    gradient  = X^T (C - P * N[row(e)]) - kappa (w, u)
whose shared part is sum_{v,r} psi(v, r) (C[v,r] - P[v|r] N_r). The weights are one flat vector:
the conjoined columns first, then one per pair feature.

Pair features never fire on `<unk>` (id 0 of either vocabulary) nor on the rows at or after
`pair_rows` (the NULL row of an alignment: NULL is no word).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.optimize
import scipy.sparse

from emc.io.views import DENSE_VIEW, PAIR_VIEWS, apply_views
from emc.io.vocab import UNK, Vocabulary
from emc.runtime.params import TableLayout
from emc.spec.check import Factor, Feature, PairFeature
from emc.spec.errors import EmcError

# L-BFGS per M-step over all the weights at once (the shared ones couple the rows, so the row-wise
# optimiser of emc/runtime/loglinear.py does not apply): at most this many iterations, fewer when
# the objective per count changes by less than FTOL relative or every gradient entry is below GTOL.
MAX_ITERATIONS = 25
MEMORY = 5
FTOL = 1e-15
GTOL = 1e-9


@dataclass
class PairFeaturedBlock:
    """The features of one sparse table: the (entry x feature) matrix, each entry's row, kappa."""

    name: str
    rows: int
    kappa: float
    design: scipy.sparse.csr_matrix = field(repr=False)
    entry_rows: np.ndarray = field(repr=False)  # non-decreasing: entries are stored row by row
    feature_names: list[str] = field(repr=False)  # `a.target=maison` for conjoined columns, `pair.same`
    column_rows: np.ndarray = field(repr=False)  # the row of each conjoined column; -1 for a pair feature
    features: tuple[Feature, ...] = ()
    pairs: tuple[PairFeature, ...] = ()
    identity: np.ndarray | None = field(default=None, repr=False)  # each entry's identity column

    def __post_init__(self) -> None:
        if np.any(np.diff(self.entry_rows) < 0):
            raise ValueError(f"table {self.name}: a featured sparse table's entries must be stored row by row")
        self.design_t = self.design.T.tocsr()
        sizes = np.bincount(self.entry_rows, minlength=self.rows)
        self._filled = sizes > 0
        self._starts = (np.cumsum(sizes) - sizes)[self._filled]  # where each non-empty row's entries start

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @property
    def weight_shape(self) -> tuple[int, ...]:
        return (self.n_features,)

    def shared_weights(self, weights: np.ndarray) -> dict[str, float]:
        """The pair features' weights by name."""
        first = self.n_features - len(self.pairs)
        return {p.text: float(w) for p, w in zip(self.pairs, weights[first:])}

    def _log_z(self, scores: np.ndarray) -> np.ndarray:
        """log Z of every row over its entries (-inf for a row without entries)."""
        top = np.full(self.rows, -np.inf)
        top[self._filled] = np.maximum.reduceat(scores, self._starts)
        sums = np.zeros(self.rows)
        sums[self._filled] = np.add.reduceat(np.exp(scores - top[self.entry_rows]), self._starts)
        with np.errstate(divide="ignore"):
            return top + np.log(sums)

    def log_probabilities(self, weights: np.ndarray) -> np.ndarray:
        """log P of every entry within its row, for weights (features,)."""
        scores = self.design @ weights
        return scores - self._log_z(scores)[self.entry_rows]

    def penalty(self, weights: np.ndarray) -> float:
        return 0.5 * self.kappa * float(np.dot(weights, weights)) if self.kappa else 0.0

    def objective(self, weights: np.ndarray, counts: np.ndarray) -> tuple[float, np.ndarray]:
        """The regularised expected log-likelihood of counts (per entry) and its gradient."""
        return self._objective(weights, counts, np.bincount(self.entry_rows, weights=counts, minlength=self.rows))

    def _objective(self, weights: np.ndarray, counts: np.ndarray, totals: np.ndarray) -> tuple[float, np.ndarray]:
        log_p = self.log_probabilities(weights)
        value = float(np.dot(counts, log_p)) - self.penalty(weights)
        residual = counts - np.exp(log_p) * totals[self.entry_rows]
        gradient = self.design_t @ residual
        if self.kappa:
            gradient -= self.kappa * weights
        return value, gradient

    def maximize(self, counts: np.ndarray, start: np.ndarray, max_iterations: int | None = None) -> np.ndarray:
        """New weights from expected counts (per entry), by L-BFGS from `start` (at most
        `max_iterations`, default MAX_ITERATIONS). The optimiser works on weights scaled by the
        square root of the objective's curvature at the start (the diagonal of its Hessian): a
        shared weight sums the curvature of every pair it fires on, a conjoined one of its row
        alone, and unscaled, the shared weights' steep direction held every other weight's steps
        small (5 EM iterations of IBM 1 on the Hansards ended 7 AER points worse than the plain
        table's, whose optimum the features can express exactly)."""
        totals = np.bincount(self.entry_rows, weights=counts, minlength=self.rows)
        per_count = 1.0 / max(float(totals.sum()), 1.0)  # the optimiser works on the objective per count
        spread = self._curvature_root(start, totals)

        def descent(scaled: np.ndarray) -> tuple[float, np.ndarray]:
            value, gradient = self._objective(scaled / spread, counts, totals)
            return -value * per_count, -gradient / spread * per_count

        limits = {"maxiter": max_iterations or MAX_ITERATIONS, "maxcor": MEMORY, "ftol": FTOL, "gtol": GTOL}
        return scipy.optimize.minimize(descent, start * spread, jac=True, method="L-BFGS-B", options=limits).x / spread

    def _curvature_root(self, weights: np.ndarray, totals: np.ndarray) -> np.ndarray:
        """sqrt of the diagonal of the negative Hessian at `weights` (the design is 0/1:
        sum over a column's entries of N_row P (1 - P), plus kappa), floored so that a weight
        whose entries have no mass still moves."""
        p = np.exp(self.log_probabilities(weights))
        diagonal = self.design_t @ (totals[self.entry_rows] * p * (1.0 - p)) + self.kappa
        return np.sqrt(np.maximum(diagonal, 1e-6 * max(float(diagonal.max()), 1.0)))

    def initial_weights(self, table: np.ndarray) -> np.ndarray:
        """Weights whose probabilities match a starting table (per entry) as closely as the
        features allow: exactly with the identity feature (its column carries log P, centred per
        row; the others start at 0), otherwise the projection (the M-step with the table as counts)."""
        weights = np.zeros(self.n_features)
        if self.identity is None:
            return self.maximize(table, weights)
        log_table = np.log(np.maximum(table, 1e-300))
        sizes = np.bincount(self.entry_rows, minlength=self.rows)
        means = np.bincount(self.entry_rows, weights=log_table, minlength=self.rows) / np.maximum(sizes, 1)
        weights[self.identity] = log_table - means[self.entry_rows]
        return weights


def featured_sparse_table(factor: Factor, t: TableLayout, vocabs: dict[str, Vocabulary]) -> PairFeaturedBlock:
    """The featured block of a sparse table over word pairs. Its rows' names come from the
    context's vocabulary; a row space with NULL (`+null`, an alignment's) has NULL last, where
    pair features never fire."""
    row_vocab = vocabs.get(t.context_spaces[0]) if len(t.context_spaces) == 1 else None
    if row_vocab is None:
        raise EmcError(f"block '{factor.name}': a featured sparse table needs one context over a vocabulary")
    pair_rows = t.rows - 1 if t.context_spaces[0].endswith("+null") else t.rows
    dense = [f.text for f in factor.features if f.views and f.views[-1][0] == DENSE_VIEW]
    if dense:
        raise EmcError(f"block '{factor.name}': word vectors ({dense[0]}) are features of blocks over dense tables "
                       "(an HMM's emissions, a segment's word); this block is a sparse table over word pairs, "
                       "whose features are indicators")
    return build_pair_block(factor.table, t.rows, factor.l2, factor.features, factor.pair_features,
                            t.entry_rows, t.entry_outcomes, vocabs[t.outcome_spaces[0]].values, row_vocab.values,
                            pair_rows)


def build_pair_block(name: str, rows: int, kappa: float, outcome_features: tuple[Feature, ...], pairs: tuple[PairFeature, ...],
                     entry_rows: np.ndarray, entry_outcomes: np.ndarray, outcome_values: list[str],
                     row_values: list[str], pair_rows: int) -> PairFeaturedBlock:
    """The feature matrix of a sparse table from its entries (row, outcome) and the names of its
    outcome and row values (id order); pair features fire on rows below `pair_rows` only."""
    entry_rows = np.asarray(entry_rows, np.int64)
    entry_outcomes = np.asarray(entry_outcomes, np.int64)
    n = len(entry_rows)
    ordered = sorted(outcome_features, key=lambda f: bool(f.views))  # the identity (no views) first
    cells, columns, names, column_rows = [], [], [], []
    identity = None
    for feature in ordered:
        keys, key_ids = [], {}
        for i, value in enumerate(outcome_values):
            key = UNK if i == 0 and value == UNK else apply_views(value, feature.views)
            keys.append(key_ids.setdefault(key, len(key_ids)))
        names_of_key = list(key_ids)
        codes = np.asarray(keys, np.int64)[entry_outcomes] * rows + entry_rows
        distinct, inverse = np.unique(codes, return_inverse=True)
        inverse = inverse.reshape(-1) + len(names)
        if not feature.views:
            identity = inverse
        cells.append(np.arange(n))
        columns.append(inverse)
        names += [f"{feature.text}={names_of_key[code // rows]}" for code in distinct.tolist()]
        column_rows.append(distinct % rows)
    for pair in pairs:
        fires = np.flatnonzero(_fires(PAIR_VIEWS[pair.view].fires, pair.n, entry_rows, entry_outcomes,
                                      outcome_values, row_values, pair_rows))
        cells.append(fires)
        columns.append(np.full(len(fires), len(names)))
        names.append(pair.text)
        column_rows.append(np.array([-1]))
    cells_all, columns_all = np.concatenate(cells), np.concatenate(columns)
    design = scipy.sparse.csr_matrix((np.ones(len(cells_all)), (cells_all, columns_all)), shape=(n, len(names)))
    return PairFeaturedBlock(name, rows, kappa, design, entry_rows, names, np.concatenate(column_rows),
                             tuple(ordered), tuple(pairs), identity)


def _fires(test, n: int | None, entry_rows: np.ndarray, entry_outcomes: np.ndarray, outcome_values: list[str],
           row_values: list[str], pair_rows: int) -> np.ndarray:
    """Whether a pair feature fires on each entry: tested once per entry, never on `<unk>` or
    on a row at or after `pair_rows`."""
    out = np.zeros(len(entry_rows), bool)
    for e, (r, v) in enumerate(zip(entry_rows.tolist(), entry_outcomes.tolist())):
        if 0 < r < pair_rows and v > 0:
            out[e] = test(outcome_values[v], row_values[r], n)
    return out
