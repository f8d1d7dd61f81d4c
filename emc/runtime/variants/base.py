"""What every variant shares: the full E-step and the batch M-step."""
from __future__ import annotations

import numpy as np

from emc.runtime.constraints import Projection
from emc.runtime.example_constraints import ExampleProjection, attach
from emc.runtime.sparsity import attach_sparsity
from emc.runtime.executor import EStepResult, LocalExecutor
from emc.runtime.state import FitState, Objective, check_log_z, example_weights
from emc.runtime.mstep import maximize
from emc.runtime.params import ParamState
from emc.runtime.problem import Problem
from emc.runtime.settings import PROJECTING, FitSettings, choice_problem
from emc.spec.errors import EmcError
from emc.structures.semiring import SUM

# An online pass runs slice by slice so that progress can be shown, and each slice is a call into
# compiled code (its arguments unboxed, its caches cold again): about 0.5 ms, 8% of a stepwise pass
# on CoNLL-2000 (11k sentences) in 50 slices. Passes of fewer than MAX_SLICES * SLICE_EXAMPLES
# examples take fewer slices, but never fewer than MIN_SLICES: a featured block's M-step runs at
# slice ends, FEATURED_MSTEPS_PER_PASS (10) times a pass (emc/runtime/variants/online_state.py).
SLICE_EXAMPLES = 1000
CORPUS_DUALS = "constraint_duals"  # the corpus-level constraints' lambda in a fit's state.extra
MIN_SLICES, MAX_SLICES = 10, 50


class Variant:
    name = ""
    paper = ""
    converges = True  # relative-objective convergence applies
    weighs_start = False  # the start counts as statistics (online_state.statistics_state): see init_noise
    # why the variant cannot fit featured blocks (emc/runtime/blocks/features.py), or None when it can
    refuses_features: str | None = None
    # whether each full E-step's posterior is projected onto the spec's constraints (emc/runtime/constraints.py)
    projects = False

    def __init__(self, problem: Problem, executor: LocalExecutor, settings: FitSettings):
        # progress(done, total) inside a long pass (online variants report it per slice)
        self.progress = None
        self.problem = problem
        self.executor = executor
        self.settings = settings
        self.all = np.arange(problem.n_examples, dtype=np.int64)
        self.weights = example_weights(problem, settings)
        self.objective = Objective(problem, settings)
        featured = [t.name for t in problem.layout.featured()]
        if featured and self.refuses_features:
            raise EmcError(f"--algorithm {self.name} cannot fit featured blocks ({', '.join(featured)}): "
                           f"{self.refuses_features}")
        bad_choice = choice_problem(settings)  # a programmatic fit may not have validated its settings
        if bad_choice is not None:
            raise EmcError(bad_choice)
        # the constraint tables' entries: they hold the projection's shifts, never statistics
        self.constraint_entries = np.concatenate(
            [np.arange(t.size) + t.offset for t in problem.layout.tables if t.kind == "constraint"] or [[]]
        ).astype(np.int64)
        self.projection = self._projection(problem, settings)
        self.example_projection = self._example_projection(problem, executor, settings)
        self.sparsity = attach_sparsity(self, problem, executor, settings)  # posterior sparsity (E[max z per x])
        overridden = sorted(set(featured) & set(settings.regularizers))
        if overridden:
            raise EmcError(f"--smooth/--prior {overridden[0]}: a featured block is regularised by its l2(kappa) "
                           "in the spec, not by smoothing or a prior")

    def _projection(self, problem: Problem, settings: FitSettings) -> Projection | None:
        """The projection onto the spec's constraints, or None (none, or --constraints off)."""
        constrained = [f.name for f in problem.model.checked.factors if f.kind == "constraint"]
        if not constrained or settings.constraints == "off":
            return None
        if not self.projects:
            raise EmcError(f"--algorithm {self.name} does not project posteriors onto the spec's constraints "
                           f"({', '.join(constrained)}): use {PROJECTING}, or --constraints off")
        return Projection(problem, settings.constraint_esteps)

    def _example_projection(self, problem: Problem, executor, settings: FitSettings) -> ExampleProjection | None:
        """The executor set to project each example's posterior onto the spec's per-example
        constraint, or None (none, or --constraints off)."""
        symmetric = problem.model.checked.symmetric
        if symmetric is not None and settings.constraints != "off":
            raise EmcError(f"constraint '{symmetric.name}' ties the alignment's two directions: `emc fit` trains both "
                           f"together (not with --forward-only or --reverse), or fit one with --constraints off")
        constrained = [c.name for c in problem.model.checked.example_constraints]
        if constrained and settings.constraints != "off" and not self.projects:
            raise EmcError(f"--algorithm {self.name} cannot project onto the per-example constraint '{constrained[0]}' "
                           f"(it does not use posteriors): use {PROJECTING}, or --constraints off")
        return attach(executor, problem, settings)

    def constraint_record(self) -> dict:
        """What the latest projection did, for the iteration's record (nothing without constraints)."""
        record = dict(self.projection.last) if self.projection is not None else {}
        if self.example_projection is not None:
            record.update(self.example_projection.last)
        if self.sparsity is not None:
            record.update(self.sparsity.last)
        return record

    @property
    def projecting(self) -> bool:
        """Whether E-steps are projected onto the spec's constraints, or a constraint's table rides in
        theta (held at 1 with --constraints off): the online variants' compiled passes would then
        lack the duals, or re-estimate that table, so they fold in online_estep's counts instead."""
        return any(p is not None for p in (self.projection, self.example_projection, self.sparsity)) or \
            bool(self.constraint_entries.size)

    def projected_estep(self, state: FitState, params: ParamState | None = None) -> tuple[EStepResult, float]:
        """full_estep (of `params`, default the state's) with the projections' duals taken from the
        state and left there, so a checkpoint holds them and a resumed fit continues exactly."""
        self.resume_duals(state)
        result = self.full_estep(state.params if params is None else params)
        self.keep_duals(state)
        return result

    def resume_duals(self, state: FitState) -> None:
        """The projections' duals from the state (a resumed fit's checkpoint), when it holds them."""
        if self.projection is not None and CORPUS_DUALS in state.extra:
            self.projection.lam = np.array(state.extra[CORPUS_DUALS], np.float64)
        for projection in (self.example_projection, self.sparsity):
            if projection is not None:
                projection.resume(state.extra)

    def keep_duals(self, state: FitState) -> None:
        """The projections' duals into the state, so a checkpoint holds them."""
        if self.projection is not None:
            state.extra[CORPUS_DUALS] = self.projection.lam
        for projection in (self.example_projection, self.sparsity):
            if projection is not None:
                projection.keep(state.extra)

    def start(self, state: FitState) -> None:
        pass

    def finished(self, state: FitState) -> bool:
        return state.converged or state.step >= self.settings.iterations

    def full_estep(self, params: ParamState, semiring: int = SUM, examples: np.ndarray | None = None) -> tuple[EStepResult, float]:
        examples = self.all if examples is None else examples

        def run(current: ParamState) -> tuple[EStepResult, float]:
            result = self.executor.estep(current, examples, semiring, self.weights[examples])
            return result, self.objective(current, examples, result.log_z, self.weights[examples])

        return self._projected(params, run, examples) if semiring == SUM else run(params)

    def _projected(self, params: ParamState, run, examples: np.ndarray) -> tuple[EStepResult, float]:
        """`run(params)`, one E-step (result, objective) of `examples`, projected onto the spec's
        constraints (as it is without them)."""
        if self.projection is not None:
            return self.projection.estep(params, run)
        if self.sparsity is not None:
            return self.sparsity.estep(params, run, examples)
        return run(params)

    def online_estep(self, params: ParamState, examples: np.ndarray) -> tuple[np.ndarray, float]:
        """An online variant's E-step of a mini-batch or block through the executor, projected onto
        the spec's constraints: its dense expected counts, without the constraint tables' entries
        (their shifts are no statistics), and the sum of its weighted log Z (the projection's dual)."""
        weights = self.weights[examples]

        def run(current: ParamState) -> tuple[EStepResult, float]:
            result = self.executor.estep(current, examples, SUM, weights)
            check_log_z(self.problem, examples, result.log_z)
            return result, float(np.sum(weights * result.log_z))

        result, log_likelihood = self._projected(params, run, examples)
        counts = np.require(result.counts, np.float64, ["C", "W"])  # the update consumes them
        counts[self.constraint_entries] = 0.0
        return counts, log_likelihood

    def mstep(self, counts: np.ndarray, params: ParamState) -> ParamState:
        """The M-step; it consumes `counts` (an E-step's, used once) for the new parameters."""
        return maximize(self.problem.layout, counts, params, self.settings.regularizers, out=counts,
                        featured_iterations=self.settings.mstep_iterations)

    def final_objective(self, state: FitState) -> float:
        return self.full_estep(state.params)[1]

    @staticmethod
    def slice_size(n: int, multiple: int = 1) -> int:
        """The length of the slices `slices` cuts a pass of n examples into: SLICE_EXAMPLES a
        slice, and between MIN_SLICES and MAX_SLICES slices a pass."""
        slices = min(MAX_SLICES, max(MIN_SLICES, n // SLICE_EXAMPLES))
        return max(multiple, (n // slices) // multiple * multiple)

    @classmethod
    def slice_count(cls, n: int, multiple: int = 1) -> int:
        """How many slices `slices` cuts a pass of n examples into."""
        return -(-n // cls.slice_size(n, multiple))

    def slices(self, order: np.ndarray, multiple: int = 1):
        """The examples of a pass in 10 to 50 slices (a multiple of `multiple` long), reporting
        progress after each; the kernels run slice by slice with identical results."""
        n = len(order)
        size = self.slice_size(n, multiple)
        for start in range(0, n, size):
            yield start, order[start:start + size]
            if self.progress:
                self.progress(min(start + size, n), n)
