"""The featured M-step's merged features (emc/runtime/blocks/feature_groups.py): projecting weights keeps
every score and never adds penalty, the expansion is an isometry, and L-BFGS on the merged
weights takes the iterates of L-BFGS on all the features from a start in their subspace."""
import numpy as np
import pytest
import scipy.sparse

from emc.runtime.blocks import feature_groups, features, loglinear
from emc.spec.model import Feature


def random_matrix(rng: np.random.Generator, outcomes: int = 12, n_features: int = 30) -> scipy.sparse.csr_matrix:
    """Shared columns, single-outcome columns of any value (several per outcome, some outcomes
    with none) and an empty column."""
    dense = np.zeros((outcomes, n_features))
    for f in range(n_features - 1):
        holders = rng.choice(outcomes, size=1 if f % 2 else int(rng.integers(2, 5)), replace=False)
        dense[holders, f] = rng.choice([1.0, 1.0, rng.normal()], size=holders.size)
    return scipy.sparse.csr_matrix(dense)


def merged(matrix: scipy.sparse.csr_matrix):
    merged = feature_groups.merge_singletons(matrix.indptr, matrix.indices.astype(np.int64), matrix.data,
                                             matrix.shape[1])
    indptr, indices, values = merged.matrix
    compact = scipy.sparse.csr_matrix((values, indices, indptr), shape=(matrix.shape[0], merged.n_columns))
    return compact, merged.column, merged.unit


@pytest.mark.parametrize("seed", range(4))
def test_projection_keeps_every_score_and_expansion_is_an_isometry(seed):
    rng = np.random.default_rng(seed)
    matrix = random_matrix(rng)
    compact, column, unit = merged(matrix)
    assert compact.shape[1] < matrix.shape[1]
    per_column = np.diff(matrix.tocsc().indptr)
    assert (column[per_column == 0] == -1).all() and (column[per_column == 1] < column[per_column >= 2].min()).all()
    for blocks, width in ((1, 4), (2, 2), (3, 2)):  # the rows split into blocks, the last one padded
        weights = rng.normal(size=(matrix.shape[1], 4))
        projected = np.empty((blocks, compact.shape[1], width))
        feature_groups.project(weights, column, unit, projected)
        joined = np.concatenate(list(projected), axis=1)[:, :4]
        np.testing.assert_allclose(compact @ joined, matrix @ weights, rtol=1e-12, atol=1e-12)
        expanded = np.empty_like(weights)
        feature_groups.expand(projected, column, unit, expanded)
        np.testing.assert_allclose(matrix @ expanded, matrix @ weights, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose((expanded ** 2).sum(axis=0), (joined ** 2).sum(axis=0), rtol=1e-12)
        assert (expanded ** 2).sum() <= (weights ** 2).sum()
        again = np.empty_like(projected)
        feature_groups.project(expanded, column, unit, again)
        np.testing.assert_allclose(again, projected, rtol=1e-12, atol=1e-14)


def full_lbfgs(block: features.FeaturedBlock, counts: np.ndarray, start: np.ndarray, iterations: int) -> np.ndarray:
    """loglinear.maximize over every feature of the block, none merged."""
    phi = block.phi_active
    rows = loglinear.feature_rows(phi.indptr, phi.indices, phi.data)
    columns = loglinear.feature_columns(phi.indptr, phi.indices, phi.data, block.n_features)
    weights, shape = np.array(start), (phi.shape[0], block.rows)
    pool = np.empty((loglinear.pool_size(iterations, features.MEMORY),) + start.shape)
    loglinear.maximize(rows, columns, np.ascontiguousarray(counts[block.active]), block.kappa, weights, np.empty(shape),
                       np.empty(block.rows), pool, np.empty(shape), np.empty(shape), iterations, features.MEMORY,
                       features.GTOL, features.FTOL)
    return weights


@pytest.mark.parametrize("iterations", [1, 2, 6])
def test_lbfgs_on_merged_features_takes_the_full_iterates(iterations):
    """From a start in the merged subspace (where every M-step after the first starts) the M-step
    on merged weights lands where L-BFGS over all the features does."""
    rng = np.random.default_rng(iterations)
    words = ["<unk>", "walk", "walked", "talked", "Talk", "talk", "12", "a-b", "cat", "cats", "Cat", "dog"]
    feats = (Feature("x", ()), Feature("x.lower", (("lower", None),)), Feature("x.suffix(2)", (("suffix", 2),)),
             Feature("x.capitalized", (("capitalized", None),)))
    block = features.build("emit", 3, 0.7, feats, words, np.arange(len(words)) > 0)
    assert block.merged_columns.max() + 1 < block.n_features  # some features merged
    counts = rng.gamma(0.8, size=(len(words), block.rows)) * block.active[:, None]
    start = block.maximize(counts, rng.normal(size=block.weight_shape), 1)  # in the subspace now
    expected = full_lbfgs(block, counts, start, iterations)
    np.testing.assert_allclose(block.maximize(counts, start, iterations), expected, rtol=1e-9, atol=1e-11)


def test_info_shows_an_outcomes_alike_features_once():
    """`emc info` lists a merged column's features once when they weigh alike (as the M-step
    leaves them), with their number, and apart when they do not (a model saved before merging)."""
    from emc.runtime.info import _heaviest_alike

    merged = np.array([0, 0, 1, -1, 2, 2, 0])
    weights = np.array([1.0, 1.0, 0.5, 2.0, 0.3, 0.2, 1.0])
    assert _heaviest_alike(weights, merged, 3) == [(3, 1), (0, 3), (2, 1)]
    assert _heaviest_alike(weights, merged, 5) == [(3, 1), (0, 3), (2, 1), (4, 1), (5, 1)]
