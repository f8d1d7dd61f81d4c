"""Variational Bayes EM (mean field; Beal 2003; Johnson 2007 for POS induction).

Each learned row has a Dirichlet prior: the block's `prior dirichlet(alpha)`, else --vb-alpha. The
variational posterior of a row is Dirichlet(alpha + expected counts), and the E-step uses the
sub-normalised weights exp(digamma(alpha + c) - digamma(sum(alpha + c))). The objective is the
evidence lower bound, sum_x log Z(weights) - sum_rows KL(Dirichlet(alpha + c) || Dirichlet(alpha)),
which never decreases (from the second iteration: the first weights are the initial parameters).
"""
from __future__ import annotations

import numpy as np

from emc.runtime.blocks.block import table_block
from emc.runtime.state import FitState
from emc.runtime.params import ParamState
from emc.runtime.special import digamma, gammaln
from emc.runtime.variants.base import Variant


class VariationalBayes(Variant):
    projects = True
    name = "vb"
    paper = "Beal 2003; Johnson 2007"
    refuses_features = ("variational Bayes needs a Dirichlet posterior per row, and a log-linear row has "
                        "none; use batch, hard, annealed or skewed EM")

    def prior(self) -> np.ndarray:
        """The Dirichlet parameter of every entry (0 for fixed tables)."""
        layout = self.problem.layout
        alpha = np.zeros(layout.size)
        for t in layout.learned():
            alpha[t.entries] = table_block(t, self.settings.regularizers).vb_alpha(t, self.settings.vb_alpha)
        return alpha

    def start(self, state: FitState) -> None:
        state.extra["alpha"] = self.prior()
        state.extra["kl"] = 0.0  # the initial weights are not a Dirichlet posterior: no KL term yet

    def step(self, state: FitState) -> dict:
        result, log_z = self.projected_estep(state)
        objective = log_z - state.extra["kl"]
        weights, kl = self.variational_weights(result.counts, state.extra["alpha"], state.params)
        state.params = weights
        state.extra["kl"] = kl
        return {"iteration": state.step + 1, "objective": objective, **self.constraint_record()}

    def variational_weights(self, counts: np.ndarray, alpha: np.ndarray, previous: ParamState) -> tuple[ParamState, float]:
        layout = self.problem.layout
        theta = previous.weights(layout)
        kl = 0.0
        for t in layout.learned():
            rows = t.local_rows()
            a = alpha[t.entries]
            post = a + counts[t.entries]
            total = np.bincount(rows, weights=post, minlength=t.rows)
            prior_total = np.bincount(rows, weights=a, minlength=t.rows)
            log_weight = digamma(post) - digamma(total)[rows]
            theta[t.entries] = np.exp(log_weight)
            used = prior_total > 0  # a sparse table's row may have no entries (and no KL term)
            kl += float(np.sum(gammaln(total[used]) - gammaln(prior_total[used]))
                        - np.sum(gammaln(post) - gammaln(a)) + np.sum((post - a) * log_weight))
        return ParamState.plain(theta, layout), kl

    def final_objective(self, state: FitState) -> float:
        return self.full_estep(state.params)[1] - state.extra["kl"]
