"""Alignment by agreement (Liang, Taskar & Klein 2006): a source->target model and a
target->source model trained jointly.

Each E-step computes both models' link posteriors, P1(a_j = i) of the forward model and
P2(b_i = j) of the reverse one, and uses their product q(i, j) = P1 * P2 as the expected count of
link (i, j) in both models' link blocks. Each model keeps its own posterior of NULL links (the
default of the Berkeley aligner) and its own expected jumps (the HMM aligner's transitions).
The product is not a distribution, so the M-step's normalisation is what turns it back into
parameters; the objective printed is the sum of the two models' objectives (log-likelihood plus
log prior), which agreement training does not promise to increase. The fit runs in the shared EM
loop (emc.runtime.fit.run_steps: records, convergence, evaluation, checkpoints) with `Agreement`
as its variant.

With --workers / --scheduler the agreement E-step runs on a Dask cluster (emc/dist/executor.py):
one executor a direction, both cutting the pairs at the same bounds, so a pair's two shards live on
one worker, which computes both directions' link posteriors, their products' link counts and the
other blocks' counts (`shard_agreement`); each direction's counts are added up on the workers, and
only the rescaling of the link counts (which needs every pair's) is left to this machine.

Decoding an agreement run keeps the links whose product posterior is at least a threshold (0.5).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Iterator

import numpy as np
from numba import njit, types

from emc.codegen.abi import COUNTS, INTS, LAYOUT, META
from emc.runtime.checkpoint import PARAM_FIELDS
from emc.runtime.example_constraints import STATE_KEY, attach
from emc.runtime.executor import LocalExecutor
from emc.runtime.fit import run_steps
from emc.runtime.state import FitResult, FitState, Interrupted, Objective, check_log_z, example_weights
from emc.runtime.initialize import initial_params
from emc.runtime.mstep import maximize
from emc.runtime.params import ParamState
from emc.runtime.problem import Problem
from emc.spec.errors import EmcError
from emc.structures.alignment import LINK, REVERSE, slot_tables
from emc.structures.semiring import SUM

THRESHOLD = 0.5

REVERSE_FEATURES = "reverse_features_"  # the reverse model's featured tables' weights, in the state's extra


@dataclass
class Direction:
    """One model of the pair: its problem (the reverse one reads the bitext swapped) and executor
    (this machine's, or a Dask cluster's: emc.dist.executor.DaskExecutor)."""

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
    if _needs_estep(p):
        result = direction.executor.estep(params, examples, SUM, weights)
        counts, log_z = result.counts, result.log_z
        counts[_link_entries(p)] = 0.0
    else:
        counts = np.zeros(p.layout.size)
    add_product_counts(p.model.module, own, other, weights, p.ints, p.array_bounds, p.meta, counts)
    _rescale_link_counts(p, counts, float(np.dot(weights, [a.shape[0] for a in own])))
    return counts, log_z


def _needs_estep(problem: Problem) -> bool:
    """Whether a learned block other than the link blocks needs the DP's E-step for its counts (the
    HMM's jumps); for IBM 1 it would run the posteriors' DP a second time for nothing."""
    return any(f.kind == "learned" and f.slot != LINK for f in problem.model.checked.factors)


def _link_entries(problem: Problem) -> np.ndarray:
    """The entries of the link blocks' tables in the counts."""
    tables = [problem.layout.table(name) for name in slot_tables(problem.model.checked.factors, LINK)]
    return np.concatenate([np.zeros(0, np.int64), *(np.arange(t.offset, t.offset + t.size) for t in tables)])


def add_product_counts(module, own: list[np.ndarray], other: list[np.ndarray], weights: np.ndarray, ints: np.ndarray,
                       array_bounds: np.ndarray, meta: np.ndarray, counts: np.ndarray) -> None:
    """Add the pairs' product-posterior link counts (own NULL posteriors kept) to `counts`, through the
    generated link_counts_example on pairs 0, 1, ... of the packed data."""
    (own_flat, own_shapes), (other_flat, other_shapes) = _packed(own), _packed(other)
    _add_product_counts(module.link_counts_example, own_flat, own_shapes, other_flat, other_shapes,
                        np.ascontiguousarray(weights, np.float64), ints, array_bounds, meta,
                        (counts, np.zeros(0, np.uint8), np.zeros(0, np.int64)))


def shard_agreement(shards: list, modules: list, params: list[tuple], weights: list[np.ndarray],
                    derived: list[np.ndarray], esteps: list[bool], links: list[np.ndarray]) -> tuple[tuple, tuple, tuple]:
    """On a Dask worker (a task of emc.dist.executor.DaskExecutor.joint_estep): the agreement E-step
    of one shard's pairs, both directions' shards in hand, as _link_counts makes it but for the
    rescaling, which needs every pair's counts: each direction's link posteriors, then its other
    blocks' E-step counts (`esteps`; its `links` entries zeroed) and its product link counts.
    Returns (counts, log Z, derived) of each direction."""
    from emc.runtime.kernels import batch_estep, batch_posterior, estep_for

    local = np.arange(len(shards[0].lengths), dtype=np.int64)
    posteriors, log_z = [], []
    for shard, module, p, d in zip(shards, modules, params, derived):
        offsets = np.concatenate([[0], np.cumsum(shard.posterior_lengths)]).astype(np.int64)
        out, z = np.zeros(offsets[-1]), np.empty(len(local))
        batch_posterior(module.posterior_example, local, offsets, shard.ints, shard.array_bounds, shard.meta, p, d,
                        out, z)
        posteriors.append([out[a:b].reshape(m, -1)
                           for a, b, m in zip(offsets[:-1], offsets[1:], shard.decoded_lengths)])
        log_z.append(z)
    counts = []
    for k, (shard, module, p, d, w) in enumerate(zip(shards, modules, params, derived, weights)):
        c = np.zeros((1, p[0].shape[0]))
        if esteps[k]:
            batch_estep(estep_for(module, SUM), local, np.array([0, len(local)], np.int64), w, shard.ints,
                        shard.array_bounds, shard.meta, p, d, SUM, c, np.empty(len(local)))
            c[0, links[k]] = 0.0
        add_product_counts(module, posteriors[k], posteriors[1 - k], w, shard.ints, shard.array_bounds, shard.meta,
                           c[0])
        counts.append(c[0])
    return tuple(counts), tuple(log_z), tuple(derived)


def _rescale_link_counts(problem: Problem, counts: np.ndarray, target_words: float) -> None:
    """Scale the counts of links to source words so that, with the NULL links', they sum to one
    per target word, as an ordinary E-step's do. The NULL links' counts are the model's own
    posteriors, already at that scale; the products sum to less (on the Hansards from a uniform
    start, 5% of the mass an E-step gives the word links): a plain table's normalisation ignores
    the scale, but a featured table's l2 penalty (or a prior's pseudo-counts) would weigh 2 to
    20 times as much against them as in training one direction."""
    word_links = []  # per link table, its entries' counts (a view) and which of them link a word
    for name in slot_tables(problem.model.checked.factors, LINK):
        t = problem.layout.table(name)
        has_null = t.context_spaces[0].endswith("+null")  # then NULL is the last row
        word_links.append((counts[t.entries], t.entry_rows != t.rows - 1 if has_null else slice(None)))
    null_mass = sum(float(c.sum() - c[words].sum()) for c, words in word_links)
    word_mass = sum(float(c[words].sum()) for c, words in word_links)
    if word_mass > 0:
        for c, words in word_links:
            c[words] *= (target_words - null_mass) / word_mass


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


class Agreement:
    """The agreement fit as a variant of the shared EM loop (emc.runtime.fit.run_steps): one step
    is the agreement E-step and both models' M-steps. The state's params are the forward model's;
    the reverse model's ride in its extra (reverse_*), so a checkpoint holds both. The objective
    is the sum of the two models' objectives (log-likelihood plus log prior, as fit.Objective)."""

    converges = True

    def __init__(self, directions: list[Direction], settings):
        self.directions = directions
        self.settings = settings
        self.examples = np.arange(directions[0].problem.n_examples)
        self.weights = [example_weights(d.problem, settings) for d in directions]
        self.objectives = [Objective(d.problem, settings) for d in directions]
        self.gold = directions[0].problem.corpus.gold.get("links")
        # both models' (posteriors, log Z) for the parameters they were computed from: scoring the
        # parameters after a step computes those the next step (or the final objective) needs
        self._posteriors: tuple[ParamState, list] | None = None
        self._ahead = 0.0  # seconds spent on them outside a step (reported by the step that uses them)

    def start(self, state: FitState) -> None:
        """Both models' initial parameters, drawn one after the other from the state's generator."""
        forward, reverse = (initial_params(d.problem, self.settings, d.executor, state.rng) for d in self.directions)
        self._set(state, [forward, reverse])

    def finished(self, state: FitState) -> bool:
        return state.converged or state.step >= self.settings.iterations

    def posteriors(self, state: FitState) -> list[tuple[list[np.ndarray], np.ndarray]]:
        """Both models' (link posteriors, log Z) under the state's parameters."""
        if self._posteriors is None or self._posteriors[0] is not state.params:
            self._posteriors = None  # freed before the next ones are computed
            t0 = time.perf_counter()
            computed = [d.posteriors(p, self.examples) for d, p in zip(self.directions, _both_params(state))]
            self._posteriors = (state.params, computed)
            self._ahead = time.perf_counter() - t0
        return self._posteriors[1]

    def objective(self, params: list[ParamState], log_z: list[np.ndarray]) -> float:
        return sum(objective(p, self.examples, z, w)
                   for objective, p, z, w in zip(self.objectives, params, log_z, self.weights))

    def step(self, state: FitState) -> dict:
        forward, reverse = self.directions
        params = _both_params(state)
        self._duals(state, resume=True)
        # computed already when the loop scored these parameters: that time is this step's too
        computed = self._posteriors is not None and self._posteriors[0] is state.params
        ahead = self._ahead if computed else 0.0
        if not computed and not forward.executor.in_process:  # all of the E-step on the workers
            (counts_f, counts_r), log_z = self._counts_on_workers(params)
        else:
            (post_f, log_z_f), (post_r, log_z_r) = self.posteriors(state)
            counts_f = _link_counts(forward, params[0], self.weights[0], post_f, post_r)[0]
            counts_r = _link_counts(reverse, params[1], self.weights[1], post_r, post_f)[0]
            log_z = [log_z_f, log_z_r]
            del post_f, post_r
        self._posteriors, self._ahead = None, 0.0
        objective = self.objective(params, log_z)
        budget = self.settings.mstep_iterations
        self._set(state, [maximize(forward.problem.layout, counts_f, params[0], self.settings.regularizers,
                                   featured_iterations=budget),
                          maximize(reverse.problem.layout, counts_r, params[1], self.settings.regularizers,
                                   featured_iterations=budget)])
        self._duals(state, resume=False)
        projected = forward.executor.example_projection
        return {"iteration": state.step + 1, "objective": objective, "seconds_ahead": ahead,
                **(projected.last if projected is not None else {})}

    def _counts_on_workers(self, params: list[ParamState]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Both models' counts and log Z by the agreement E-step on a Dask cluster, each pair's where
        its two shards live (shard_agreement), the link counts then rescaled here as _link_counts does."""
        forward, reverse = self.directions
        task = partial(shard_agreement, esteps=[_needs_estep(d.problem) for d in self.directions],
                       links=[_link_entries(d.problem) for d in self.directions])
        counts, log_z = forward.executor.joint_estep([reverse.executor], params, self.weights, task)
        for d, c, z, w in zip(self.directions, counts, log_z, self.weights):
            check_log_z(d.problem, self.examples, z)
            targets = d.problem.model.data.decoded_length(d.problem.corpus, d.problem.model.checked)
            _rescale_link_counts(d.problem, c, float(np.dot(w, targets)))
        return counts, log_z

    def _duals(self, state: FitState, resume: bool) -> None:
        """Each direction's per-example duals (a spec's per-example constraint) from the state, or into
        it: a checkpoint holds them, so a resumed fit continues exactly."""
        for d, prefix in zip(self.directions, ("", "reverse_")):
            projection = d.executor.example_projection
            if projection is not None:
                extra = {k[len(prefix):]: v for k, v in state.extra.items() if k.startswith(prefix)}
                if resume:
                    projection.resume(extra)
                else:
                    state.extra[prefix + STATE_KEY] = projection.duals

    def final_objective(self, state: FitState) -> float:
        return self.objective(_both_params(state), [log_z for _, log_z in self.posteriors(state)])

    def evaluate(self, state: FitState) -> dict[str, float]:
        """The agreed links' scores against the gold links (the evaluation hook of the loop)."""
        return _scores(self.directions, [post for post, _ in self.posteriors(state)], self.gold)

    @staticmethod
    def _set(state: FitState, params: list[ParamState]) -> None:
        """Both models' parameters into the state, together (a Ctrl-C leaves the previous pair)."""
        extra = {**state.extra, **{f"reverse_{k}": v for k, v in zip(PARAM_FIELDS, params[1].abi())},
                 **{f"{REVERSE_FEATURES}{name}": w for name, w in params[1].features.items()}}
        state.params, state.extra = params[0], extra


def _unsupported(job) -> str | None:
    """The first option of the request that the agreement fit cannot honour, in words."""
    settings = job.settings
    if settings.algorithm != "batch":
        return f"--algorithm {settings.algorithm} (it trains with batch EM)"
    if settings.restarts > 1:
        return f"--restarts {settings.restarts} (it makes one joint fit)"
    if job.init_run:
        return "--init RUN (it starts from its own initialisation: --init random, uniform or ibm1)"
    return None


def fit_jointly(job, variant: type | None = None) -> int:
    """`emc fit SPEC BITEXT --agree`: batch EM on both directions with the agreement E-step (or
    `variant`'s: the symmetry constraint's, emc/runtime/modes/symmetric.py), run by the shared EM
    loop; saves the forward model to RUN and the reverse one to RUN/reverse. RUN's checkpoint holds
    both models after each iteration (the reverse one in the state's extra), so `--resume RUN`
    continues the joint fit."""
    variant = variant or Agreement
    symmetric = job.job.checked.symmetric if job.settings.constraints != "off" else None
    what = f"constraint '{symmetric.name}'" if variant is not Agreement else "--agree"
    if variant is Agreement and symmetric is not None:
        raise EmcError(f"--agree: the spec's constraint '{symmetric.name}' trains both directions together itself "
                       f"(emc fit without --agree), or fit by agreement with --constraints off")
    unsupported = _unsupported(job)
    if unsupported:
        raise EmcError(f"{what} does not support {unsupported}")
    reverse_options = {**job.options, "reverse": True}
    problems = [job.bind(options)[0] for options in (job.options, reverse_options)]
    if problems[0].n_examples != problems[1].n_examples:
        raise EmcError("the two directions kept different sentence pairs")
    with _executors(job, problems) as executors:
        directions = []
        for problem, executor in zip(problems, executors):
            attach(executor, problem, job.settings)  # each direction's posteriors projected per example
            directions.append(Direction(problem, executor))
        return _fit(job, variant, directions, reverse_options)


@contextmanager
def _executors(job, problems: list[Problem]) -> Iterator[list]:
    """Each direction's executor, its model compiled: this machine's, or with --workers / --scheduler
    one each on one Dask cluster, a pair's two shards on one worker (opened by the fit's executor
    opener: `emc fit`'s is emc.dist.executor.open_executor, which takes a list of problems)."""
    if not job.job.workers and not job.job.scheduler:
        yield [job.executor(p) for p in problems]
        return
    with job.executors(job.job, problems, job.settings, job.say) as executors:
        yield [job.executor(p, opened=e) for p, e in zip(problems, executors)]


def _fit(job, variant: type, directions: list[Direction], reverse_options: dict) -> int:
    """The joint fit of the two directions by `variant`, from the checkpoint when resuming; both saved."""
    settings = job.settings
    forward = directions[0]
    agreement = variant(directions, settings)
    state = job.saved_state(job.out)
    if state is None:
        state = FitState(params=None, rng=np.random.default_rng(settings.seed))
        agreement.start(state)
    checkpointer = job.checkpointer(job.out)
    try:
        result = run_steps(agreement, state, settings, forward.problem.n_examples,
                           agreement.evaluate if agreement.gold is not None else None, job.observer, checkpointer,
                           label=f"{'agreement' if variant is Agreement else 'symmetric'} {settings.describe()}")
    except KeyboardInterrupt:
        if job.out is None or not state.step:
            raise Interrupted("interrupted before the first iteration finished; nothing to save") from None
        for d, p, options, out in _outputs(job, directions, _both_params(state), reverse_options):
            job.save(d.problem, FitResult(p, state.objective, state.history, {}), out, options)
        raise job.interrupted(job.out, state.step) from None
    for d, p, options, out in _outputs(job, directions, _both_params(state), reverse_options):
        job.save(d.problem, FitResult(p, result.objective, result.history, result.metrics if d is forward else {}),
                 out, options)
    return 0


def _both_params(state: FitState) -> list[ParamState]:
    """The forward and reverse parameters of a checkpointed state (the reverse ones ride in extra)."""
    features = {k[len(REVERSE_FEATURES):]: w for k, w in state.extra.items() if k.startswith(REVERSE_FEATURES)}
    return [state.params, ParamState(*(state.extra[f"reverse_{k}"] for k in PARAM_FIELDS), features)]


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
