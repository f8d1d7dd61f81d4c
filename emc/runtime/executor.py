"""Executors run the E-step (and decoding) over a batch of examples. The driver is handed one and
never knows where the work runs: LocalExecutor uses this machine's cores through numba threads;
emc.dist offers one on a Dask cluster.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numba
import numpy as np

from emc.runtime import kernels, online
from emc.runtime.params import ParamState
from emc.runtime.problem import Problem
from emc.structures.sampling import SEED_SPACE
from emc.structures.semiring import SUM


@dataclass
class EStepResult:
    counts: np.ndarray  # expected counts, laid out like theta
    log_z: np.ndarray  # log Z of each example of the batch (log best score under max)


def chunk_bounds(lengths: np.ndarray, chunks: int) -> np.ndarray:
    """Cut a sequence of examples into `chunks` contiguous runs of about equal total length."""
    chunks = max(1, min(chunks, len(lengths)))
    cumulative = np.concatenate([[0], np.cumsum(lengths + 1)])
    targets = cumulative[-1] * np.arange(chunks + 1) / chunks
    bounds = np.searchsorted(cumulative, targets, side="left")
    bounds[0], bounds[-1] = 0, len(lengths)
    return np.maximum.accumulate(bounds).astype(np.int64)


class LocalExecutor:
    """The E-step on this machine: examples are cut into one chunk per thread, each chunk sums
    into its own count buffer, and the buffers are added in chunk order (deterministic)."""

    in_process = True  # the online variants run their compiled passes against this process's data

    def __init__(self, problem: Problem, threads: int | None = None):
        self.problem = problem
        self.threads = threads or numba.get_num_threads()
        self.lengths = problem.corpus.lengths()
        # a spec's per-example constraint, projected in each E-step when set (emc/runtime/example_constraints.py)
        self.example_projection = None

    def warm_up(self, params: ParamState) -> float:
        """Compile (or load from numba's cache) the model's E-step, and its decoder when the data
        has gold annotations to evaluate against; the seconds taken. Without them a fit may never
        decode (a compile of seconds saved): the decoder then compiles on first use."""
        t0 = time.perf_counter()
        # the shortest example: the first may be a 3,000-token sentence whose DP takes minutes
        one = np.array([int(np.argmin(self.lengths)) if len(self.lengths) else 0], np.int64)
        self.estep(params, one, SUM, np.ones(1))
        if self.problem.corpus.gold:
            self.decode(params, one)
        return time.perf_counter() - t0

    def prepare(self, params: ParamState) -> np.ndarray:
        """prepare's numbers, and the per-example projection's after them when it is set."""
        prepared = self.problem.model.module.prepare(self.problem.meta, params.abi())
        return prepared if self.example_projection is None else self.example_projection.derived(prepared)

    # The online variants' passes (emc/runtime/online.py), fused E-step and update, over this
    # process's data: offered here so that the variants never reach into the generated module.

    def stepwise_pass(self, params: ParamState, order: np.ndarray, batch_size: int, updates: int, alpha: float,
                      weights: np.ndarray, buffer: tuple, log_z: np.ndarray) -> tuple[float, int]:
        """Mini-batches of `order` with stepwise EM's update after each (sum of weighted log Z,
        updates done so far)."""
        p = self.problem
        whole = online.whole_tables(p.model.module, p.meta)
        online.mark_whole_tables(buffer[1], whole)
        return online.stepwise_pass(*online.esteps(p.model.module, batch_size), order, batch_size, updates, alpha, weights, p.ints,
                                    p.array_bounds, p.meta, params.abi(), p.layout.row_of, whole, buffer, log_z,
                                    online.RESCALE_BELOW)

    def incremental_pass(self, params: ParamState, examples: np.ndarray, bounds: np.ndarray, blocks: np.ndarray,
                         weights: np.ndarray, thawed: np.ndarray, buffer: tuple, log_z: np.ndarray, pool: tuple,
                         row_spans: tuple, relisted: tuple | None = None, fill: np.ndarray | None = None):
        """Incremental EM's pass over `blocks` (their examples: examples[bounds[q]:bounds[q+1]]):
        a replay of their listed statistics, or with `relisted` and `fill` a listing pass; a row
        the pass empties is refilled through `row_spans` (online.spans_of_rows)."""
        p = self.problem
        largest = int(np.diff(bounds).max()) if len(bounds) > 1 else 0
        common = (*online.esteps(p.model.module, largest), examples, bounds, blocks, weights, p.ints, p.array_bounds, p.meta,
                  params.abi(), p.layout.row_of, thawed, buffer, log_z, pool, row_spans)
        if relisted is None:
            return online.incremental_replay_pass(*common)
        return online.incremental_listing_pass(*common, relisted, fill)

    def estep(self, params: ParamState, examples: np.ndarray, semiring: int, weights: np.ndarray) -> EStepResult:
        p = self.problem
        examples = np.ascontiguousarray(examples, np.int64)
        bounds = chunk_bounds(self.lengths[examples], self.threads)
        counts = np.zeros((len(bounds) - 1, p.layout.size))
        log_z = np.empty(len(examples))
        numba.set_num_threads(self.threads)
        module = p.model.module
        weights = np.ascontiguousarray(weights, np.float64)
        derived = self.prepare(params)
        common = (p.ints, p.array_bounds, p.meta, params.abi(), derived)
        one_by_one = np.arange(len(examples))  # the positions estep_example takes
        # the batched E-step serves posteriors only: samples are seeded per example by batch_estep
        estep_batch = kernels.estep_batch_for(module, len(examples) // len(counts))
        if semiring == SUM and estep_batch is not None:
            deferred, left = np.empty(len(examples), np.int64), np.zeros(len(counts), np.int64)
            kernels.batch_estep_grouped(estep_batch, examples, bounds, weights, *common, counts, log_z, deferred, left)
            one_by_one = np.concatenate([a + deferred[a:a + n] for a, n in zip(bounds[:-1], left)]).astype(np.int64)
        if len(one_by_one):  # into the same count buffers, in a fixed order
            chosen, chosen_log_z = examples[one_by_one], np.empty(len(one_by_one))
            chunks = chunk_bounds(self.lengths[chosen], len(counts))
            kernels.batch_estep(kernels.estep_for(module, semiring), chosen, chunks, weights[one_by_one], *common,
                                semiring, counts[:len(chunks) - 1], chosen_log_z)
            log_z[one_by_one] = chosen_log_z
        total = counts[0] if len(counts) == 1 else counts.sum(axis=0)
        if self.example_projection is not None and semiring == SUM:
            self.example_projection.collect(derived, examples, weights)
        return EStepResult(total, log_z)

    def decode(self, params: ParamState, examples: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """The best structure of each example, and its log score."""
        p = self.problem
        examples = np.ascontiguousarray(examples, np.int64)
        sizes = p.model.data.decoded_length(p.corpus, p.model.checked)[examples]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        out = np.zeros(offsets[-1], np.int32)
        scores = np.empty(len(examples))
        numba.set_num_threads(self.threads)
        kernels.batch_decode(p.model.module.decode_example, examples, offsets, p.ints, p.array_bounds, p.meta,
                     params.abi(), self.prepare(params), out, scores)
        return [out[a:b] for a, b in zip(offsets[:-1], offsets[1:])], scores

    def sample(self, params: ParamState, examples: np.ndarray, bases: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """One structure of each example drawn from the posterior (as decode encodes the best),
        seeded by (bases[q], examples[q]); and log Z. An example may be listed more than once,
        with different bases."""
        p = self.problem
        examples = np.ascontiguousarray(examples, np.int64)
        bases = np.ascontiguousarray(np.asarray(bases, np.int64) % SEED_SPACE)
        sizes = p.model.data.decoded_length(p.corpus, p.model.checked)[examples]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        out = np.zeros(offsets[-1], np.int32)
        scores = np.empty(len(examples))
        numba.set_num_threads(self.threads)
        kernels.batch_sample(p.model.module.sample_example, examples, bases, offsets, p.ints, p.array_bounds, p.meta,
                     params.abi(), self.prepare(params), out, scores)
        return [out[a:b] for a, b in zip(offsets[:-1], offsets[1:])], scores

    def posterior(self, params: ParamState, examples: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """Posterior part marginals of each example (in the structure's encoding), and log Z."""
        p = self.problem
        examples = np.ascontiguousarray(examples, np.int64)
        sizes = p.model.data.posterior_length(p.corpus, p.model.checked, p.args)[examples]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        out = np.zeros(offsets[-1])
        scores = np.empty(len(examples))
        numba.set_num_threads(self.threads)
        derived = self.prepare(params)
        kernels.batch_posterior(p.model.module.posterior_example, examples, offsets, p.ints, p.array_bounds, p.meta,
                        params.abi(), derived, out, scores)
        if self.example_projection is not None:  # agreement training's E-step reads posteriors
            self.example_projection.collect(derived, examples, np.ones(len(examples)))
        return [out[a:b] for a, b in zip(offsets[:-1], offsets[1:])], scores
