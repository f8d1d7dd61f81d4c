"""What a fit carries from step to step, and the objective it climbs: shared by the driver
(fit.py), every variant (variants/) and the structures' own fit modes (modes/), so none of them
imports another to get at it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from emc.runtime.mstep import log_prior
from emc.runtime.params import ParamState
from emc.runtime.problem import Problem
from emc.runtime.settings import FitSettings
from emc.spec.errors import EmcError


class Interrupted(EmcError):
    """Ctrl-C during a fit: the model so far is saved and the fit can be resumed."""


class FitError(EmcError):
    """EM met something it cannot continue from (an impossible example, a NaN)."""


@dataclass
class FitState:
    """Everything needed to continue a fit exactly where it stopped (see emc.runtime.checkpoint)."""

    params: ParamState
    rng: np.random.Generator
    step: int = 0  # iterations (batch-style) or passes (online) done
    objective: float | None = None
    converged: bool = False
    history: list[dict] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # the variant's own state


@dataclass
class FitResult:
    params: ParamState
    objective: float
    history: list[dict]
    metrics: dict[str, float]


def example_weights(problem: Problem, settings: FitSettings) -> np.ndarray:
    """Per-example weight of the expected counts: labeled examples --labeled-weight, unlabeled
    ones lambda (--unlabeled-weight), as in Nigam et al. (2000)."""
    mask = problem.corpus.labeled_mask
    if mask is None:
        return np.full(problem.n_examples, settings.unlabeled_weight)
    return np.where(mask, settings.labeled_weight, settings.unlabeled_weight).astype(np.float64)


def check_log_z(problem: Problem, examples: np.ndarray, log_z: np.ndarray) -> None:
    bad = np.flatnonzero(~np.isfinite(log_z))
    if not len(bad):
        return
    q = bad[0]
    path, line = problem.corpus.location(int(examples[q]))
    reason = ("is NaN: the parameters hold a NaN or an infinity" if np.isnan(log_z[q]) else
              "has probability 0 under the model: every structure is ruled out (by a tag dictionary, a "
              "labeled structure that the model forbids, or parameters that are exactly 0)")
    more = f" ({len(bad) - 1} more examples like it)" if len(bad) > 1 else ""
    raise FitError(f"{path}:{line}: error: the example on this line {reason}{more}")


class Objective:
    """The objective of a batch of examples: weighted log Z plus the log prior (MAP)."""

    def __init__(self, problem: Problem, settings: FitSettings):
        self.problem = problem
        self.settings = settings

    def __call__(self, params: ParamState, examples: np.ndarray, log_z: np.ndarray, weights: np.ndarray) -> float:
        check_log_z(self.problem, examples, log_z)
        # not np.dot: past 10,000 examples OpenBLAS spreads a dot product over its threads, whose
        # wake-up cost a batch iteration 55 ms on a machine with a busy core (CoNLL-2000 train+test)
        return float(np.sum(weights * log_z)) + log_prior(self.problem.layout, params, self.settings.regularizers)
