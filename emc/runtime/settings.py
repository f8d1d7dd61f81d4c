"""Everything that configures a fit, with its default, in one place: each field that `emc fit`
takes as a flag says so in its metadata (`option`: its help, and the EM variants that read it), and
the CLI's flags, their help and the algorithms' defaults in `emc fit --help` are written from these.

The options are listed here, not in each variant's module, so that every `emc` command can build
its parser without importing the variants (numba: about a second) and the variants can import
FitSettings without a cycle.
"""
from __future__ import annotations

import math
import os
import types
import typing
from dataclasses import Field, asdict, dataclass, field, fields
from typing import Any

from emc.priors import Prior
from emc.priors.text import saved_prior
from emc.spec.errors import EmcError

# The variants that run for --iterations, and the online ones that run for --passes.
BATCH_STYLE = ("batch", "hard", "annealed", "skewed", "vb", "stochastic")
ONLINE = ("stepwise", "incremental")
# the variants that project posteriors onto a spec's constraints (emc/runtime/constraints.py), for messages
PROJECTING = "batch, annealed, skewed, vb, stepwise or incremental"
# every --algorithm (emc/runtime/variants/__init__.py: VARIANTS has one variant for each)
ALGORITHMS = BATCH_STYLE + ONLINE
START_MASSES = ("entry", "row")


def option(help: str, *variants: str, metavar: str | None = None, choices: tuple[str, ...] | None = None) -> dict:
    """The metadata making a FitSettings field an `emc fit` flag: what it does, and the variants
    that read it (none: the driver, for every variant)."""
    return {"help": help, "variants": variants, "metavar": metavar, "choices": choices}


def _setting(default: Any, help: str, *variants: str, **flag: Any) -> Any:
    return field(default=default, metadata=option(help, *variants, **flag))


@dataclass
class FitSettings:
    algorithm: str = "batch"
    iterations: int = _setting(100, "maximum iterations (batch-style algorithms)", *BATCH_STYLE)
    passes: int = _setting(10, "passes over the data", *ONLINE)
    tolerance: float = _setting(1e-6, "stop when the objective's relative change is below this (0: run all iterations)")
    seed: int = _setting(1, "random seed (initialisation, shuffling)")
    init: str = _setting("default", "initial parameters: default (the structure's own choice, else random), random, "
                         "uniform, labeled (from the labeled examples alone), a structure's own (spantree: "
                         "random-split; deptree: harmonic), or a saved model's directory", metavar="NAME|RUN")
    # initial rows proportional to 1 + init_noise * U(0, 1); None: 1, or for the online variants the
    # structure's ONLINE_INIT_NOISE (see emc/runtime/initialize.py)
    init_noise: float | None = _setting(None, "initial rows ~ 1 + NOISE * U(0,1) (default 1; online algorithms: "
                                        "the structure's ONLINE_INIT_NOISE if it names one)")
    threads: int | None = _setting(None, "E-step threads (default: all cores)")
    eval_every: int = _setting(1, "with gold annotations, score every N iterations (0: only at the end)")
    # online EM (Liang & Klein 2009)
    alpha: float = _setting(0.7, "step size (k + 2)^-alpha, 0.5 < alpha <= 1", "stepwise")
    batch_size: int = _setting(1, "examples per mini-batch (m)", "stepwise")
    block_size: int = _setting(64, "examples per block of kept statistics (1: one block per example, the textbook "
                               "update; larger blocks take the batched E-step)", "incremental")
    # what the start weighs as online statistics (see variants/online_state.py)
    start_mass: str | None = _setting(None, "what the starting parameters weigh as statistics, one pseudo-count per "
                                      "entry or one per row (the data outweigh the start after one mini-batch); "
                                      "default: the structure's choice (its ONLINE_START_MASS), else entry",
                                      *ONLINE, choices=START_MASSES)
    # annealing (Smith & Eisner 2004)
    beta_min: float = _setting(1e-4, "the first inverse temperature", "annealed", "skewed")
    beta_factor: float = _setting(1.2, "beta grows by this factor", "annealed", "skewed")
    anneal_tolerance: float = _setting(1e-4, "relative objective change at which a temperature is done",
                                       "annealed", "skewed")
    vb_alpha: float = _setting(0.1, "Dirichlet parameter of blocks without `prior dirichlet(a)`", "vb")
    # semi-supervised EM (Nigam et al. 2000)
    labeled_weight: float = _setting(1.0, "semi-supervised: weight of the labeled examples' counts")
    unlabeled_weight: float = _setting(1.0, "semi-supervised: weight lambda of the unlabeled examples' counts "
                                       "(Nigam et al. 2000)")
    # featured blocks (emc/runtime/blocks/features.py; a pair table's, emc/runtime/blocks/pair_features.py)
    mstep_iterations: int | None = _setting(
        None, "featured blocks: at most N iterations of the gradient M-step's optimiser per M-step (default: 2 "
        "L-BFGS iterations per row, a pair table's 3 turns); a partial M-step is still a GEM step, and fewer "
        "iterations cost less (docs/writing-models.md measures both ways)", metavar="N")
    # posterior regularization (emc/runtime/constraints.py)
    constraints: str = _setting("on", "the spec's constraints on the posterior: on (each E-step's posterior is "
                                "projected onto them, a mini-batch's or block's by the online algorithms; every algorithm but hard "
                                "and stochastic) or off "
                                "(plain EM, for comparison)", choices=("on", "off"))
    constraint_esteps: int = _setting(20, "constraints: at most N E-steps per iteration to project the posterior "
                                      "(each one evaluation of the dual)", metavar="N")
    restarts: int = _setting(1, "run from this many seeds (seed, seed+1, ...) and keep the best training objective")
    samples: int = _setting(10, "posterior samples per example per iteration", "stochastic")
    samples_growth: float = _setting(1.0, "multiply the samples by G each iteration (1: fixed)", "stochastic",
                                     metavar="G")
    # per-block priors overriding the spec's: table name -> a Prior (emc/priors), or the text of
    # what --smooth / --prior replace in the spec's (emc.priors.text.prior_from_text), which
    # emc.runtime.job.resolve_regularizers turns into a Prior once the spec is known
    regularizers: dict[str, Prior | str] = field(default_factory=dict)

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

    def validate(self) -> None:
        """Refuses, with a one-line message naming the flag, a setting no fit can run with or that
        would never end (checked before the data are read: see `setting_problem`)."""
        problem = setting_problem(self)
        if problem is not None:
            raise EmcError(problem)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["regularizers"] = {name: p.text() if isinstance(p, Prior) else p for name, p in self.regularizers.items()}
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> "FitSettings":
        known = {f.name for f in fields(FitSettings)}
        values = {k: v for k, v in data.items() if k in known}
        values["regularizers"] = {name: saved_prior(p) for name, p in data.get("regularizers", {}).items()}
        return FitSettings(**values)


def fit_options() -> list[Field]:
    """The FitSettings fields `emc fit` takes as flags, in order."""
    return [f for f in fields(FitSettings) if "help" in f.metadata]


def variant_options(variant: str) -> list[Field]:
    """The options a variant reads besides the driver's."""
    return [f for f in fit_options() if variant in f.metadata["variants"]]


def option_type(f: Field) -> type:
    """The type of a setting's value (of `float | None`: float)."""
    hint = typing.get_type_hints(FitSettings)[f.name]
    if isinstance(hint, types.UnionType):
        return next(t for t in typing.get_args(hint) if t is not type(None))
    return hint


def _cores() -> int:
    """The E-step's most threads: numba's pool, one per core unless NUMBA_NUM_THREADS says less."""
    try:
        return int(os.environ.get("NUMBA_NUM_THREADS") or os.cpu_count() or 1)
    except ValueError:
        return os.cpu_count() or 1


def _bad_number(s: FitSettings) -> str | None:
    """The first setting outside the range every algorithm needs, as a message."""
    at_least = [("iterations", 0), ("passes", 0), ("seed", 0), ("eval_every", 0), ("restarts", 1), ("batch_size", 1),
                ("block_size", 1), ("samples", 1), ("constraint_esteps", 1)]
    for name, low in at_least:
        value = getattr(s, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            return f"{_flag(name)} {value}: give a whole number of at least {low}"
    finite = [("tolerance", 0.0), ("anneal_tolerance", 0.0), ("labeled_weight", 0.0), ("unlabeled_weight", 0.0),
              ("init_noise", 0.0), ("samples_growth", 1.0)]
    for name, low in finite:
        value = getattr(s, name)
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value >= low):
            return f"{_flag(name)} {value}: give a finite number of at least {low:g}"
    if not (isinstance(s.vb_alpha, (int, float)) and math.isfinite(s.vb_alpha) and s.vb_alpha > 0):
        return f"--vb-alpha {s.vb_alpha}: a Dirichlet parameter is a finite number above 0"
    if s.threads is not None and not (isinstance(s.threads, int) and 1 <= s.threads <= _cores()):
        return (f"--threads {s.threads}: give between 1 and {_cores()} (this machine's cores), or leave it out "
                f"to use them all")
    return None


# Deterministic annealing runs one stage per temperature, each for at most --iterations, so the
# number of temperatures from --beta-min to 1 bounds its work: a factor of 1.0000001 would take 92
# million stages. The defaults take 51; more than MAX_TEMPERATURES is refused with the factor that fits.
MAX_TEMPERATURES = 1000


def temperatures(beta_min: float, beta_factor: float) -> int:
    """How many temperatures below 1 annealing visits from beta_min, growing by beta_factor (more
    than MAX_TEMPERATURES: settings that never reach 1, which `annealing_problem` refuses)."""
    if not (0 < beta_min and beta_factor > 1):
        return MAX_TEMPERATURES + 1
    return math.ceil(math.log(1 / beta_min) / math.log(beta_factor) - 1e-9) if beta_min < 1 else 0


def annealing_problem(s: FitSettings) -> str | None:
    if not (isinstance(s.beta_min, (int, float)) and math.isfinite(s.beta_min) and 0 < s.beta_min <= 1):
        return f"--beta-min {s.beta_min}: the first inverse temperature must be above 0 and at most 1"
    if not (isinstance(s.beta_factor, (int, float)) and math.isfinite(s.beta_factor) and s.beta_factor > 1):
        return (f"--beta-factor {s.beta_factor}: beta must grow to reach 1 from --beta-min {s.beta_min:g}: give a "
                f"factor above 1 (default {FitSettings.beta_factor})")
    stages = temperatures(s.beta_min, s.beta_factor)
    if stages > MAX_TEMPERATURES:
        least = (1 / s.beta_min) ** (1 / MAX_TEMPERATURES)
        return (f"--beta-factor {s.beta_factor}: {stages} temperatures from --beta-min {s.beta_min:g} to 1 (each "
                f"up to --iterations {s.iterations}), more than {MAX_TEMPERATURES}; give a factor of at least "
                f"{least * 1.0001:.6g} or a larger --beta-min")
    return None


def algorithm_problem(name: Any) -> str | None:
    if name not in ALGORITHMS:
        return f"--algorithm {name}: unknown algorithm (choose from {', '.join(ALGORITHMS)})"
    return None


def choice_problem(s: FitSettings) -> str | None:
    """The first setting outside its choices, as a message (the CLI's parser checks the flags with
    choices itself; a programmatic fit does not pass through it)."""
    problem = algorithm_problem(s.algorithm)
    chosen = [(f.name, getattr(s, f.name), f.metadata["choices"]) for f in fit_options() if f.metadata["choices"]]
    for name, value, choices in chosen:
        if problem is None and value is not None and value not in choices:
            problem = f"{_flag(name)} {value}: choose from {', '.join(choices)}"
    budget = s.mstep_iterations
    if problem is None and budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 1):
        problem = f"--mstep-iterations {budget}: a featured block's M-step needs at least one iteration of its optimiser"
    return problem


def setting_problem(s: FitSettings) -> str | None:
    """What is wrong with the settings, as a message naming the flag (None: nothing). The CLI's
    `emc fit` and the Python API's `fit` both refuse with it, before reading the data."""
    problem = choice_problem(s) or _bad_number(s)
    if problem is None and s.algorithm in ("annealed", "skewed"):
        problem = annealing_problem(s)
    if problem is None and s.algorithm == "stepwise" and not (isinstance(s.alpha, (int, float)) and 0.5 < s.alpha <= 1):
        problem = f"--alpha {s.alpha}: stepwise EM needs 0.5 < alpha <= 1"
    return problem


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")
