"""Featured blocks: log-linear multinomials and their gradient M-step (Berg-Kirkpatrick,
Bouchard-Cote, DeNero & Klein 2010, "Painless Unsupervised Learning with Features").

A block with `features(x, x.suffix(2), ...)` has, for each context row r, weights w_r over the
features of its outcomes: P(v | r) = exp(phi(v) . w_r) / sum_u exp(phi(u) . w_r). Every feature
view is conjoined with the row (the weight matrix W is features x rows). phi is a sparse
(outcome x feature) 0/1 matrix built once from the outcome vocabulary; the E-step and the DPs read
the block's probability table as for any block, so they do not change.

The M-step maximises  sum_{v,r} C[v,r] log P(v|r) - kappa/2 ||W||^2  over W with L-BFGS,
warm-started from the previous W. With counts C (outcomes x rows) and column totals N:
    gradient = phi^T (C - P * N) - kappa W.
The objective is a sum over rows, so each row is its own L-BFGS problem, with its own line search;
the rows are stepped in lockstep (emc/runtime/blocks/loglinear.py, compiled), in one block of rows per
thread, on the weights with each outcome's single-outcome features merged into one
(emc/runtime/blocks/feature_groups.py: the same iterates on 44% fewer weights on CoNLL-2000). The line
search only accepts points that raise the objective (a GEM step), so the M-step objective never
falls below that of the warm start.

The softmax ranges over the outcomes seen in training (`active`); the others (`<unk>`, words of a
view's vocabulary only decoding added) have probability 0, as in a plain block's maximum-likelihood
estimate; at decode time an unseen word is scored from its features (emc/runtime/decode.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numba
import numpy as np

from emc.io.vectors import read_vectors
from emc.io.views import DENSE_VIEW, apply_views
from emc.io.vocab import UNK
from emc.runtime.blocks import feature_groups, loglinear
from emc.spec.model import Feature

if TYPE_CHECKING:
    import scipy.sparse

# L-BFGS per M-step and row: at most this many iterations, unless the fit says otherwise
# (--mstep-iterations); stops earlier when the relative objective change falls below FTOL or every
# gradient entry below GTOL. A partial M-step from the previous weights is still a GEM step, and
# on CoNLL-2000 small ones learned more per EM iteration (bench/features_pos.py
# --mstep-iterations, 3 seeds, many-to-one after 50 / 100 iterations): 1: 70.6 / 72.0,
# 2: 70.4 / 71.6, 5: 67.2 / 69.2 (25 gave 62.9 after 50 on seed 1, before merged features). Few
# iterations from the last weights follow the marginal likelihood's own gradient more closely
# (the expected complete log-likelihood's gradient at the current weights is the marginal's), the
# direct optimisation Berg-Kirkpatrick et al. found better than a full M-step. 2 keeps one
# quasi-Newton step; 1 gave the same accuracy on CoNLL-2000, but the featured segmenter on
# br-phono then reaches 80.0% token F1 after 50 iterations against 82.6
# (bench/segmentation_brphono.py --features).
MAX_ITERATIONS = 2
MEMORY = 5  # L-BFGS's history (curvature pairs per row)
FTOL = 1e-15
GTOL = 1e-9  # on the gradient per count


@dataclass
class FeaturedBlock:
    """The features of one table: the outcome x feature matrix, the feature names, kappa."""

    name: str
    rows: int
    kappa: float
    phi: scipy.sparse.csr_matrix = field(repr=False)
    feature_names: list[str] = field(repr=False)
    features: tuple[Feature, ...] = ()
    identity: np.ndarray | None = field(default=None, repr=False)  # each outcome's identity column
    # the outcomes the softmax ranges over: those seen in training (the others, `<unk>` among
    # them, get probability 0 as under a plain block, and are scored from features at decode time)
    active: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.active is None:
            self.active = np.ones(self.phi.shape[0], bool)
        self.phi_active = self.phi[self.active]
        self.phi_active.sort_indices()
        seen = np.flatnonzero(self.active)
        # the outcomes seen in training are usually one run (all but <unk>): then the compiled
        # passes read and write a table's rows for them in place
        self._seen = slice(int(seen[0]), int(seen[-1]) + 1) if seen.size and seen[-1] - seen[0] + 1 == seen.size else None
        self._scratch: tuple = ()

    # The compiled passes work on phi_active with its single-outcome features merged
    # (emc/runtime/blocks/feature_groups.py), in two forms; all are made when first needed: decoding
    # reads the saved table and never needs them (on br-phono's 1.4M entries they take 0.1 and
    # 0.2 s).
    @cached_property
    def _merged(self) -> feature_groups.Merged:
        return feature_groups.merge_singletons(self.phi_active.indptr, self.phi_active.indices.astype(np.int64),
                                               self.phi_active.data, self.phi.shape[1])

    @cached_property
    def _rows(self) -> tuple:
        return loglinear.feature_rows(*self._merged.matrix)

    @cached_property
    def _columns(self) -> tuple:
        return loglinear.feature_columns(*self._merged.matrix, self._merged.n_columns)

    @property
    def merged_columns(self) -> np.ndarray:
        """Each feature's merged column (-1 for a feature no training outcome has): the features
        that share one are their outcome's only ones, and their weights are its merged weight
        times their values (alike, for indicators)."""
        return self._merged.column

    def _project(self, weights: np.ndarray, blocks: np.ndarray | None = None) -> np.ndarray:
        """Weights (features x rows) as merged weights into blocks (blocks x merged x width; by
        default a new single block)."""
        if blocks is None:
            blocks = np.empty((1, self._merged.n_columns, self.rows))
        feature_groups.project(np.ascontiguousarray(weights, dtype=float), self._merged.column, self._merged.unit,
                               blocks)
        return blocks

    def _expand(self, blocks: np.ndarray) -> np.ndarray:
        """The weights (features x rows) of merged ones in blocks."""
        out = np.empty((self.n_features, self.rows))
        feature_groups.expand(blocks, self._merged.column, self._merged.unit, out)
        return out

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @property
    def weight_shape(self) -> tuple[int, ...]:
        return (self.n_features, self.rows)

    def log_probabilities(self, weights: np.ndarray) -> np.ndarray:
        """log P (outcomes x rows) for weights (features x rows); -inf for inactive outcomes."""
        return self._table(*self._scores(weights), np.empty((self.phi.shape[0], self.rows)), take_log=True)

    def probabilities(self, weights: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """P (outcomes x rows) for weights (features x rows), 0 for inactive outcomes, into `out`
        (a new array by default; a table's view of theta, say)."""
        out = np.empty((self.phi.shape[0], self.rows)) if out is None else out
        return self._table(*self._scores(weights), out, take_log=False)

    def _scores(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """phi_active W (seen outcomes x rows) and each row's log Z, as one block."""
        scores, log_z = np.empty((1, self.phi_active.shape[0], self.rows)), np.empty((1, self.rows))
        merged = self._project(weights)
        loglinear.scores_and_log_z(self._rows, merged[0], scores[0], log_z[0])
        return scores, log_z

    def _table(self, scores: np.ndarray, log_z: np.ndarray, out: np.ndarray, take_log: bool) -> np.ndarray:
        """The table (outcomes x rows) of blocks of scores and log Z (blocks x seen outcomes x
        width, blocks x width) into `out`."""
        blocks, _, width = scores.shape
        direct = self._seen is not None and out.flags.c_contiguous
        seen = out[self._seen] if direct else np.empty((scores.shape[1], self.rows))
        for b in range(blocks):
            loglinear.probabilities_into(scores[b], log_z[b], seen, b * width, take_log)
        if not direct:
            out[self.active] = seen
        out[~self.active] = -np.inf if take_log else 0.0
        return out

    def objective(self, weights: np.ndarray, counts: np.ndarray) -> tuple[float, np.ndarray]:
        """The regularised expected log-likelihood of counts (outcomes x rows) and its gradient
        (features x rows). Counts of inactive outcomes are left out (they have none in training)."""
        weights = np.ascontiguousarray(weights, dtype=float)
        merged = self._project(weights)
        # the likelihood's part through the merged features (it sees the weights only through the
        # scores), the penalty's on the weights as they are: any weights, not only merged ones
        data_gradient = np.empty_like(merged)
        likelihood = loglinear.objective(self._rows, self._columns, self._seen_counts(counts), 0.0, merged[0],
                                         data_gradient[0])
        return likelihood - self.penalty(weights), self._expand(data_gradient) - self.kappa * weights

    def penalty(self, weights: np.ndarray) -> float:
        if not self.kappa:
            return 0.0
        flat = weights.ravel(order="K")
        return 0.5 * self.kappa * float(np.dot(flat, flat))

    def maximize(self, counts: np.ndarray, start: np.ndarray, max_iterations: int | None = None,
                 probabilities: np.ndarray | None = None) -> np.ndarray:
        """New weights (features x rows) from expected counts (outcomes x rows), by L-BFGS on each
        row's merged weights, projected from `start` (at most `max_iterations`, default
        MAX_ITERATIONS), the rows in blocks, one per thread. `probabilities` (outcomes x rows:
        theta's view of the table, say) receives P under the new weights, from the M-step's own
        final scores. The starting scores are gathered from `start` afresh, never kept from an
        earlier M-step: a resumed fit, which gathers them, then takes exactly the path of an
        uninterrupted one."""
        iterations = max_iterations or MAX_ITERATIONS
        blocks = max(1, min(numba.get_num_threads(), self.rows // 2))
        width = -(-self.rows // blocks)
        pool, residuals, direction, scores, weights, split_counts = self._workspace(
            blocks, loglinear.pool_size(iterations, MEMORY), width)
        log_z = np.empty((blocks, width))
        seen_counts = self._seen_counts(counts)
        if blocks == 1:
            counts_blocked = seen_counts[None]
        else:
            counts_blocked = split_counts
            loglinear.split_rows(seen_counts, counts_blocked)
        self._project(start, weights)
        loglinear.maximize_blocks(self._rows, self._columns, counts_blocked, self.kappa, weights, scores, log_z,
                                  pool, residuals, direction, iterations, MEMORY, GTOL, FTOL)
        if probabilities is not None:
            self._table(scores, log_z, probabilities, take_log=False)
        return self._expand(weights)

    def _seen_counts(self, counts: np.ndarray) -> np.ndarray:
        seen = counts[self._seen] if self._seen is not None else counts[self.active]
        return np.ascontiguousarray(seen, dtype=float)

    def _workspace(self, blocks: int, slots: int, width: int) -> tuple:
        """The M-step's scratch arrays, kept from one M-step to the next: fresh ones of this size
        cost page faults worth a third of the M-step (CoNLL-2000's emission block). Among them the
        blocks of merged weights, and with several blocks those of the counts."""
        shape = (blocks, slots, self._merged.n_columns, width)
        if not self._scratch or self._scratch[0].shape != shape:
            outcomes = (blocks, self.phi_active.shape[0], width)
            split_counts = np.empty(outcomes) if blocks > 1 else None
            self._scratch = (np.empty(shape), np.empty(outcomes), np.empty(outcomes), np.empty(outcomes),
                             np.empty(shape[:1] + shape[2:]), split_counts)
        return self._scratch

    def initial_weights(self, table: np.ndarray) -> np.ndarray:
        """Weights whose probabilities match a starting table (outcomes x rows) as closely as the
        features allow: the identity feature carries log P exactly when the block has it;
        otherwise the table is projected (the M-step with the table as counts)."""
        weights = np.zeros((self.n_features, self.rows))
        if self.identity is not None:
            log_table = np.log(np.maximum(table[self.active], 1e-300))
            # a row's shift leaves its softmax alone: centre it, so the start costs little penalty
            weights[self.identity[self.active]] = log_table - log_table.mean(axis=0)
            # the same scores with the least penalty: spread over the merged features' subspace
            return self._expand(self._project(weights))
        return self.maximize(np.where(self.active[:, None], table, 0.0), weights)


def build(name: str, rows: int, kappa: float, features: tuple[Feature, ...], values: list[str],
          active: np.ndarray | None = None) -> FeaturedBlock:
    """The feature matrix of a block over its outcome vocabulary `values` (id order); `active`
    marks the outcomes seen in training (default: all)."""
    ordered = sorted(features, key=lambda f: bool(f.views))  # the identity (no views) first
    has_identity = bool(ordered) and not ordered[0].views
    import scipy.sparse  # here: a fit without featured blocks never pays for importing it

    index: dict[str, int] = {}
    indptr, indices, data = [0], [], []
    for i, value in enumerate(values):
        entries = [(UNK, 1.0)] if i == 0 and value == UNK else [e for f in ordered for e in feature_values(f, value)]
        for key, x in entries:
            column = index.get(key)
            if column is None:
                column = index[key] = len(index)
            indices.append(column)
            data.append(x)
        indptr.append(len(indices))
    indices_array, starts = np.array(indices, np.int64), np.array(indptr, np.int64)
    phi = scipy.sparse.csr_matrix((np.array(data, float), indices_array, starts), shape=(len(values), len(index)))
    identity = indices_array[starts[:-1]] if has_identity else None
    return FeaturedBlock(name, rows, kappa, phi, list(index), tuple(ordered), identity, active)


def feature_values(feature: Feature, value: str) -> list[tuple[str, float]]:
    """The (feature column name, value) pairs of one outcome under one feature: `x.suffix(2)` gives
    one indicator (`x.suffix(2)=ed`, 1); `x.lower.vectors("f")` gives the lowercased word's vector
    from file f, one real-valued column per dimension (`x.lower.vectors("f")[3]`; a word without a
    vector gives none)."""
    if feature.views and feature.views[-1][0] == DENSE_VIEW:
        vector = read_vectors(str(feature.views[-1][1])).lookup(apply_views(value, feature.views[:-1]))
        return [] if vector is None else [(f"{feature.text}[{j}]", float(x)) for j, x in enumerate(vector) if x]
    return [(f"{feature.text}={apply_views(value, feature.views)}", 1.0)]


# --- decoding: words never seen in training ---------------------------------------------------


def growing_spaces(checked, vocabs: dict, sparse_tables: frozenset[str] = frozenset()) -> frozenset[str]:
    """The outcome spaces of featured blocks that data being decoded may extend with new values
    (words read from the file, or a segmentation's substrings when it is packed): those keep their
    own ids, instead of `<unk>`, so their features can score them. Only a space every table reads
    as its one outcome qualifies (the tables over it then just grow by outcomes); otherwise new
    values stay `<unk>`. A sparse table (`sparse_tables`) keeps its trained entries, so its new
    words stay `<unk>` too."""
    out = set()
    for factor in checked.tables():
        if not factor.features or factor.table in sparse_tables:
            continue
        space = factor.outcome_spaces[0]
        users = [f for f in checked.tables() if space in f.outcome_spaces + f.context_spaces]
        if space in vocabs and all(f.outcome_spaces == (space,) for f in users):
            out.add(space)
    return frozenset(out)


def decoding_theta(saved, problem) -> np.ndarray:
    """The saved parameters laid out for a problem whose featured outcome spaces hold new words
    (after the training ones): a featured table gives each new word exp(w . f(word)) / Z(row),
    with the weights of the features seen in training and Z over the training vocabulary; a plain
    table over the same space gives it `<unk>`'s probability (emc/runtime/unseen.py)."""
    from emc.runtime.params import ParamLayout
    from emc.runtime.unseen import unseen_outcomes

    sizes = dict(problem.sizes)
    sizes.update({space: size for space, size in saved.info["vocab_sizes"].items() if space in sizes})
    old_layout = ParamLayout.build(saved.model.checked, sizes, saved.sparse)
    old_theta = unseen_outcomes(saved.theta, old_layout, saved.vocabs, frozenset(saved.features))
    theta = problem.fixed_theta.copy()
    for t, old in zip(problem.layout.tables, old_layout.tables):
        if t.size == old.size:
            theta[t.entries] = old_theta[old.entries]
            continue
        table = t.matrix(theta)
        table[:old.outcomes] = old.matrix(old_theta)
        if t.featured is None:
            table[old.outcomes:] = table[0]
            continue
        weights = saved.features[t.name]
        block = t.featured
        known = block.phi[old.outcomes:, :weights.shape[0]]  # features first seen now weigh nothing
        log_z = _log_z(np.asarray(block.phi[:old.outcomes, :weights.shape[0]][block.active[:old.outcomes]] @ weights))
        table[old.outcomes:] = np.exp(np.asarray(known @ weights) - log_z)
    return theta


def _log_z(scores: np.ndarray) -> np.ndarray:
    """log sum exp of each column (a row of the block: outcomes x rows)."""
    top = scores.max(axis=0)
    return top + np.log(np.exp(scores - top).sum(axis=0))
