"""The one EM driver: runs any variant (emc.runtime.variants) over any compiled model.

A variant sees the model only through the executor (E-step, decode) and the M-step, so a new
structure gets every variant for free. The driver owns what is common: the initial parameters, the
loop, convergence, evaluation against gold, progress records and checkpoints. The loop itself
(`run_steps`) drives any step with the variants' interface: a structure fitting something else
than one model (alignment's agreement fit, two models at once) runs through it too.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from emc.runtime.executor import LocalExecutor
from emc.runtime.initialize import initial_params
from emc.runtime.params import ParamState
from emc.runtime.problem import Problem
from emc.runtime.settings import FitSettings
from emc.runtime.state import FitResult, FitState
from emc.runtime.variants import make_variant


def fit(problem: Problem, settings: FitSettings, executor: LocalExecutor | None = None,
        observer: Callable[[dict], None] | None = None, init: ParamState | None = None,
        state: FitState | None = None, after_step: Callable[[FitState], None] | None = None,
        progress: Callable[[int, int], None] | None = None) -> FitResult:
    """Run EM. `init` replaces the random start; `state` resumes a checkpointed fit; `observer`
    receives one record per iteration or pass; `after_step` (checkpointing) the state after it;
    `progress(done, total)` is told how far a long pass has got."""
    executor = executor or LocalExecutor(problem, settings.threads or None)
    variant = make_variant(settings.algorithm, problem, executor, settings)
    variant.progress = progress
    if state is None:
        rng = np.random.default_rng(settings.seed)
        # no local name for the start: the state holds the only reference, so it is freed once replaced
        state = FitState(params=init if init is not None else initial_params(problem, settings, executor, rng), rng=rng)
        variant.start(state)
    evaluator = Evaluator(problem, executor)
    evaluate = (lambda current: evaluator(current.params)) if evaluator.enabled else None
    return run_steps(variant, state, settings, problem.n_examples, evaluate, observer, after_step)


def run_steps(variant, state: FitState, settings: FitSettings, n_examples: int,
              evaluate: Callable[[FitState], dict[str, float]] | None = None,
              observer: Callable[[dict], None] | None = None,
              after_step: Callable[[FitState], None] | None = None, label: str | None = None) -> FitResult:
    """The loop of every fit, over a started (or resumed) `state`: steps until the variant is
    finished, each one timed, its relative objective change judged for convergence, scored
    against gold every --eval-every steps (`evaluate`, None without gold), recorded in the
    history, passed to `observer` and then to `after_step` (checkpointing).

    `variant` is anything with the variants' interface (emc.runtime.variants): `step(state) ->
    record` (at least {"objective": ...}; optionally "examples", how many it went through, and
    "seconds_ahead", time its work took before the step began, as when scoring the previous
    parameters computed what it needs; it updates state.params and state.extra),
    `finished(state)`, `final_objective(state)` (of the final parameters) and `converges`.
    Besides the ordinary variants, alignment's agreement fit (two models in one state) runs here."""
    started = time.perf_counter() - (state.history[-1]["seconds_total"] if state.history else 0.0)
    label = label or settings.describe()
    while not variant.finished(state):
        t0 = time.perf_counter()
        record = variant.step(state)
        elapsed = time.perf_counter() - t0 + record.pop("seconds_ahead", 0.0)
        previous = state.objective
        state.objective = record["objective"]
        state.step += 1
        change = None if previous is None else (state.objective - previous) / max(abs(previous), 1e-300)
        examples = record.pop("examples", n_examples)
        seen = (state.history[-1]["examples_seen"] if state.history else 0) + examples
        record.update({"algorithm": settings.algorithm, "label": label, "change": change,
                       "seconds": elapsed,
                       "seconds_total": time.perf_counter() - started, "examples_seen": seen,
                       "examples_per_second": examples / max(elapsed, 1e-9)})
        if settings.eval_every and state.step % settings.eval_every == 0 and evaluate is not None:
            record["metrics"] = evaluate(state)
        if change is not None and settings.tolerance > 0 and abs(change) < settings.tolerance and variant.converges:
            state.converged = True
        state.history.append(record)
        if observer:
            observer(record)
        if after_step:
            after_step(state)
    final = variant.final_objective(state)
    metrics = evaluate(state) if evaluate is not None else {}
    return FitResult(state.params, final, state.history, metrics)


def scored_examples(problem: Problem) -> np.ndarray:
    """The examples metrics score: not the labeled ones, whose structure the DP is constrained to
    (scoring them would report their given answers back)."""
    mask = problem.corpus.labeled_mask
    return np.arange(problem.n_examples) if mask is None else np.flatnonzero(~mask)


class Evaluator:
    """Scores parameters against the gold annotations of the examples without a given structure
    (nothing when there are none, or no gold)."""

    def __init__(self, problem: Problem, executor: LocalExecutor):
        self.problem = problem
        self.executor = executor
        self.examples = scored_examples(problem)
        labeled = problem.corpus.labeled_mask is not None and problem.corpus.labeled_mask.any()
        self.corpus = problem.corpus.subset(self.examples) if labeled else problem.corpus
        data = problem.model.data
        self.enabled = bool(problem.corpus.gold) and data.evaluate is not None and len(self.examples) > 0

    def __call__(self, params: ParamState) -> dict[str, float]:
        if not self.enabled:
            return {}
        p = self.problem
        decoded, _ = self.executor.decode(params, self.examples)
        return p.model.data.evaluate(self.corpus, p.model.checked, decoded, p.labels)


def fit_with_restarts(problem: Problem, settings: FitSettings, executor: LocalExecutor | None = None,
                      observer: Callable[[dict], None] | None = None, init: ParamState | None = None,
                      state: FitState | None = None, after_step: Callable[[FitState], None] | None = None,
                      progress: Callable[[int, int], None] | None = None) -> FitResult:
    """--restarts N: N fits from seeds seed, seed+1, ...; the best by final training objective
    wins. Every record of every restart is kept (with its `restart` number) in the history. The
    restarts run one after the other: each E-step already uses every core. The best result so far
    travels in the running state (state.extra["restarts"]), so a checkpoint holds it too."""
    from dataclasses import replace

    executor = executor or LocalExecutor(problem, settings.threads or None)
    restarts = (state.extra.get("restarts") if state is not None else None) or {"index": 0, "history": []}
    best_theta = state.extra.get("restart_best_theta") if state is not None else None
    best = None
    if best_theta is not None:
        best_features = {t.name: state.extra[f"restart_best_features_{t.name}"] for t in problem.layout.featured()}
        best = FitResult(ParamState.plain(best_theta, problem.layout, best_features), restarts["best_objective"], [],
                         restarts["best_metrics"])
    for restart in range(restarts["index"], max(1, settings.restarts)):
        def tagged(record: dict, restart=restart) -> None:
            record["restart"] = restart
            if observer:
                observer(record)

        def remember(current: FitState, restart=restart) -> None:
            current.extra["restarts"] = dict(restarts, index=restart)
            if best is not None:
                current.extra["restart_best_theta"] = best.params.theta
                current.extra.update({f"restart_best_features_{k}": v for k, v in best.params.features.items()})
            if after_step:
                after_step(current)

        resumed = state if state is not None and restart == restarts["index"] else None
        result = fit(problem, replace(settings, seed=settings.seed + restart), executor,
                     tagged if settings.restarts > 1 else observer, init=init, state=resumed,
                     after_step=remember if settings.restarts > 1 else after_step, progress=progress)
        restarts["history"] = restarts["history"] + result.history
        if best is None or result.objective > best.objective:
            best = FitResult(ParamState.plain(result.params.weights(problem.layout), problem.layout,
                                              result.params.features),
                             result.objective, result.history, result.metrics)
            restarts.update(best_objective=result.objective, best_metrics=result.metrics)
    history = restarts["history"] if settings.restarts > 1 else best.history
    return FitResult(best.params, best.objective, history, best.metrics)
