"""What a fit asks of every block, whatever its kind: the M-step from expected counts and the
previous parameters (`maximize`), the term the MAP objective adds (`log_prior`), its start once the
first parameters are drawn (`start`), the pseudo-count the online variants add lazily
(`online_pseudo_count`), the Dirichlet parameter of variational Bayes (`vb_alpha`) and what it adds
to the objective, in words (`objective_term`).

Three kinds answer them: a fixed table or weight (`Block`: kept as it is), a plain learned block
(`PlainBlock`: its prior's closed-form or iterative M-step, emc/priors) and a featured one
(`LogLinearBlock`: a gradient M-step over the weights of its log-linear model, a dense table's
FeaturedBlock (features.py) or a sparse pair table's PairFeaturedBlock (pair_features.py), which
both answer `maximize`, `penalty`, `initial_weights` and `probabilities`). Each table's block is chosen once, when the
parameter layout is built (emc/runtime/params.py) and its features attached
(emc/runtime/problem.py); the M-step (emc/runtime/mstep.py) asks every table's block alike.

`t` below is the block's TableLayout (emc/runtime/params.py), `params` a ParamState: this module
imports neither, as params.py builds the blocks.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from emc.priors import Prior


@dataclass(frozen=True)
class Block:
    """A fixed table (read from a file) or a fixed weight: never re-estimated, no prior term."""

    prior: Prior = Prior()  # the spec's (a learned block's own; kept here so every table has one)

    @property
    def model(self) -> Any:
        """A featured block's log-linear model (None for the other kinds)."""
        return None

    def with_prior(self, prior: Prior) -> "Block":
        """The block under the command line's --smooth / --prior (which only a plain block takes:
        a featured block is regularised by its l2 penalty, and the fit refuses the flags for it)."""
        return self

    def maximize(self, t, counts: np.ndarray, previous, theta: np.ndarray, iterations: int | None) -> np.ndarray | None:
        """Write the table's new parameters into its entries of `theta` (which may be `counts`
        itself: the counts are read first) from its expected counts and the previous parameters;
        return a featured block's new feature weights (None for the other kinds). `iterations`
        caps a featured block's optimiser (None: its own budget)."""
        theta[t.entries] = previous.table_weights(t)
        return None

    def log_prior(self, t, params, weights: Callable[[], np.ndarray]) -> float | None:
        """The table's term of the MAP objective (up to a constant), None when it adds nothing.
        `weights()` materialises every entry's weight (asked for only when a term needs it)."""
        return None

    def start(self, t, params) -> None:
        """Finish the drawn start parameters for this table (in place)."""

    def online_pseudo_count(self, t, algorithm: str) -> float:
        """What the online variants add to every entry's statistic, lazily (emc/runtime/online.py)."""
        return self.prior.online_pseudo_count(t.name, algorithm)

    def vb_alpha(self, t, default: float) -> float:
        """The Dirichlet parameter of the table's rows under variational Bayes (`default`: --vb-alpha)."""
        return self.prior.vb_alpha(default, t.name)

    def objective_term(self, t) -> str | None:
        """What the block adds to the objective, in words (None: nothing)."""
        return None


@dataclass(frozen=True)
class PlainBlock(Block):
    """A learned block of free probabilities: its prior owns the M-step and the log prior."""

    def with_prior(self, prior: Prior) -> "Block":
        return replace(self, prior=prior)

    def maximize(self, t, counts: np.ndarray, previous, theta: np.ndarray, iterations: int | None) -> np.ndarray | None:
        start = previous.table_weights(t) if self.prior.WARM_STARTED else None
        self.prior.maximize(counts[t.entries], t.entry_rows, t.rows, out=theta[t.entries], start=start)
        return None

    def log_prior(self, t, params, weights: Callable[[], np.ndarray]) -> float | None:
        if self.prior.uniform:
            return None
        return self.prior.log_prior(weights()[t.entries])

    def objective_term(self, t) -> str | None:
        prior = self.prior
        if prior.uniform:
            return None
        weight = prior.smoothing + (prior.alpha - 1.0 if prior.KIND == "dirichlet" else 0.0)
        parts = [f"{weight:g} * sum log p"] if weight else []
        if prior.KIND == "sparse":
            parts.append(f"{prior.alpha:g} * sum exp(-p / {prior.beta:g}), up to {prior.alpha:g} an entry, "
                         f"so the objective can be positive")
        return f"{t.name} ({prior.describe()}): {' + '.join(parts)}" if parts else None


@dataclass(frozen=True)
class LogLinearBlock(Block):
    """A featured learned block, whose rows are log-linear in features of its outcomes:
    `loglinear` is its model (features.py's FeaturedBlock or pair_features.py's
    PairFeaturedBlock). Its entries in theta are always the probabilities its weights give."""

    loglinear: Any = None

    @property
    def model(self) -> Any:
        return self.loglinear

    def maximize(self, t, counts: np.ndarray, previous, theta: np.ndarray, iterations: int | None) -> np.ndarray | None:
        """The gradient M-step, warm-started from the previous weights."""
        start = previous.features.get(t.name)
        if start is None:
            start = np.zeros(self.loglinear.weight_shape)
        # the counts are read before theta, which may be the same array, is written
        return self.loglinear.maximize(t.values(counts), start, iterations, probabilities=t.values(theta))

    def log_prior(self, t, params, weights: Callable[[], np.ndarray]) -> float | None:
        """Minus the l2 penalty of its feature weights."""
        if t.name not in params.features:
            return None
        return -self.loglinear.penalty(params.features[t.name])

    def start(self, t, params) -> None:
        """Start weights from the table's starting probabilities. With the identity feature they
        carry the start exactly on the outcomes seen in training, and the table is kept as drawn
        (as a plain block's: the first M-step moves the mass of unseen outcomes onto seen ones,
        which only raises the objective); without it the table becomes the projection's, so either
        way batch EM's objective never falls from the start."""
        weights = self.loglinear.initial_weights(t.values(params.theta).copy())
        params.features[t.name] = weights
        if self.loglinear.identity is None:
            self.loglinear.probabilities(weights, out=t.values(params.theta))

    def objective_term(self, t) -> str | None:
        return f"{t.name}: minus the l2 penalty of its feature weights"


def table_block(t, overrides: dict[str, Prior] | None) -> Block:
    """The table's block, under the command line's prior for it if there is one (`overrides`:
    table name -> Prior, the CLI's --smooth / --prior)."""
    return t.block.with_prior(overrides[t.name]) if overrides and t.name in overrides else t.block
