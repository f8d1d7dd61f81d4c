"""What a Dask worker runs (emc/dist/executor.py submits it): the packed shard of examples it holds,
and the E-step, decoding, posteriors or a joint task over it, with the pickers that take one array
of a task's result on the worker (so only that array travels).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from emc.runtime.compiled import load_source


@dataclass
class Shard:
    """One worker's examples, packed: what the generated code reads."""

    ints: np.ndarray
    array_bounds: np.ndarray
    meta: np.ndarray
    lengths: np.ndarray
    decoded_lengths: np.ndarray
    posterior_lengths: np.ndarray


def _derived(module, shard: Shard, params: tuple, derived: np.ndarray | None) -> np.ndarray:
    """prepare's numbers, or the shard's derived vector from the client (with a projection's duals):
    a copy, which the E-step fills and a retried task finds as it was sent."""
    return module.prepare(shard.meta, params) if derived is None else np.array(derived)


def shard_estep(shard: Shard, name: str, source: str, params: tuple, semiring: int, local: np.ndarray,
                weights: np.ndarray, derived: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from emc.runtime.kernels import batch_estep, estep_for

    module = load_source(name, source)
    counts = np.zeros((1, params[0].shape[0]))
    log_z = np.empty(len(local))
    bounds = np.array([0, len(local)], np.int64)
    derived = _derived(module, shard, params, derived)
    batch_estep(estep_for(module, semiring), local, bounds, weights, shard.ints, shard.array_bounds, shard.meta,
                params, derived, semiring, counts, log_z)
    return counts[0], log_z, derived


def shard_decode(shard: Shard, name: str, source: str, params: tuple, local: np.ndarray,
                 derived: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from emc.runtime.kernels import batch_decode

    module = load_source(name, source)
    offsets = np.concatenate([[0], np.cumsum(shard.decoded_lengths[local])]).astype(np.int64)
    out = np.zeros(offsets[-1], np.int32)
    scores = np.empty(len(local))
    batch_decode(module.decode_example, local, offsets, shard.ints, shard.array_bounds, shard.meta, params,
                 _derived(module, shard, params, derived), out, scores)
    return out, offsets, scores


def shard_posterior(shard: Shard, name: str, source: str, params: tuple, local: np.ndarray,
                    derived: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The examples' posterior part marginals end to end, their offsets, log Z and the derived vector."""
    from emc.runtime.kernels import batch_posterior

    module = load_source(name, source)
    offsets = np.concatenate([[0], np.cumsum(shard.posterior_lengths[local])]).astype(np.int64)
    out = np.zeros(offsets[-1])
    log_z = np.empty(len(local))
    derived = _derived(module, shard, params, derived)
    batch_posterior(module.posterior_example, local, offsets, shard.ints, shard.array_bounds, shard.meta, params,
                    derived, out, log_z)
    return out, offsets, log_z, derived


def posteriors_of(result: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return result[:3]


def counts_of(result: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    return result[0]


def log_z_of(result: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    return result[1]


def derived_of(result: tuple) -> np.ndarray:
    """An E-step's or posterior task's derived vector (its last result)."""
    return result[-1]


def picked(result: tuple, at: int, k: int) -> np.ndarray:
    """result[at][k]: one executor's array of a joint task's result, taken on its worker."""
    return result[at][k]


def shard_joint(task: Callable, shards: list[Shard], modules: list[tuple[str, str]], params: list[tuple],
                weights: list[np.ndarray], derived: list[np.ndarray | None]) -> tuple[tuple, tuple, tuple]:
    """A joint task on one worker's shards of the same examples, its modules loaded and each derived
    vector prepared (or copied) as in shard_estep."""
    loaded = [load_source(name, source) for name, source in modules]
    derived = [_derived(m, shard, p, d) for m, shard, p, d in zip(loaded, shards, params, derived)]
    return task(shards, loaded, params, weights, derived)
