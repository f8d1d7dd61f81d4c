"""Maximum-weight bipartite matching (the Hungarian algorithm), for one-to-one accuracy.

The O(n^3) shortest-augmenting-path form with potentials (Jonker-Volgenant style), on a square
cost matrix padded with zeros; runtime dependencies stay numpy-only.
"""
from __future__ import annotations

import numpy as np


def max_weight_matching(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of a matching of maximum total weight (each row and column used at
    most once; as many pairs as the smaller dimension)."""
    n_rows, n_cols = weights.shape
    n = max(n_rows, n_cols)
    cost = np.zeros((n, n))
    cost[:n_rows, :n_cols] = -weights
    assignment = _min_cost_assignment(cost)
    rows = np.arange(n)
    keep = (rows < n_rows) & (assignment < n_cols)
    return rows[keep], assignment[keep]


def _min_cost_assignment(cost: np.ndarray) -> np.ndarray:
    """For a square cost matrix, the column assigned to each row, minimising total cost."""
    n = cost.shape[0]
    inf = np.inf
    u = np.zeros(n + 1)
    v = np.zeros(n + 1)
    match = np.zeros(n + 1, np.int64)  # match[col] = row (1-based; 0 = free)
    way = np.zeros(n + 1, np.int64)
    for i in range(1, n + 1):
        match[0] = i
        j0 = 0
        minv = np.full(n + 1, inf)
        used = np.zeros(n + 1, bool)
        while True:
            used[j0] = True
            i0 = match[j0]
            free = ~used[1:]
            cur = cost[i0 - 1] - u[i0] - v[1:]
            better = free & (cur < minv[1:])
            minv[1:][better] = cur[better]
            way[1:][better] = j0
            candidates = np.where(free, minv[1:], inf)
            j1 = int(np.argmin(candidates)) + 1
            delta = candidates[j1 - 1]
            u[match[used]] += delta
            v[used] -= delta
            minv[1:][free] -= delta
            j0 = j1
            if match[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            match[j0] = match[j1]
            j0 = j1
    assignment = np.empty(n, np.int64)
    for j in range(1, n + 1):
        assignment[match[j] - 1] = j - 1
    return assignment
