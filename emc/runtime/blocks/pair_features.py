"""Featured sparse tables: log-linear blocks over word pairs, with pair features shared by every
row (the word-alignment models of Berg-Kirkpatrick, Bouchard-Cote, DeNero & Klein 2010).

A link block P(a.target | a.source) holds only the (row, outcome) pairs that co-occur in the data
(its entries, emc/structures/alignment/). Featured, entry e = (v, r) scores
    score(v, r) = phi(v) . w_r + psi(v, r) . u
phi(v) are the outcome's features (`a.target`, `a.target.lower`, ...), each conjoined with the row
as in emc/runtime/blocks/features.py, but with a weight only for the (feature value, row) pairs some entry
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
import scipy.sparse

from emc.io.views import DENSE_VIEW, PAIR_VIEWS, apply_views
from emc.io.vocab import UNK, Vocabulary
from emc.runtime.blocks import pair_mstep
from emc.runtime.params import TableLayout
from emc.spec.errors import EmcError
from emc.spec.model import Factor, Feature, PairFeature

# The M-step (emc/runtime/blocks/pair_mstep.py): at most ROUNDS turns of the rows' weights then the shared
# ones, each row taking at most ROW_NEWTON Newton steps and the shared weights SHARED_NEWTON; fewer
# when a turn lowers the loss by less than FTOL relative or every gradient entry per count is
# below GTOL.
ROUNDS = 3
ROW_NEWTON = 2
SHARED_NEWTON = 2
FTOL = 1e-12
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
        sizes = np.bincount(self.entry_rows, minlength=self.rows)
        self._filled = sizes > 0
        self._entry_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)  # row r: entries [ptr[r], ptr[r+1])
        self._starts = self._entry_ptr[:-1][self._filled]  # where each non-empty row's entries start
        first = self.n_features - len(self.pairs)
        self._conjoined = self.design[:, :first].tocsr()
        self._pair_columns = np.ascontiguousarray(self.design[:, first:].toarray())  # entries x pair features
        # each row's own (conjoined) columns, and each entry's columns numbered within its row
        own = self.column_rows[:first]
        self._columns = np.argsort(own, kind="stable").astype(np.int64)
        self._column_ptr = np.concatenate([[0], np.cumsum(np.bincount(own, minlength=self.rows))]).astype(np.int64)
        within = np.empty(first, np.int64)
        within[self._columns] = np.arange(first) - self._column_ptr[own[self._columns]]
        self._local = within[self._conjoined.indices]
        self._indptr = self._conjoined.indptr.astype(np.int64)
        self._pair_gram = self._pair_columns.T @ self._pair_columns + np.eye(len(self.pairs))

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

    def probabilities(self, weights: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """P of every entry within its row, into `out` (a new array by default)."""
        p = np.exp(self.log_probabilities(weights))
        if out is None:
            return p
        out[:] = p
        return out

    def penalty(self, weights: np.ndarray) -> float:
        return 0.5 * self.kappa * float(np.dot(weights, weights)) if self.kappa else 0.0

    def objective(self, weights: np.ndarray, counts: np.ndarray) -> tuple[float, np.ndarray]:
        """The regularised expected log-likelihood of counts (per entry) and its gradient (the
        reference the compiled M-step's pieces are tested against)."""
        totals = np.bincount(self.entry_rows, weights=counts, minlength=self.rows)
        log_p = self.log_probabilities(weights)
        value = float(np.dot(counts, log_p)) - self.penalty(weights)
        residual = counts - np.exp(log_p) * totals[self.entry_rows]
        gradient = self.design.T @ residual
        if self.kappa:
            gradient -= self.kappa * weights
        return value, gradient

    def maximize(self, counts: np.ndarray, start: np.ndarray, max_iterations: int | None = None,
                 probabilities: np.ndarray | None = None) -> np.ndarray:
        """New weights from expected counts (per entry), from `start`, by block-coordinate ascent
        (emc/runtime/blocks/pair_mstep.py): at most `max_iterations` turns (default ROUNDS) of Newton
        steps on every row's own weights given the shared ones, the penalty's rebalancing between
        the two, then Newton steps on the shared ones. Each part never lowers the objective.
        `probabilities` (per entry; theta's view of the table, say) receives P under the new
        weights."""
        weights = np.array(start, np.float64)
        first = self.n_features - len(self.pairs)
        own, shared = weights[:first], weights[first:]
        loss = np.inf
        for _ in range(max_iterations or ROUNDS):
            pair_mstep.maximize_rows(self._entry_ptr, self._indptr, self._local, self._column_ptr, self._columns,
                                     self._pair_columns @ shared, counts, float(self.kappa), own, ROW_NEWTON, GTOL)
            self._rebalance(own, shared)
            previous, loss = loss, self._maximize_shared(self._conjoined @ own, counts, shared) + self.penalty(own)
            if previous - loss <= FTOL * abs(loss):
                break
        if probabilities is not None:
            self.probabilities(weights, out=probabilities)
        return weights

    def _rebalance(self, own: np.ndarray, shared: np.ndarray) -> None:
        """Move weight between the shared weights u and the identity weights w_e of the entries
        they fire on, to where the l2 penalty is least (in place). Raising u by d and lowering each
        w_e by psi_e . d leaves every score, so the likelihood, as it is, and the penalty
        |u + d|^2 + sum_e (w_e - psi_e . d)^2 is least at (Psi^T Psi + I) d = Psi^T w - u. The
        row and shared steps alone crawl along this direction, which only the penalty tilts:
        4 turns of them left a 3-iteration IBM 1 M-step on the Hansards 11 nats short of its
        optimum (of 2,600 gained), the shared weights a fifth short."""
        if self.identity is None or not self.kappa or not len(shared):
            return
        change = np.linalg.solve(self._pair_gram, self._pair_columns.T @ own[self.identity] - shared)
        own[self.identity] -= self._pair_columns @ change
        shared += change

    def _maximize_shared(self, own_scores: np.ndarray, counts: np.ndarray, shared: np.ndarray) -> float:
        """Newton steps on the shared weights (in place) given every entry's score from its row's
        weights; the loss afterwards, without the rows' penalty."""
        k = len(shared)
        gradient, hessian = np.empty(k), np.empty((k, k))

        def loss_at(u: np.ndarray) -> float:  # also leaves the loss's gradient and Hessian at u
            value = pair_mstep.shared_terms(self._entry_ptr, own_scores + self._pair_columns @ u, self._pair_columns,
                                            counts, gradient, hessian)
            gradient[:] = self.kappa * u - gradient
            hessian[np.diag_indices(k)] += self.kappa
            return -value + self.penalty(u)

        loss = loss_at(shared)
        scale = max(float(counts.sum()), 1.0)
        for _ in range(SHARED_NEWTON if k else 0):
            if np.abs(gradient).max() <= GTOL * scale:
                break
            direction = -np.linalg.lstsq(hessian, gradient, rcond=None)[0]
            slope = float(gradient @ direction)
            if slope >= 0:
                break
            for step in 0.5 ** np.arange(pair_mstep.MAX_BACKTRACKS):
                trial_loss = loss_at(shared + step * direction)
                if trial_loss <= loss + pair_mstep.ARMIJO * step * slope:
                    shared += step * direction
                    loss = trial_loss
                    break
            else:
                break
        return loss

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
