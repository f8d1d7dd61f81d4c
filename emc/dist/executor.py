"""The E-step on a Dask cluster (an optional extra: pip install 'emc[dask]').

The examples are cut into one shard per worker (contiguous, balanced by length) and each shard is
packed on the client exactly as the whole corpus is (same vocabularies, same parameter layout and
meta) and scattered to its worker once. Per E-step the client scatters the parameters to every
worker (one broadcast), each worker runs the compiled model on its shard (the generated source is
sent once and loaded through numba's cache, so a worker compiles at most once), and the
expected-count arrays are added pairwise on the workers (a reduction tree) before the client
gathers the sum. The M-step stays on the client. With a per-example constraint or posterior
sparsity (emc/runtime/example_constraints.py, sparsity.py) each shard's task also carries its
examples' duals, cut from the whole corpus's `derived` vector, and returns them solved with the
posteriors the projection reads, so the projection proceeds as on this machine.

The joint fits of an alignment's two directions (agreement, the symmetry constraint:
emc/runtime/modes/agreement.py, symmetric.py) open one executor per direction on one cluster
(`open_executor` with a list of problems): both cut the pairs at the same bounds and send shard s
of each to the same worker, so a pair's two E-steps (and its link posteriors, `posterior`) run
where its two shards live, and `joint_estep` runs a task over both shards at once (agreement's
whole E-step); with the symmetry constraint each shard's task carries its pairs' link shifts
(ExampleProjection.shard_derived). What a worker runs is in emc/dist/tasks.py.

Faults: a task that fails is retried by Dask; a worker that dies takes its shard with it, so the
client (which keeps every shard) scatters the lost shards to the surviving workers and runs the
E-step again. A fit therefore never loses an iteration to a dead worker.
"""
from __future__ import annotations

import operator
import time
from contextlib import contextmanager
from typing import Callable, Iterator

import numpy as np

from emc.dist.tasks import (Shard, counts_of, derived_of, log_z_of, picked, posteriors_of, shard_decode,
                            shard_estep, shard_joint, shard_posterior)
from emc.runtime.compiled import module_source
from emc.runtime.executor import EStepResult, LocalExecutor, chunk_bounds
from emc.runtime.job import Job, local_executor
from emc.runtime.params import ParamState
from emc.runtime.problem import Problem, bind
from emc.runtime.settings import FitSettings
from emc.spec.errors import EmcError
from emc.structures.sampling import shifted
from emc.structures.semiring import SUM

ATTEMPTS = 4


class DaskExecutor:
    """Runs E-steps and decoding on a Dask cluster; see the module docstring."""

    in_process = False

    def __init__(self, problem: Problem, client, shards: int | None = None, bounds: np.ndarray | None = None):
        """`bounds`: where the shards begin and end (another executor's over the same examples, so that
        each example's shards share a worker); else `shards` (default: one a worker) balanced by length."""
        self.problem = problem
        self.client = client
        self.threads = 1
        self.name, self.source = module_source(problem.model.checked, problem.model.code_layout)
        workers = sorted(client.scheduler_info()["workers"])
        if not workers:
            raise EmcError("the Dask cluster has no workers")
        if bounds is not None and bounds[-1] != problem.n_examples:
            raise EmcError("internal error: shard bounds of another number of examples")
        self.bounds = bounds if bounds is not None else chunk_bounds(problem.corpus.lengths(), shards or len(workers))
        self.shard_of = np.repeat(np.arange(len(self.bounds) - 1), np.diff(self.bounds))
        self.shards = [self._pack(lo, hi) for lo, hi in zip(self.bounds[:-1], self.bounds[1:])]
        self.data = [None] * len(self.shards)
        for s in range(len(self.shards)):
            self._scatter(s, [workers[s % len(workers)]])
        self.before_gather = None  # tests kill a worker here
        self.bytes_moved = 0
        # a spec's per-example constraint or posterior sparsity, whose duals travel with each shard's E-step
        self.example_projection = None

    def _pack(self, lo: int, hi: int) -> Shard:
        p = self.problem
        layout = p.layout
        trained = {"args": p.args, "labels": p.labels, "vocab_sizes": {k: len(v) for k, v in p.vocabs.items()},
                   "sparse": {t.name: (t.entry_rows, t.entry_outcomes) for t in layout.tables if t.sparse}}
        vocabs = {k: v.copy() for k, v in p.vocabs.items()}
        part = bind(p.model, p.corpus.subset(np.arange(lo, hi)), vocabs, p.options, trained=trained)
        if part.layout.size != layout.size or not np.array_equal(part.meta, p.meta):
            raise EmcError("internal error: a shard packed differently from the whole corpus")
        decoded = p.model.data.decoded_length(part.corpus, p.model.checked)
        marginals = p.model.data.posterior_length(part.corpus, p.model.checked, p.args)
        return Shard(part.ints, part.array_bounds, part.meta, part.corpus.lengths(), np.asarray(decoded, np.int64),
                     np.asarray(marginals, np.int64))

    def _scatter(self, s: int, workers=None) -> None:
        self.data[s] = self.client.scatter(self.shards[s], workers=workers, broadcast=False, hash=False)

    def _alive_workers(self) -> list[str]:
        return sorted(self.client.scheduler_info()["workers"])

    def _recover(self) -> None:
        """Re-send every shard whose data did not survive to a live worker."""
        workers = self._alive_workers()
        for s, future in enumerate(self.data):
            if future.status != "finished":
                self._scatter(s, [workers[s % len(workers)]])

    def _split(self, examples: np.ndarray):
        examples = np.asarray(examples, np.int64)
        shard = self.shard_of[examples]
        for s in np.unique(shard):
            positions = np.flatnonzero(shard == s)
            yield int(s), positions, examples[positions] - self.bounds[s]

    def prepare(self, params: ParamState) -> np.ndarray:
        """prepare's numbers, and the per-example projection's after them when it is set (the whole
        corpus's: each shard's is cut from it)."""
        prepared = self.problem.model.module.prepare(self.problem.meta, params.abi())
        return prepared if self.example_projection is None else self.example_projection.derived(prepared)

    def _shard_derived(self, whole: np.ndarray | None, s: int):
        """Shard s's derived vector, scattered (None without a projection: the worker prepares its own)."""
        if whole is None:
            return None
        part = self.example_projection.shard_derived(whole, int(self.bounds[s]), int(self.bounds[s + 1]))
        return self.client.scatter(part, hash=False)

    def warm_up(self, params: ParamState) -> float:
        t0 = time.perf_counter()
        # each worker's shortest example: its first may be a 3,000-token sentence whose DP takes minutes
        lengths = self.problem.corpus.lengths()
        shortest = [a + int(np.argmin(lengths[a:b])) for a, b in zip(self.bounds[:-1], self.bounds[1:]) if b > a]
        self.estep(params, np.array(shortest, np.int64), SUM, np.ones(len(shortest)))
        return time.perf_counter() - t0

    def _retried(self, what: str, run: Callable, *args, executors: list[DaskExecutor] | None = None):
        """run(*args), again after re-sending lost shards (of `executors`, default this one's) when it
        fails (at most ATTEMPTS times)."""
        for attempt in range(ATTEMPTS):
            try:
                return run(*args)
            except Exception as err:  # a dead worker surfaces as one of several Dask exceptions
                if attempt == ATTEMPTS - 1:
                    raise EmcError(f"{what} failed on the Dask cluster {ATTEMPTS} times: {err}") from err
                for executor in executors or [self]:
                    executor._recover()
        raise AssertionError("unreachable")

    def _reduced(self, counts: list) -> np.ndarray:
        """The sum of the count arrays (futures), added pairwise on the workers: a reduction tree."""
        while len(counts) > 1:
            pairs = [self.client.submit(operator.add, a, b, pure=False) for a, b in zip(counts[::2], counts[1::2])]
            counts = pairs + ([counts[-1]] if len(counts) % 2 else [])
        return counts[0].result()

    def estep(self, params: ParamState, examples: np.ndarray, semiring: int, weights: np.ndarray) -> EStepResult:
        return self._retried("the E-step", self._estep, params, examples, semiring, np.asarray(weights, np.float64))

    def _estep(self, params: ParamState, examples: np.ndarray, semiring: int, weights: np.ndarray) -> EStepResult:
        abi = self.client.scatter(params.abi(), broadcast=True, hash=False)
        whole = None if self.example_projection is None else self.prepare(params)
        parts, positions, shards = [], [], []
        for s, where, local in self._split(examples):
            # a sampling request seeds by example index: the shard's are numbered from its first
            parts.append(self.client.submit(shard_estep, self.data[s], self.name, self.source, abi,
                                            shifted(semiring, int(self.bounds[s])), local, weights[where],
                                            self._shard_derived(whole, s), retries=2, pure=False))
            positions.append(where)
            shards.append(s)
        if self.before_gather:
            self.before_gather(self)
        total = self._reduced([self.client.submit(counts_of, part, pure=False) for part in parts])
        log_z = np.empty(len(examples))
        for where, values in zip(positions, self.client.gather([self.client.submit(log_z_of, p, pure=False)
                                                                 for p in parts])):
            log_z[where] = values
        size = params.theta.nbytes + params.row_total.nbytes
        self.bytes_moved = size * len(self._alive_workers()) + total.nbytes * len(parts)
        if whole is not None and semiring == SUM:
            self._collect(whole, [self.client.submit(derived_of, p, pure=False) for p in parts], shards, examples,
                          weights)
        return EStepResult(total, log_z)

    def _collect(self, whole: np.ndarray, derived: list, shards: list[int], examples: np.ndarray,
                 weights: np.ndarray) -> None:
        """The shards' solved duals and posteriors (their derived vectors, futures) into the projection,
        as a local E-step leaves them."""
        for s, part in zip(shards, self.client.gather(derived)):
            self.example_projection.shard_collect(whole, part, int(self.bounds[s]), int(self.bounds[s + 1]))
            self.bytes_moved += 2 * part.nbytes  # sent and returned
        self.example_projection.collect(whole, examples, weights)

    def posterior(self, params: ParamState, examples: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """Posterior part marginals of each example (as LocalExecutor.posterior), computed where its
        shard lives and gathered here; a per-example projection's duals go and come back as in `estep`."""
        return self._retried("the posteriors", self._posterior, params, examples)

    def _posterior(self, params: ParamState, examples: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        abi = self.client.scatter(params.abi(), broadcast=True, hash=False)
        whole = None if self.example_projection is None else self.prepare(params)
        parts, positions, shards = [], [], []
        for s, where, local in self._split(examples):
            parts.append(self.client.submit(shard_posterior, self.data[s], self.name, self.source, abi, local,
                                            self._shard_derived(whole, s), retries=2, pure=False))
            positions.append(where)
            shards.append(s)
        if self.before_gather:
            self.before_gather(self)
        marginals: list[np.ndarray] = [None] * len(examples)
        log_z = np.empty(len(examples))
        for where, (out, offsets, part_log_z) in zip(positions, self.client.gather(
                [self.client.submit(posteriors_of, p, pure=False) for p in parts])):
            for q, position in enumerate(where):
                marginals[position] = out[offsets[q]:offsets[q + 1]]
            log_z[where] = part_log_z
            self.bytes_moved += out.nbytes
        if whole is not None:  # agreement's E-step reads posteriors (LocalExecutor.posterior collects too)
            self._collect(whole, [self.client.submit(derived_of, p, pure=False) for p in parts], shards,
                          np.asarray(examples, np.int64), np.ones(len(examples)))
        return marginals, log_z

    def joint_estep(self, others: list[DaskExecutor], params: list[ParamState], weights: list[np.ndarray],
                    task: Callable) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """A joint E-step of this executor's model and the others' over every example (the others cut
        at this one's bounds: a worker holds shard s of each). Per shard, on its worker,
        task(shards, modules, params, weights, derived), each a list with one entry an executor,
        returns (counts, log Z, derived) with one entry each; each executor's counts are added on the
        workers, its log Z gathered and its projection's duals collected. Returns (counts, log Z)
        of each executor. The agreement E-step of emc/runtime/modes/agreement.py is such a task."""
        executors = [self, *others]
        return self._retried("the joint E-step", self._joint_estep, executors, params,
                             [np.asarray(w, np.float64) for w in weights], task, executors=executors)

    def _joint_estep(self, executors: list[DaskExecutor], params: list[ParamState], weights: list[np.ndarray],
                     task: Callable) -> tuple[list[np.ndarray], list[np.ndarray]]:
        abis = [self.client.scatter(p.abi(), broadcast=True, hash=False) for p in params]
        wholes = [None if e.example_projection is None else e.prepare(p) for e, p in zip(executors, params)]
        modules = [(e.name, e.source) for e in executors]
        examples = np.arange(self.problem.n_examples)
        parts, shards = [], []
        for s, where, _ in self._split(examples):
            parts.append(self.client.submit(shard_joint, task, [e.data[s] for e in executors], modules, abis,
                                            [w[where] for w in weights],
                                            [e._shard_derived(whole, s) for e, whole in zip(executors, wholes)],
                                            retries=2, pure=False))
            shards.append(s)
        if self.before_gather:
            self.before_gather(self)
        totals = [self._reduced([self.client.submit(picked, p, 0, k, pure=False) for p in parts])
                  for k in range(len(executors))]
        log_z = [np.concatenate(self.client.gather([self.client.submit(picked, p, 1, k, pure=False) for p in parts]))
                 for k in range(len(executors))]
        for k, (e, whole) in enumerate(zip(executors, wholes)):
            e.bytes_moved = sum(p.theta.nbytes + p.row_total.nbytes for p in params) * len(self._alive_workers()) \
                + totals[k].nbytes * len(parts)
            if whole is not None:
                e._collect(whole, [self.client.submit(picked, p, 2, k, pure=False) for p in parts], shards,
                           examples, weights[k])
        return totals, log_z

    def decode(self, params: ParamState, examples: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        return self._retried("decoding", self._decode, params, examples)

    def _decode(self, params: ParamState, examples: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        abi = self.client.scatter(params.abi(), broadcast=True, hash=False)
        whole = None if self.example_projection is None else self.prepare(params)
        jobs = [(where, self.client.submit(shard_decode, self.data[s], self.name, self.source, abi, local,
                                           self._shard_derived(whole, s), retries=2, pure=False))
                for s, where, local in self._split(examples)]
        decoded: list[np.ndarray] = [None] * len(examples)
        scores = np.empty(len(examples))
        for where, (out, offsets, part_scores) in zip([w for w, _ in jobs], self.client.gather([f for _, f in jobs])):
            for q, position in enumerate(where):
                decoded[position] = out[offsets[q]:offsets[q + 1]]
            scores[where] = part_scores
        return decoded, scores


@contextmanager
def open_executor(job: Job, problem: Problem | list[Problem], settings: FitSettings,
                  say: Callable[[str], None]) -> Iterator[DaskExecutor | LocalExecutor | list[DaskExecutor]]:
    """The executor of an `emc fit` (emc/cli.py hands this to emc.runtime.job): a Dask cluster's
    when the job asks for one (--workers / --scheduler), disconnected when the fit ends, however it
    ends; else this machine's. Given a list of problems over the same examples (a joint fit's two
    alignment directions), a list of executors on one cluster, cut at the same bounds, whose shard s
    all live on one worker."""
    if not job.workers and not job.scheduler:
        with local_executor(job, problem, settings, say) as executor:
            yield executor
        return
    client = connect(job.workers, job.scheduler)
    try:
        if isinstance(problem, list):
            executors = [DaskExecutor(problem[0], client)]
            executors += [DaskExecutor(p, client, bounds=executors[0].bounds) for p in problem[1:]]
            say(f"emc: E-step on Dask: {len(executors[0].shards)} shards of each of {len(executors)} models "
                f"on {client.scheduler.address}")
            yield executors
        else:
            executor = DaskExecutor(problem, client)
            say(f"emc: E-step on Dask: {len(executor.shards)} shards on {client.scheduler.address}")
            yield executor
    finally:
        disconnect(client)


def connect(workers: int | None = None, scheduler: str | None = None):
    """A client: to an existing scheduler, or to a LocalCluster of `workers` single-threaded
    processes on this machine."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise EmcError("--workers / --scheduler need Dask: pip install 'emc[dask]'") from None
    if scheduler:
        return Client(scheduler)
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
    return Client(cluster)  # client.cluster is this cluster: disconnect() closes both


def disconnect(client) -> None:
    """Close a client, and the LocalCluster behind it when `connect` started one."""
    cluster = getattr(client, "cluster", None)
    client.close()
    if cluster is not None:
        cluster.close()
