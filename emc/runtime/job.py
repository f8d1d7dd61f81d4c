"""A fit as a job: spec + data + settings -> a saved model directory, checkpointed and resumable.

The CLI's `emc fit` and the Python API both run jobs. A job is plain data (the spec's text, its
overrides, the data options, the settings), so a checkpoint can carry it and `emc fit --resume`
rebuilds exactly the same problem: the data are read again in the same order, so vocabularies
and example order come out identical.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from emc.runtime.checkpoint import Checkpointer, load_checkpoint
from emc.runtime.executor import LocalExecutor
from emc.runtime.fit import FitResult, FitState, fit_with_restarts
from emc.runtime.model_dir import SavedRun, load_run, save_run
from emc.runtime.params import ParamState, random_init
from emc.runtime.problem import Model, Problem, bind
from emc.runtime.settings import FitSettings
from emc.spec.errors import EmcError, did_you_mean


@dataclass
class Job:
    spec_text: str
    spec_path: str
    overrides: dict[str, Any]
    data: list[str]
    options: dict[str, Any]
    settings: dict[str, Any]
    labeled: str | None = None
    init_run: str | None = None  # --init RUN
    checkpoint_seconds: float = 0.0
    workers: int | None = None  # --workers N: a LocalCluster of N processes
    scheduler: str | None = None  # --scheduler ADDRESS: an existing Dask cluster
    metadata: dict[str, Any] = field(default_factory=dict)

    def fit_settings(self) -> FitSettings:
        return FitSettings.from_json(self.settings)


def _jsonable(options: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in options.items():
        try:
            json.dumps(value)
        except TypeError:
            continue
        out[key] = value
    return out


def make_job(spec_path: str, data: list[str], overrides: dict[str, Any], options: dict[str, Any],
             settings: FitSettings, labeled: str | None = None, init_run: str | None = None,
             checkpoint_seconds: float = 0.0, workers: int | None = None, scheduler: str | None = None) -> Job:
    from emc.spec.parse import parse_file

    text = parse_file(spec_path).text  # reports an unreadable, non-UTF-8 or malformed spec here
    return Job(text, str(spec_path), overrides, list(data), _jsonable(options), settings.to_json(), labeled,
               init_run, checkpoint_seconds, workers, scheduler)


@dataclass
class Prepared:
    model: Model
    problem: Problem
    init: ParamState | None
    compile_seconds: float


def prepare(job: Job) -> Prepared:
    """Compile the model, read and pack the data (and the --init run's parameters)."""
    t0 = time.perf_counter()
    model = Model.from_text(job.spec_text, job.spec_path, job.overrides)
    compile_seconds = time.perf_counter() - t0
    saved: SavedRun | None = load_run(job.init_run) if job.init_run else None
    vocabs = {k: v.copy() for k, v in saved.vocabs.items()} if saved else {}
    corpus = None
    for path in job.data:
        part = model.read(path, job.options, vocabs)
        corpus = part if corpus is None else corpus.concat(part, labeled=False)
    if corpus is None:
        raise EmcError("emc fit: give the training data: emc fit SPEC DATA --out RUN")
    if job.labeled:
        corpus = corpus.concat(model.read(job.labeled, job.options, vocabs), labeled=True)
    problem = bind(model, corpus, vocabs, job.options)
    init = None
    if saved:
        from emc.runtime.transfer import transfer_params
        init = transfer_params(saved, problem)
    return Prepared(model, problem, init, compile_seconds)


def resolve_regularizers(raw: dict, problem: Problem) -> dict:
    """--smooth / --prior overrides by block name, completed from the spec's own settings."""
    out = {}
    names = [t.name for t in problem.layout.learned()]
    for name, (smoothing, prior) in raw.items():
        if name not in names:
            hint = did_you_mean(name, names)
            raise EmcError(f"--smooth/--prior {name}: no learned block of that name"
                           + (f"; {hint}" if hint else f" (blocks: {', '.join(names)})"))
        table = problem.layout.table(name)
        out[name] = (table.smoothing if smoothing is None else smoothing, table.prior if prior == "keep" else prior)
    return out


class Interrupted(EmcError):
    """Ctrl-C during a fit: the model so far is saved and the fit can be resumed."""


def run(job: Job, out: Path | None, observer: Callable[[dict], None] | None = None,
        say: Callable[[str], None] = lambda message: None, state: FitState | None = None,
        progress: Callable[[int, int], None] | None = None) -> tuple[Prepared, FitResult]:
    """Run a job (from `state` when resuming) and save the model to `out`."""
    prepared = prepare(job)
    problem = prepared.problem
    settings = job.fit_settings()
    settings.regularizers = resolve_regularizers(settings.regularizers, problem)
    skipped = f" ({problem.skipped} empty examples skipped)" if problem.skipped else ""
    say(f"emc: {problem.n_examples} examples from {', '.join(job.data)}{skipped}; "
        f"{problem.layout.size} parameters in {len(problem.layout.tables)} tables")
    checkpointer = _LatestState(Checkpointer(out, asdict(job), job.checkpoint_seconds) if out else None)
    client = None
    try:
        executor, client = make_executor(job, problem, settings)
        if client is not None:
            say(f"emc: E-step on Dask: {len(executor.shards)} shards on {client.scheduler.address}")
        warm = executor.warm_up(random_init(problem.layout, problem.fixed_theta, np.random.default_rng(0), 1.0))
        say(f"emc: model {prepared.model.name} compiled in {prepared.compile_seconds + warm:.1f}s "
            f"(numba caches it: the next run starts at once)")
        result = fit_with_restarts(problem, settings, executor, observer, prepared.init, state, checkpointer, progress)
    except KeyboardInterrupt:
        latest = checkpointer.state
        if out is None or latest is None:
            raise Interrupted("interrupted before the first iteration finished; nothing to save") from None
        save_run(out, problem, latest.params, settings, job.overrides, job.options, latest.objective or float("nan"),
                 {}, latest.history)
        step = latest.history[-1].get("iteration") or latest.history[-1].get("pass") if latest.history else 0
        raise Interrupted(f"interrupted after step {step}: the model so far is saved in {out}; "
                          f"continue with `emc fit --resume {out}`") from None
    finally:
        if client is not None:
            from emc.dist.executor import disconnect
            disconnect(client)
    if out:
        save_run(out, problem, result.params, settings, job.overrides, job.options, result.objective,
                 result.metrics, result.history)
    return prepared, result


def make_executor(job: Job, problem: Problem, settings: FitSettings):
    """This machine's cores, or a Dask cluster (--workers / --scheduler); and the client if any."""
    if not job.workers and not job.scheduler:
        return LocalExecutor(problem, settings.threads or None), None
    from emc.dist.executor import DaskExecutor, connect

    client = connect(job.workers, job.scheduler)
    return DaskExecutor(problem, client), client


class _LatestState:
    """Remembers the last completed step's state (for Ctrl-C) and passes it to the checkpointer."""

    def __init__(self, checkpointer: Checkpointer | None):
        self.checkpointer = checkpointer
        self.state: FitState | None = None

    def __call__(self, state: FitState) -> None:
        self.state = state
        if self.checkpointer:
            self.checkpointer(state)


def resume(run_dir: Path, observer=None, say=lambda message: None, progress=None) -> tuple[Prepared, FitResult]:
    record, state = load_checkpoint(run_dir)
    job = Job(**record)
    say(f"emc: resuming {run_dir} after step {state.step}")
    return run(job, run_dir, observer, say, state, progress)
