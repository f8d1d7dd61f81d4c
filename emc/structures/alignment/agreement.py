"""Alignment by agreement (Liang, Taskar & Klein 2006): a source->target model and a
target->source model trained jointly.

Each E-step computes both models' link posteriors, P1(a_j = i) of the forward model and
P2(b_i = j) of the reverse one, and uses their product q(i, j) = P1 * P2 as the expected count of
link (i, j) in both models' link blocks. Each model keeps its own posterior of NULL links (the
default of the Berkeley aligner) and its own expected jumps (the HMM aligner's transitions).
The product is not a distribution, so the M-step's normalisation is what turns it back into
parameters; the objective printed is the sum of the two models' log-likelihoods, which agreement
training does not promise to increase.

Decoding an agreement run keeps the links whose product posterior is at least a threshold (0.5).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numba import njit, types

from emc.codegen.abi import COUNTS, INTS, LAYOUT, META
from emc.runtime.checkpoint import PARAM_FIELDS
from emc.runtime.executor import LocalExecutor
from emc.runtime.fit import FitResult, FitState, check_log_z, example_weights
from emc.runtime.initialize import initial_params
from emc.runtime.mstep import maximize
from emc.runtime.params import ParamState
from emc.runtime.job import Interrupted
from emc.runtime.problem import Problem
from emc.spec.errors import EmcError
from emc.structures.alignment import LINK, REVERSE, slot_tables
from emc.structures.semiring import SUM

THRESHOLD = 0.5


@dataclass
class Direction:
    """One model of the pair: its problem (the reverse one reads the bitext swapped) and executor."""

    problem: Problem
    executor: LocalExecutor

    @property
    def null(self) -> int:
        return int(self.problem.args["null"])

    def posteriors(self, params: ParamState, examples: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """Per pair, P(a_j = i) as a (target words x source positions, NULL last) matrix; log Z."""
        flat, log_z = self.executor.posterior(params, examples)
        check_log_z(self.problem, examples, log_z)
        lengths = self.problem.model.data.decoded_length(self.problem.corpus, self.problem.model.checked)[examples]
        return [p.reshape(m, -1) for p, m in zip(flat, lengths)], log_z


def product_posteriors(forward: np.ndarray, reverse: np.ndarray, null_forward: int) -> np.ndarray:
    """q(i, j) = P1(a_j = i) P2(b_i = j) as a (target words x source words) matrix, from the
    forward posteriors (m x l [+ NULL]) and the reverse ones (l x m [+ NULL]; the reverse NULL
    column falls outside the first m)."""
    m, l = forward.shape[0], forward.shape[1] - null_forward
    return forward[:, :l] * reverse[:, :m].T


def agreed_links(q: np.ndarray, threshold: float) -> set[tuple[int, int]]:
    """(source, target) links whose product posterior q[j, i] is at least the threshold."""
    return {(int(i), int(j)) for j, i in zip(*np.nonzero(q >= threshold))}


def _link_counts(direction: Direction, params: ParamState, weights: np.ndarray, own: list[np.ndarray],
                 other: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray | None]:
    """One model's expected counts: its own E-step for every block but the link blocks, whose
    counts come from the product posteriors (its own NULL posteriors kept). Returns (counts, the
    E-step's log Z, None when no E-step was needed)."""
    p = direction.problem
    examples = np.arange(p.n_examples)
    log_z = None
    if any(f.kind == "learned" and f.slot != LINK for f in p.model.checked.factors):
        # Only those blocks' counts (the HMM's jumps) need the DP's E-step; for IBM 1 it would
        # run the posteriors' DP a second time for nothing.
        result = direction.executor.estep(params, examples, SUM, weights)
        counts, log_z = result.counts, result.log_z
        for name in slot_tables(p.model.checked.factors, LINK):
            counts[p.layout.table(name).entries] = 0.0
    else:
        counts = np.zeros(p.layout.size)
    (own_flat, own_shapes), (other_flat, other_shapes) = _packed(own), _packed(other)
    _add_product_counts(p.model.module.link_counts_example, own_flat, own_shapes, other_flat, other_shapes,
                        np.ascontiguousarray(weights, np.float64), p.ints, p.array_bounds, p.meta,
                        (counts, np.zeros(0, np.uint8), np.zeros(0, np.int64)))
    return counts, log_z


def _packed(matrices: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The matrices' entries end to end, row by row, and each one's shape."""
    shapes = np.array([a.shape for a in matrices], np.int64).reshape(-1, 2)
    return np.concatenate([a.ravel() for a in matrices]) if matrices else np.zeros(0), shapes


LINK_COUNTS_FUNCTION = types.FunctionType(types.void(types.int64, INTS, LAYOUT, META, types.float64[:, ::1],
                                                     types.float64, COUNTS))
_I64x2 = types.int64[:, ::1]
_F64 = types.float64[::1]


@njit(types.void(LINK_COUNTS_FUNCTION, _F64, _I64x2, _F64, _I64x2, _F64, INTS, LAYOUT, META, COUNTS), cache=True)
def _add_product_counts(link_counts, own, own_shapes, other, other_shapes, weights, ints, layout, meta, counts):
    """The generated link_counts_example on each pair's merged posteriors: at [i, j],
    own[j, i] * other[i, j] for a source word i, own[j, i] for NULL. Serial, in pair order, so the
    counts are summed in one fixed order whatever the thread count. (It was a Python loop over
    the pairs, which cost more than the DP.)"""
    own_at, other_at = 0, 0
    for ex in range(own_shapes.shape[0]):
        m, width = own_shapes[ex, 0], own_shapes[ex, 1]
        l, other_width = other_shapes[ex, 0], other_shapes[ex, 1]
        merged = np.empty((width, m))
        for i in range(width):
            for j in range(m):
                q = own[own_at + j * width + i]
                if i < l:
                    q *= other[other_at + i * other_width + j]
                merged[i, j] = q
        link_counts(ex, ints, layout, meta, merged, weights[ex], counts)
        own_at += m * width
        other_at += l * other_width


def fit_jointly(job) -> int:
    """`emc fit SPEC BITEXT --agree`: batch EM on both directions with the agreement E-step;
    saves the forward model to RUN and the reverse one to RUN/reverse. RUN's checkpoint holds
    both models after each iteration (the reverse one in the state's extra), so `--resume RUN`
    continues the joint fit."""
    settings = job.settings
    if settings.algorithm != "batch":
        raise EmcError(f"--agree trains with batch EM; --algorithm {settings.algorithm} is not supported with it")
    if job.init_run:
        raise EmcError("--agree starts from its own initialisation (--init random, uniform or ibm1), not a saved run")
    reverse_options = {**job.options, "reverse": True}
    directions = []
    for options in (job.options, reverse_options):
        problem, _ = job.bind(options)
        directions.append(Direction(problem, job.executor(problem)))
    forward, reverse = directions
    if forward.problem.n_examples != reverse.problem.n_examples:
        raise EmcError("the two directions kept different sentence pairs")
    rng = np.random.default_rng(settings.seed)
    params = [initial_params(d.problem, settings, d.executor, rng) for d in directions]
    weights = [example_weights(d.problem, settings) for d in directions]
    examples = np.arange(forward.problem.n_examples)
    gold = forward.problem.corpus.gold.get("links")
    state = job.saved_state(job.out) or FitState(params=params[0], rng=rng)
    if state.step:
        params = _both_params(state)
    checkpointer = job.checkpointer(job.out)
    started = time.perf_counter() - (state.history[-1]["seconds_total"] if state.history else 0.0)
    try:
        while not state.converged and state.step < settings.iterations:
            t0 = time.perf_counter()
            (post_f, log_z_f), (post_r, log_z_r) = [d.posteriors(p, examples) for d, p in zip(directions, params)]
            counts_f = _link_counts(forward, params[0], weights[0], post_f, post_r)[0]
            counts_r = _link_counts(reverse, params[1], weights[1], post_r, post_f)[0]
            previous = state.objective
            objective = float(weights[0] @ log_z_f + weights[1] @ log_z_r)
            params = [maximize(forward.problem.layout, counts_f, params[0], settings.regularizers),
                      maximize(reverse.problem.layout, counts_r, params[1], settings.regularizers)]
            elapsed = time.perf_counter() - t0
            change = None if previous is None else (objective - previous) / max(abs(previous), 1e-300)
            record = {"iteration": state.step + 1, "objective": objective, "change": change, "seconds": elapsed,
                      "seconds_total": time.perf_counter() - started,
                      "examples_per_second": len(examples) / max(elapsed, 1e-9)}
            if gold is not None and settings.eval_every and record["iteration"] % settings.eval_every == 0:
                record["metrics"] = _scores(directions, [post_f, post_r], gold)
            state = FitState(params=params[0], rng=rng, step=state.step + 1, objective=objective,
                             converged=change is not None and settings.tolerance > 0 and abs(change) < settings.tolerance,
                             history=state.history + [record],
                             extra={f"reverse_{k}": v for k, v in zip(PARAM_FIELDS, params[1].abi())})
            job.observer(record)
            if checkpointer:
                checkpointer(state)
    except KeyboardInterrupt:
        if job.out is None or not state.step:
            raise Interrupted("interrupted before the first iteration finished; nothing to save") from None
        for d, p, options, out in _outputs(job, directions, _both_params(state), reverse_options):
            job.save(d.problem, FitResult(p, state.objective, state.history, {}), out, options)
        raise job.interrupted(job.out, state.step) from None
    objective, history = state.objective, state.history
    metrics = {}
    if gold is not None:  # the final parameters' posteriors serve only to score them
        metrics = _scores(directions, [d.posteriors(p, examples)[0] for d, p in zip(directions, params)], gold)
    for d, p, options, out in _outputs(job, directions, params, reverse_options):
        job.save(d.problem, FitResult(p, objective, history, metrics if d is forward else {}), out, options)
    return 0


def _both_params(state: FitState) -> list[ParamState]:
    """The forward and reverse parameters of a checkpointed state (the reverse ones ride in extra)."""
    return [state.params, ParamState(*(state.extra[f"reverse_{k}"] for k in PARAM_FIELDS))]


def _outputs(job, directions: list[Direction], params: list[ParamState], reverse_options: dict):
    """(direction, its parameters, its options, its folder): the forward model in RUN, the reverse one
    in RUN/reverse."""
    return zip(directions, params, (job.options, reverse_options),
               (job.out, job.out / REVERSE if job.out else None))


def _scores(directions: list[Direction], post: list[list[np.ndarray]], gold) -> dict[str, float]:
    from emc.eval.alignment import alignment_scores

    forward, reverse = directions
    links = [agreed_links(product_posteriors(f, r, forward.null), THRESHOLD) for f, r in zip(*post)]
    return alignment_scores(links, gold)
