"""A fit as a job: spec + data + settings -> a saved model directory, checkpointed and resumable.

The CLI's `emc fit` and the Python API both run jobs. A job is plain data (the spec's text, its
overrides, the data options, the settings), so a checkpoint can carry it and `emc fit --resume`
rebuilds exactly the same problem: the data are read again in the same order, so vocabularies
and example order come out identical. The spec is parsed and checked once per job (`Job.checked`):
every step of the fit, and each fit of a structure's own fit mode, use that checked model.
"""
from __future__ import annotations

import functools
import json
import os
import time
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator

import numpy as np

from emc.io.readers import recording_reads
from emc.priors import Prior
from emc.priors.text import prior_from_text
from emc.runtime.checkpoint import NAME as CHECKPOINT
from emc.runtime.cost import say_iteration_cost
from emc.runtime.checkpoint import (Checkpointer, corpus_change, load_checkpoint, load_corpus_identity, load_job,
                                   saved_at)
from emc.runtime.executor import LocalExecutor
from emc.runtime.fit import fit_with_restarts, scored_examples
from emc.runtime.state import FitResult, FitState, Interrupted
from emc.runtime.initialize import describe_start
from emc.runtime.model_dir import SavedRun, holds_finished_model, load_run, save_run
from emc.runtime.modes.dispatch import fit_mode
from emc.runtime.params import ParamState, random_init
from emc.runtime.problem import Model, Problem, bind
from emc.runtime.run_folder import RunFolderLock
from emc.runtime.settings import FitSettings
from emc.spec.check import check
from emc.spec.errors import EmcError, did_you_mean
from emc.spec.model import CheckedModel
from emc.spec.parse import parse_file, parse_text

# The first run's estimate, from `python bench/startup.py --cpu` (bench/README.md, "Start-up, round
# 9": every reference spec at 3c7a482 on the Intel machine, its other vCPU busy): the CPU seconds
# of a cold `emc fit --iterations 1`, about its wall seconds (single-threaded compiles): 3-16 s for
# a built-in structure without featured blocks (label 3.5-3.7, segmentation 6.6-6.7, pcfg 7.0,
# spantree 7.2, alignment 7.4-8.4, chain 5.9-11.0 with hmm_suffix's three emissions, deptree
# 15.2-16.0: the split-head chart; a spec's constraints add to it: hmm_sparse 14.0, hmm_align_pr
# 13.2), 6-18 s for a structure written as rules (chain 5.7, segment 5.9, hmm_prevword 6.1,
# hmm_mixture 6.7, hsmm 7.0, pcfg 7.3, dmv 13.0, evg 17.4), 11-24 s with featured blocks (their
# M-step compiles too); a decoder (data with gold annotations) adds to it, and a machine shared
# with other work doubles it.
COMPILE_SECONDS = "3 to 16"
RULES_COMPILE_SECONDS = "6 to 18"
FEATURED_COMPILE_SECONDS = "11 to 24"


def compile_estimate(problem: Problem) -> str:
    """What the first run of a model usually takes to compile, in seconds (a range)."""
    if problem.layout.featured():
        return FEATURED_COMPILE_SECONDS
    if getattr(problem.model.checked.structure, "program", None) is not None:  # written as rules
        return RULES_COMPILE_SECONDS
    return COMPILE_SECONDS


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
    # the directory the fit started in: the data, the options' files and the spec's files are
    # named relative to it, and a resumed fit reads them from there (see `resume`)
    workdir: str = field(default_factory=os.getcwd)

    def fit_settings(self) -> FitSettings:
        return FitSettings.from_json(self.settings)

    @functools.cached_property
    def checked(self) -> CheckedModel:
        """The spec parsed and checked with the job's overrides, once (not a field: a checkpoint
        keeps the job's plain data, and a resumed job checks its spec again, once)."""
        return check(parse_text(self.spec_text, self.spec_path), self.overrides, self.workdir)


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
    settings.validate()  # before the spec and the data: a setting that cannot run is refused at once
    spec = parse_file(spec_path)  # reports an unreadable, non-UTF-8 or malformed spec here
    job = Job(spec.text, str(spec_path), overrides, list(data), _jsonable(options), settings.to_json(), labeled,
              init_run, checkpoint_seconds, workers, scheduler)
    job.checked = check(spec, overrides, job.workdir)  # the job keeps the spec it parsed, checked
    return job


@dataclass
class Prepared:
    model: Model
    problem: Problem
    init: ParamState | None
    compile_seconds: float
    corpus: list[dict[str, Any]]  # the identity of each data file read (emc.io.readers.recording_reads)


def prepare(job: Job, options: dict[str, Any] | None = None) -> Prepared:
    """Compile the job's checked model, read and pack the data (and the --init run's parameters);
    `options` in place of the job's (a structure fitting two models reads the data twice, differently)."""
    options = job.options if options is None else options
    t0 = time.perf_counter()
    model = Model.from_checked(job.checked)
    compile_seconds = time.perf_counter() - t0
    saved: SavedRun | None = load_run(job.init_run) if job.init_run else None
    vocabs = {k: v.copy() for k, v in saved.vocabs.items()} if saved else {}
    corpus = None
    with recording_reads() as identity:
        for path in job.data or [None]:
            if path is None and not model.data.DATA_FROM_OPTIONS:
                raise EmcError("emc fit: give the training data: emc fit SPEC DATA --out RUN")
            part = model.read(path, options, vocabs)
            corpus = part if corpus is None else corpus.concat(part, labeled=False)
        if job.labeled:
            corpus = corpus.concat(model.read(job.labeled, options, vocabs), labeled=True)
    limit = options.get("max_length")
    if limit and corpus.too_long is None:  # a flag is applied or refused, never ignored
        raise EmcError(f"--max-length {limit}: the {model.checked.structure.name} structure does not leave out long "
                       f"examples (sentences read as tokens, CoNLL, CoNLL-U or trees do); leave it out")
    trained_vocabs = saved.trained["vocab_sizes"] if saved else None
    problem = bind(model, corpus, vocabs, options, trained_vocabs=trained_vocabs)
    init = None
    if saved:
        from emc.runtime.transfer import transfer_params
        init = transfer_params(saved, problem)
    return Prepared(model, problem, init, compile_seconds, identity)


def resolve_regularizers(raw: dict[str, Prior | str], problem: Problem) -> dict[str, Prior]:
    """--smooth / --prior overrides by block name, each a Prior, or the text of what it replaces
    in the spec's prior (emc.priors.text.prior_from_text)."""
    out = {}
    names = [t.name for t in problem.layout.learned()]
    for name, prior in raw.items():
        if name not in names:
            hint = did_you_mean(name, names)
            raise EmcError(f"--smooth/--prior {name}: no learned block of that name"
                           + (f"; {hint}" if hint else f" (blocks: {', '.join(names)})"))
        out[name] = prior if isinstance(prior, Prior) else prior_from_text(prior, problem.layout.table(name).prior)
    return out


def objective_terms(problem: Problem, regularizers: dict[str, Prior]) -> str:
    """What the blocks add to the objective (emc.runtime.mstep.log_prior), in words: a
    smoothed-L0 prior's term is positive, and made a fit's objective positive with no word why."""
    from emc.runtime.blocks.block import table_block

    terms = (table_block(t, regularizers).objective_term(t) for t in problem.layout.learned())
    return "; ".join(term for term in terms if term is not None)


class Runner:
    """An `emc fit` request being carried out. `run()` is the ordinary fit (checkpointed,
    resumable, on this machine or on Dask); a structure with its own fit mode (emc/runtime/modes/)
    carries the request out its own way with these steps (alignment fits two directions, or both
    jointly): `bind`, `executor`, `save`, `run`."""

    def __init__(self, job: Job, out: Path | None, observer: Callable[[dict], None] | None = None,
                 say: Callable[[str], None] = lambda message: None,
                 progress: Callable[[int, int], None] | None = None, resuming: bool = False,
                 executors: ExecutorOpener | None = None):
        self.job, self.out, self.say, self.progress = job, out, say, progress
        self.executors = executors or local_executor
        # `emc fit --resume`: each fit of the request continues from its folder's checkpoint if it has one
        self.resuming = resuming
        self.stepped = False  # whether a step ran in this process (see `already_saved`)
        observer = observer or (lambda record: None)

        def observe(record: dict) -> None:
            self.stepped = True
            observer(record)

        self.observer = observe
        self.settings = job.fit_settings()
        self.compiled = False
        self.compile_seconds = 0.0
        self.corpus: list[dict[str, Any]] = []  # the identity of the data the last `bind` read

    @property
    def options(self) -> dict[str, Any]:
        return self.job.options

    @property
    def init_run(self) -> str | None:
        return self.job.init_run

    def bind(self, options: dict[str, Any] | None = None) -> tuple[Problem, ParamState | None]:
        """(the problem, the start parameters of --init RUN or None), with `options` in place of
        the job's."""
        prepared = prepare(self.job, options)
        problem = prepared.problem
        self.compile_seconds = prepared.compile_seconds
        self.corpus = prepared.corpus
        self.settings.regularizers = resolve_regularizers(self.job.fit_settings().regularizers, problem)
        too_long = problem.corpus.too_long or 0
        left_out = [f"{problem.skipped - too_long} empty examples skipped"] if problem.skipped > too_long else []
        if too_long:
            left_out.append(f"{too_long} longer than --max-length {self.options.get('max_length')} left out")
        skipped = f" ({'; '.join(left_out)})" if left_out else ""
        # job.data is empty when a structure takes its files from options (alignment's --source/--target)
        files = ", ".join(self.job.data) or problem.corpus.path
        self.say(f"emc: {problem.n_examples} examples from {files}{skipped}; "
                 f"{problem.layout.size} parameters in {len(problem.layout.tables)} tables")
        terms = objective_terms(problem, self.settings.regularizers)
        if terms:
            self.say(f"emc: objective: the log-likelihood plus, up to a constant, {terms}")
        return problem, prepared.init

    def say_scored(self, problem: Problem) -> None:
        """Which examples the metrics score: never those whose structure was given."""
        mask = problem.corpus.labeled_mask
        if not problem.corpus.gold or mask is None or not mask.any():
            return
        scored = len(scored_examples(problem))
        self.say(f"emc: metrics score only the {scored} examples without a given structure, not the {int(mask.sum())} "
                 f"labeled ones" if scored else
                 "emc: no metrics: every example is labeled, so there is nothing to score (decode held-out data)")

    def executor(self, problem: Problem, opened=None) -> LocalExecutor:
        """This machine's executor (or `opened`, one the caller opened: a Dask cluster's), its model
        compiled (or loaded from numba's cache)."""
        executor = opened or LocalExecutor(problem, self.settings.threads or None)
        self._warm_up(executor, problem)
        return executor

    def _warm_up(self, executor, problem: Problem) -> None:
        from emc.runtime.compiled import is_compiled, mark_compiled

        module = problem.model.module
        first = not self.compiled and not is_compiled(module)
        if first:
            self.say(f"emc: compiling model {problem.model.name} for this machine, once per spec (usually "
                     f"{compile_estimate(problem)} s; later runs load it from the cache in about a second)")
        seconds = executor.warm_up(random_init(problem.layout, problem.fixed_theta, np.random.default_rng(0), 1.0))
        if first:
            mark_compiled(module)
        if not self.compiled:
            self.compiled = True
            self.say(f"emc: model {problem.model.name} compiled in {self.compile_seconds + seconds:.1f}s "
                     f"(numba caches it: the next run starts at once)")
            if isinstance(executor, LocalExecutor):
                binding = problem.model.checked.binding
                say_iteration_cost(executor, random_init(problem.layout, problem.fixed_theta,
                                                         np.random.default_rng(0), 1.0),
                                   binding.structure.cost(binding.args), self.say)

    def checkpointer(self, out: Path | None, options: dict[str, Any] | None = None) -> Checkpointer | None:
        """What saves a fit's state into `out` after its steps (None without a folder)."""
        if out is None:
            return None
        job = self.job if options is None else replace(self.job, options=options)
        return Checkpointer(out, asdict(job), job.checkpoint_seconds, self.corpus)

    def saved_state(self, out: Path | None) -> FitState | None:
        """When resuming, the state `out`'s checkpoint holds (None if it has none: that fit starts
        afresh). Called after `bind`: a checkpoint of a fit on other data than `bind` read is refused."""
        if not self.resuming or out is None or not (out / CHECKPOINT).exists():
            return None
        change = corpus_change(load_corpus_identity(out), self.corpus)
        if change is not None:
            raise EmcError(f"emc fit --resume {self.out or out}: {change}; resuming would fit one model to two "
                           f"corpora: start over with another --out, or delete {self.out or out}")
        state = load_checkpoint(out)[1]
        self.say(f"emc: resuming {out} after step {state.step}")
        return state

    def interrupted(self, out: Path, step: int) -> Interrupted:
        """The error a Ctrl-C ends with once the model after `step` is saved in `out`: the whole
        request resumes from the run's top folder."""
        return Interrupted(f"interrupted after step {step}: the model so far is saved in {out}; "
                           f"continue with `emc fit --resume {self.out or out}`")

    def save(self, problem: Problem, result: FitResult, out: Path | None, options: dict[str, Any] | None = None) -> None:
        from emc.eval import format_metrics

        summary = format_metrics(result.metrics)
        # each iteration's line scores the parameters that iteration began with; this, the ones it ended with
        self.say(f"emc: final objective {result.objective:.8g} (of the parameters after the last step)"
                 + (f"; {summary}" if summary else ""))
        if out is not None and self.already_saved(out):
            self.say(f"emc: {out} already holds this finished model: nothing to resume, nothing written")
        elif out is not None:
            save_run(out, problem, result.params, self.settings, self.job.overrides,
                     self.options if options is None else options, result.objective, result.metrics, result.history)
            self.say(f"emc: saved to {out}")

    def already_saved(self, out: Path) -> bool:
        """Resuming, no step ran, and `out` holds the final model saved after the last checkpoint
        (its own, or the request's for a folder without one): the fit had finished."""
        if not self.resuming or self.stepped:
            return False
        folder = out if (out / CHECKPOINT).exists() else self.out
        return folder is not None and (folder / CHECKPOINT).exists() and holds_finished_model(out, saved_at(folder))

    def run(self, options: dict[str, Any] | None = None, out: Path | None = None,
            state: FitState | None = None) -> tuple[Problem, FitResult]:
        """The ordinary fit (from `state` when resuming), with `options` and `out` in place of the
        request's: checkpointed after every step, and on Ctrl-C saved so far and resumable."""
        out = self.out if out is None else out
        problem, init = self.bind(options)
        state = state or self.saved_state(out)
        if state is None:
            self.say(f"emc: start: {f'the saved model {self.init_run}' if init is not None else describe_start(problem, self.settings)}")
        self.say_scored(problem)
        job = self.job if options is None else replace(self.job, options=options)
        checkpointer = _LatestState(self.checkpointer(out, options))
        try:
            with self.executors(job, problem, self.settings, self.say) as executor:
                self._warm_up(executor, problem)
                result = fit_with_restarts(problem, self.settings, executor, self.observer, init, state,
                                           checkpointer, self.progress)
        except KeyboardInterrupt:
            latest = checkpointer.state
            if out is None or latest is None:
                raise Interrupted("interrupted before the first iteration finished; nothing to save") from None
            save_run(out, problem, latest.params, self.settings, job.overrides, job.options,
                     latest.objective or float("nan"), {}, latest.history, finished=False)
            step = latest.history[-1].get("iteration") or latest.history[-1].get("pass") if latest.history else 0
            raise self.interrupted(out, step) from None
        self.save(problem, result, out, options)
        return problem, result


def run(job: Job, out: Path | None, observer: Callable[[dict], None] | None = None,
        say: Callable[[str], None] = lambda message: None,
        progress: Callable[[int, int], None] | None = None, resuming: bool = False,
        overwrite: bool = False, executors: ExecutorOpener | None = None) -> None:
    """Carry out a fit: the structure's own way when it has a fit mode for these options
    (emc/runtime/modes/dispatch.py), else the ordinary fit. `out` is locked while the fit writes it, and refused if it
    already holds a model, unless `overwrite` or `resuming` (see emc.runtime.run_folder). `executors`
    opens the ordinary fit's executor (default: this machine's, `local_executor`)."""
    with RunFolderLock(out, overwrite, resuming) if out is not None else nullcontext():
        runner = Runner(job, out, observer, say, progress, resuming, executors)
        custom = fit_mode(job.checked.structure.name, job.options)
        if custom is not None:
            custom(runner)
        else:
            runner.run()


# Opens the executor of an ordinary fit for as long as the fit runs: (job, problem, settings, say)
# -> a context manager giving the executor. The runtime opens this machine's (`local_executor`);
# its callers may pass another, as emc/cli.py passes emc.dist.executor.open_executor, which opens a
# Dask cluster when the job asks for one: so the runtime never imports emc.dist.
ExecutorOpener = Callable[["Job", Problem, FitSettings, Callable[[str], None]], ContextManager[Any]]


@contextmanager
def local_executor(job: Job, problem: Problem, settings: FitSettings,
                   say: Callable[[str], None]) -> Iterator[LocalExecutor]:
    """This machine's cores. A job asking for a Dask cluster (--workers / --scheduler) is refused:
    its caller passes an opener that provides one (emc.dist.executor.open_executor)."""
    if job.workers or job.scheduler:
        raise EmcError("--workers / --scheduler: this caller runs fits on this machine only "
                       "(run them through emc.dist.executor.open_executor, as `emc fit` does)")
    yield LocalExecutor(problem, settings.threads or None)


class _LatestState:
    """Remembers the last completed step's state (for Ctrl-C) and passes it to the checkpointer."""

    def __init__(self, checkpointer: Checkpointer | None):
        self.checkpointer = checkpointer
        self.state: FitState | None = None

    def __call__(self, state: FitState) -> None:
        self.state = state
        if self.checkpointer:
            self.checkpointer(state)


def resume(run_dir: Path, observer=None, say=lambda message: None, progress=None,
           executors: ExecutorOpener | None = None) -> None:
    """Continue a checkpointed request as it was started: an ordinary fit from its checkpoint; a
    structure's own fit mode (alignment's two directions, or both jointly) again, each of its fits
    continuing from its own folder's checkpoint, or starting afresh if it had not begun."""
    run_dir = run_dir.resolve()
    job = Job(**load_job(run_dir))
    with _working_directory(job.workdir, run_dir, say):
        run(job, run_dir, observer, say, progress, resuming=True, executors=executors)


@contextmanager
def _working_directory(workdir: str, run_dir: Path, say: Callable[[str], None]) -> Iterator[None]:
    """Run in the directory a fit started in, for as long as it resumes: its data, its options'
    files and its spec's files are named relative to it, and a same-named file elsewhere must not
    be read in their place."""
    here = os.getcwd()
    if os.path.realpath(workdir) == os.path.realpath(here):
        yield
        return
    if not os.path.isdir(workdir):
        raise EmcError(f"{run_dir}: the fit started in {workdir}, which is gone: its data and files are named "
                       f"relative to it")
    say(f"emc: resuming in {workdir}, where the fit started (its data and files are named relative to it)")
    os.chdir(workdir)
    try:
        yield
    finally:
        os.chdir(here)
