"""The lazy parameter state the online variants update in place (see emc/runtime/online.py):
theta holds the sufficient statistics mu / scale for learned tables and the fixed values
elsewhere; the E-step reads (theta * scale + a_b) / (row_total * scale + a_b * outcomes)."""
from __future__ import annotations

import numpy as np

from emc.priors import Prior
from emc.runtime.blocks.block import table_block
from emc.runtime.params import ParamLayout, ParamState
from emc.runtime.settings import START_MASSES
from emc.spec.errors import EmcError

# How often a pass of stepwise or incremental EM runs the gradient M-step of featured blocks
# (emc/runtime/blocks/features.py): an M-step costs about a third of a batch E-step (CoNLL-2000), the
# E-steps of thousands of mini-batches.
# On CoNLL-2000 (bench/features_pos.py --stepwise) 10 a pass kept most of the accuracy of 50.
FEATURED_MSTEPS_PER_PASS = 10


def featured_mstep_period(slices: int) -> int:
    """Run the featured M-step after every this many of a pass's slices."""
    return max(1, round(slices / FEATURED_MSTEPS_PER_PASS))


def additive_smoothing(layout: ParamLayout, regularizers: dict[str, Prior], algorithm: str) -> np.ndarray:
    """Per table, the pseudo-count the online M-step adds (its block's online_pseudo_count: its
    prior's, which refuses the priors with no closed form to apply lazily)."""
    out = np.zeros(len(layout.tables))
    for t in layout.learned():
        out[t.index] = table_block(t, regularizers).online_pseudo_count(t, algorithm)
    return out


def start_mass(problem, settings) -> str:
    """--start-mass, else the structure's own choice (its data module's ONLINE_START_MASS), else
    "entry"."""
    mass = settings.start_mass or problem.model.data.ONLINE_START_MASS
    if mass not in START_MASSES:
        raise EmcError(f"--start-mass {mass}: choose {' or '.join(START_MASSES)}")
    return mass


def statistics_state(params: ParamState, layout: ParamLayout, smoothing: np.ndarray,
                     mass: str = "entry") -> ParamState:
    """The online variants' starting statistics: the current parameters as pseudo-counts, one per
    entry on average with mass "entry" (a row of n outcomes holds n; for the default start each
    entry is then about 1 + U(0, 1), up to a constant), one per row with mass "row". The mass
    decides how many mini-batches pass before the data outweigh the start. With one pseudo-count
    per row the first sentences decide much: from a near-uniform start they decide every state
    alike, so the chain pairs "row" with a more varied start (its ONLINE_INIT_NOISE; see
    emc/runtime/initialize.py); with one per entry a single row over a vocabulary derived from the
    data outweighs passes of it (word segmentation's 175,000 substrings: stepwise EM with m = 1000
    at 69% token F1 after 2 passes instead of 83%)."""
    theta = params.weights(layout)
    row_add_den = np.zeros(layout.n_rows)
    row_total = np.ones(layout.n_rows)
    for t in layout.learned():
        sizes = t.row_sizes()
        if mass == "entry":
            theta[t.entries] *= sizes[t.local_rows()]
        row_add_den[t.row_slice] = smoothing[t.index] * sizes
        row_total[t.row_slice] = t.row_sums(theta)
    return ParamState(theta, row_total, row_add_den, smoothing.copy(), np.ones(1))


def count_buffer(layout: ParamLayout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense counts, their marks, and the list of touched entries (touched[0] = how many)."""
    return np.zeros(layout.size), np.zeros(layout.size, np.uint8), np.zeros(layout.size + 1, np.int64)
