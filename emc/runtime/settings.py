"""Everything that configures a fit, with its default; `emc fit --help` is written from these."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any



@dataclass
class FitSettings:
    algorithm: str = "batch"
    iterations: int = 100  # batch-style variants: at most this many iterations
    passes: int = 10  # online variants: passes over the data
    tolerance: float = 1e-6  # stop when the relative objective change falls below this (0: never)
    seed: int = 1
    init: str = "default"  # default | random | uniform | labeled | a structure's own; see emc.runtime.initialize
    # initial rows proportional to 1 + init_noise * U(0, 1); None: 1, or for the online variants the
    # structure's ONLINE_INIT_NOISE (see emc/runtime/initialize.py)
    init_noise: float | None = None
    threads: int = 0  # 0: numba's default (all cores)
    eval_every: int = 1  # evaluate against gold every N iterations / passes (0: only at the end)
    # online EM (Liang & Klein 2009)
    alpha: float = 0.7  # stepwise step size eta_k = (k + 2) ^ -alpha, 0.5 < alpha <= 1
    batch_size: int = 1  # stepwise: examples per mini-batch (m)
    block_size: int = 64  # incremental: examples per block of kept statistics (1: one per example)
    # what the start weighs as online statistics: "entry" (one pseudo-count per entry) or "row" (one
    # per row); None: the structure's ONLINE_START_MASS, else "entry" (see variants/online_state.py)
    start_mass: str | None = None
    # annealing (Smith & Eisner 2004)
    beta_min: float = 1e-4
    beta_factor: float = 1.2
    anneal_tolerance: float = 1e-4  # a temperature is done when the objective changes less than this
    # variational Bayes: the Dirichlet parameter of blocks without `prior dirichlet(a)`
    vb_alpha: float = 0.1
    # semi-supervised EM (Nigam et al. 2000)
    labeled_weight: float = 1.0
    unlabeled_weight: float = 1.0  # lambda
    restarts: int = 1
    # stochastic EM: posterior samples per example, growing by samples_growth each iteration
    samples: int = 10
    samples_growth: float = 1.0
    # per-block regularisation overriding the spec: table name -> (smoothing, Prior | None)
    regularizers: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """A short label of the algorithm and the settings that matter for it (for plots)."""
        extra = {
            "stepwise": f" alpha={self.alpha:g} m={self.batch_size}",
            "incremental": f" blocks of {self.block_size}",
            "annealed": f" beta_min={self.beta_min:g} x{self.beta_factor:g}",
            "skewed": f" beta_min={self.beta_min:g} x{self.beta_factor:g}",
            "vb": f" alpha={self.vb_alpha:g}",
            "stochastic": f" S={self.samples}" + (f" x{self.samples_growth:g}" if self.samples_growth != 1.0 else ""),
        }.get(self.algorithm, "")
        return f"{self.algorithm}{extra} seed={self.seed}"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["regularizers"] = {name: [s, None if p is None else asdict(p)] for name, (s, p) in self.regularizers.items()}
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> "FitSettings":
        from emc.spec.check import Prior

        known = {f.name for f in fields(FitSettings)}
        values = {k: v for k, v in data.items() if k in known}
        values["regularizers"] = {name: (s, None if p is None else Prior(**p))
                                  for name, (s, p) in data.get("regularizers", {}).items()}
        return FitSettings(**values)
