"""The runtime's compiled loops over examples, written once against the E-step ABI
(emc/codegen/abi.py) and cached: any generated model plugs in through a function pointer.

Parallel loops run over a fixed partition of the examples into chunks, each with its own count
buffer, reduced in chunk order: results do not depend on which thread ran which chunk, so a run
is bit-identical to another with the same seed and thread count.
"""
import numpy as np
from numba import njit, prange, types

from emc.codegen.abi import (DECODE_FUNCTION, DERIVED, ESTEP_BATCH_FUNCTION, ESTEP_FUNCTION, INTS, LAYOUT, META,
                             PARAMS, POSTERIOR_FUNCTION, SAMPLE_FUNCTION)
from emc.structures.sampling import is_sampling, reseed, sample_base
from emc.structures.semiring import SUM

I64 = types.int64[::1]
F64 = types.float64[::1]


def _batch_estep(estep, examples, bounds, weights, ints, layout, meta, params, derived, semiring, counts, log_z):
    """Expected counts of examples[bounds[c]:bounds[c+1]] into counts[c]; log Z per example. A
    sampling request seeds each example's draws by its index (emc/structures/sampling.py)."""
    for c in prange(counts.shape[0]):
        buffer = (counts[c], np.zeros(0, np.uint8), np.zeros(0, np.int64))
        for q in range(bounds[c], bounds[c + 1]):
            if is_sampling(semiring):
                reseed(sample_base(semiring), examples[q])
            log_z[q] = estep(examples[q], ints, layout, meta, params, derived, semiring, weights[q], buffer)


def _batch_estep_grouped(estep_batch, examples, bounds, weights, ints, layout, meta, params, derived, counts, log_z,
                         deferred, left):
    """batch_estep under sum for a module with estep_batch: each chunk's examples in one call; the
    positions of those it leaves to estep_example go to deferred[bounds[c]:], left[c] of them
    (relative to bounds[c])."""
    for c in prange(counts.shape[0]):
        buffer = (counts[c], np.zeros(0, np.uint8), np.zeros(0, np.int64))
        a, b = bounds[c], bounds[c + 1]
        left[c] = estep_batch(examples[a:b], ints, layout, meta, params, derived, weights[a:b], buffer, log_z[a:b],
                              deferred[a:b])


def _batch_decode(decode, examples, out_offsets, ints, layout, meta, params, derived, out, scores):
    """The best structure of each example into out[out_offsets[q]:out_offsets[q+1]]."""
    for q in prange(examples.shape[0]):
        scores[q] = decode(examples[q], ints, layout, meta, params, derived, out[out_offsets[q]:out_offsets[q + 1]])


def _batch_sample(sample, examples, bases, out_offsets, ints, layout, meta, params, derived, out, scores):
    """A posterior draw of each example into out[out_offsets[q]:out_offsets[q+1]], seeded by
    (bases[q], examples[q]) as a sampling E-step seeds it (emc/structures/sampling.py)."""
    for q in prange(examples.shape[0]):
        reseed(bases[q], examples[q])
        scores[q] = sample(examples[q], ints, layout, meta, params, derived, out[out_offsets[q]:out_offsets[q + 1]])


def _batch_posterior(posterior, examples, out_offsets, ints, layout, meta, params, derived, out, scores):
    for q in prange(examples.shape[0]):
        scores[q] = posterior(examples[q], ints, layout, meta, params, derived, out[out_offsets[q]:out_offsets[q + 1]])


# name -> (loop, its signature): see __getattr__
_ESTEP_ARGUMENTS = (I64, I64, F64, INTS, LAYOUT, META, PARAMS, DERIVED, types.int64, types.float64[:, ::1], F64)
_OUT_ARGUMENTS = (I64, I64, INTS, LAYOUT, META, PARAMS, DERIVED)
_KERNELS = {
    "batch_estep": (_batch_estep, types.void(ESTEP_FUNCTION, *_ESTEP_ARGUMENTS)),
    "batch_estep_grouped": (_batch_estep_grouped, types.void(ESTEP_BATCH_FUNCTION, I64, I64, F64, INTS, LAYOUT, META,
                                                             PARAMS, DERIVED, types.float64[:, ::1], F64, I64, I64)),
    "batch_decode": (_batch_decode, types.void(DECODE_FUNCTION, *_OUT_ARGUMENTS, types.int32[::1], F64)),
    "batch_posterior": (_batch_posterior, types.void(POSTERIOR_FUNCTION, *_OUT_ARGUMENTS, F64, F64)),
    "batch_sample": (_batch_sample, types.void(SAMPLE_FUNCTION, I64, *_OUT_ARGUMENTS, types.int32[::1], F64)),
}


def estep_batch_for(module, count: int):
    """The module's estep_batch for a call over `count` examples: None when it has none, or when
    count falls short of its BATCH_MIN (a rule program's lanes, emc/structures/rules/lanes.py)."""
    estep_batch = getattr(module, "estep_batch", None)
    return estep_batch if estep_batch is not None and count >= getattr(module, "BATCH_MIN", 0) else None


def estep_for(module, semiring: int):
    """The E-step entry point the batch and online loops call under `semiring`: the module's
    estep_sum under sum where it has one (emc/codegen/abi.py), else estep_example."""
    return getattr(module, "estep_sum", module.estep_example) if semiring == SUM else module.estep_example


def compile_on_first_use(namespace: dict, loops: dict, **options):
    """A module __getattr__ under which loops[name] = (function, signature) is compiled, or loaded
    from numba's cache, on first use rather than at import: a command pays only for the loops it
    runs (a parallel loop costs seconds to compile, ~0.3 s to load from the cache). The compiled
    loop then replaces the lookup in `namespace`."""
    def __getattr__(name: str):
        if name not in loops:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        function, signature = loops[name]
        compiled = njit(signature, cache=True, **options)(function)
        namespace[name] = compiled
        return compiled
    return __getattr__


__getattr__ = compile_on_first_use(globals(), _KERNELS, parallel=True)
