"""EM variants, each written once against the executor (E-step) and the M-step.

A variant implements:
    start(state)            set up its own state in state.extra
    step(state) -> record   one iteration (batch-style) or one pass (online); updates
                            state.params and returns at least {"objective": ...}
    finished(state)         whether to stop
    final_objective(state)  the objective of the final parameters
and says whether relative-objective convergence applies (`converges`).

A new variant touches four files: its module here, its entry in VARIANTS, the FitSettings fields of
its options (emc/runtime/settings.py: each field's `option` metadata names the variants reading
it, and the CLI's flags and help come from there), and its line in emc/cli.py's ALGORITHM_HELP.
"""
from __future__ import annotations

from emc.runtime.variants.annealed import Annealed, Skewed
from emc.runtime.variants.base import Variant
from emc.runtime.variants.batch import Batch
from emc.runtime.variants.hard import Hard
from emc.runtime.variants.incremental import Incremental
from emc.runtime.variants.stepwise import Stepwise
from emc.runtime.variants.stochastic import Stochastic
from emc.runtime.variants.vb import VariationalBayes

VARIANTS: dict[str, type[Variant]] = {
    v.name: v for v in (Batch, Incremental, Stepwise, Hard, Annealed, Skewed, VariationalBayes, Stochastic)}


def make_variant(name: str, problem, executor, settings) -> Variant:
    from emc.runtime.settings import algorithm_problem
    from emc.spec.errors import EmcError

    problem_text = algorithm_problem(name)
    if problem_text is not None:
        raise EmcError(problem_text)
    return VARIANTS[name](problem, executor, settings)
