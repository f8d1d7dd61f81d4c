"""The priors a learned block can have, each owning what a fit asks of it (as pomegranate's
distributions own their from_summaries): the M-step of the block's rows from expected counts
(`maximize`), the term the MAP objective adds (`log_prior`), the pseudo-count the online variants
add lazily (`online_pseudo_count`) and the Dirichlet parameter of variational Bayes (`vb_alpha`).

Every prior carries the block's `smooth add(a)` amount, added to the counts before its own M-step.
A new prior is a subclass here with its KIND and ARGUMENTS, and an entry in KINDS: the spec, the
command line and saved runs then take it (emc/priors/text.py).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from emc.priors.normalize import normalize_table
from emc.priors.smoothed_l0 import maximize_table
from emc.spec.errors import EmcError


def _sum_log(p: np.ndarray) -> float:
    return float(np.log(np.maximum(p, 1e-300)).sum())


@dataclass(frozen=True)
class Prior:
    """No prior: each row is its expected counts normalised (maximum likelihood), or with
    `smooth add(a)` its counts plus a (MAP under a symmetric Dirichlet(1 + a)). A row with no
    counts and no prior mass becomes uniform."""

    smoothing: float = 0.0
    KIND: ClassVar[str] = "none"
    ARGUMENTS: ClassVar[tuple[str, ...]] = ()  # the spec's names of the prior's numbers, in order
    USAGE: ClassVar[str] = "none"  # how --prior writes it
    WARM_STARTED: ClassVar[bool] = False  # its M-step starts from the previous parameters (`start`)

    @property
    def arguments(self) -> tuple[float, ...]:
        return tuple(getattr(self, name) for name in self.ARGUMENTS)

    @property
    def uniform(self) -> bool:
        """No smoothing and no prior: the M-step is maximum likelihood and the log prior is 0."""
        return type(self) is Prior and not self.smoothing

    def with_smoothing(self, smoothing: float) -> "Prior":
        return replace(self, smoothing=smoothing)

    def maximize(self, counts: np.ndarray, local_rows: np.ndarray | None, rows: int, out: np.ndarray,
                 start: np.ndarray | None = None) -> np.ndarray:
        """The M-step of one table: its entries' expected counts and the row of each entry (None
        for a dense, outcome-major table) -> its parameters, in `out` (which may be `counts`).
        `start`: the table's previous parameters, which a WARM_STARTED prior's iterative M-step
        starts from (None: from the normalised counts); the closed-form ones ignore it."""
        np.add(counts, self.smoothing, out=out)
        return normalize_table(out, local_rows, rows, out=out)

    def log_prior(self, p: np.ndarray) -> float:
        """The term the MAP objective adds for one table's parameters (up to a constant), so that
        batch EM is monotone in log-likelihood + log prior."""
        return self.smoothing * _sum_log(p) if self.smoothing else 0.0

    def online_pseudo_count(self, block: str, algorithm: str) -> float:
        """What the online variants add to every entry's statistic, lazily (emc/runtime/online.py)."""
        return self.smoothing

    def vb_alpha(self, default: float, block: str) -> float:
        """The Dirichlet parameter of the block's rows under variational Bayes (`default` is
        --vb-alpha)."""
        return default + self.smoothing

    def describe(self) -> str:
        """As the spec writes it (for `emc info`), '' for no prior."""
        parts = [f"smooth add({self.smoothing:g})"] if self.smoothing else []
        if self.KIND != "none":
            parts.append(f"prior {self.KIND}({', '.join(f'{v:g}' for v in self.arguments)})")
        return ", ".join(parts)

    def text(self) -> str:
        """Exactly, in the spec's option syntax (read back by emc.priors.text.prior_from_text)."""
        return f"smooth add({self.smoothing!r}) prior {self.kind_text()}"

    def kind_text(self) -> str:
        """The prior without its smoothing, exactly: `none`, `dirichlet(2.0)`, `sparse(80.0, 0.05)`."""
        return self.KIND + (f"({', '.join(repr(v) for v in self.arguments)})" if self.ARGUMENTS else "")


@dataclass(frozen=True)
class Dirichlet(Prior):
    """`prior dirichlet(alpha)`: the MAP estimate under a symmetric Dirichlet(alpha), each row
    max(c + alpha - 1, 0) normalised."""

    alpha: float = 1.0
    KIND: ClassVar[str] = "dirichlet"
    ARGUMENTS: ClassVar[tuple[str, ...]] = ("alpha",)
    USAGE: ClassVar[str] = "dirichlet(A)"

    def maximize(self, counts: np.ndarray, local_rows: np.ndarray | None, rows: int, out: np.ndarray,
                 start: np.ndarray | None = None) -> np.ndarray:
        np.add(counts, self.smoothing, out=out)
        out += self.alpha - 1.0
        np.maximum(out, 0.0, out=out)
        return normalize_table(out, local_rows, rows, out=out)

    def log_prior(self, p: np.ndarray) -> float:
        return super().log_prior(p) + (self.alpha - 1.0) * _sum_log(p)

    def online_pseudo_count(self, block: str, algorithm: str) -> float:
        if self.alpha < 1.0:  # a negative pseudo-count: the clipping at 0 has no lazy form
            raise _lazy_refusal(self, block, algorithm)
        return self.smoothing + (self.alpha - 1.0)

    def vb_alpha(self, default: float, block: str) -> float:
        return self.alpha + self.smoothing


@dataclass(frozen=True)
class SmoothedL0(Prior):
    """`prior sparse(alpha, beta)`: the smoothed-L0 prior of Vaswani, Pauls & Chiang (2010),
    alpha * sum exp(-p / beta), which drives small parameters to zero; the rows are solved by
    emc/priors/smoothed_l0.py (compiled projected gradient ascent from the previous parameters)."""

    alpha: float = 1.0
    beta: float = 1.0
    KIND: ClassVar[str] = "sparse"
    ARGUMENTS: ClassVar[tuple[str, ...]] = ("alpha", "beta")
    USAGE: ClassVar[str] = "sparse(ALPHA,BETA)"
    WARM_STARTED: ClassVar[bool] = True

    def maximize(self, counts: np.ndarray, local_rows: np.ndarray | None, rows: int, out: np.ndarray,
                 start: np.ndarray | None = None) -> np.ndarray:
        c = counts + self.smoothing if self.smoothing else counts
        return maximize_table(c, start, local_rows, rows, self.alpha, self.beta, out)

    def log_prior(self, p: np.ndarray) -> float:
        return super().log_prior(p) + self.alpha * float(np.exp(-p / self.beta).sum())

    def online_pseudo_count(self, block: str, algorithm: str) -> float:
        raise _lazy_refusal(self, block, algorithm)

    def vb_alpha(self, default: float, block: str) -> float:
        raise EmcError(f"--algorithm vb needs Dirichlet priors; block '{block}' has prior {self.KIND}")


def _lazy_refusal(prior: Prior, block: str, algorithm: str) -> EmcError:
    return EmcError(f"--algorithm {algorithm} updates the parameters lazily, which works for "
                    f"`smooth add(a)` and `prior dirichlet(alpha >= 1)` only; block '{block}' has "
                    f"prior {prior.KIND}: use --algorithm batch, hard, annealed or vb")


# The priors by the name the spec, --prior and saved runs give them.
KINDS: dict[str, type[Prior]] = {cls.KIND: cls for cls in (Prior, Dirichlet, SmoothedL0)}
