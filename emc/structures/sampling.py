"""Posterior sampling, the third operation of every structure's DP beside sum and max.

A DP samples by running its sum-semiring forward (inside) pass and then drawing the structure
backwards (top-down) from it: forward-filtering backward-sampling for chains and segmentations,
one draw per column for IBM-1 links, top-down split draws for span trees, one draw for a label.

The E-step asks for samples through its `semiring` argument, so the E-step ABI, the executors and
the Dask workers carry the request unchanged: `sampling(samples, base)` is an int64 above MAX
that says "the average 0/1 indicators of `samples` structures drawn from the posterior", and the
DPs' `marginals` functions recognise it (`is_sampling`). The log Z they return is the exact sum
semiring's, which the forward pass computes anyway.

Determinism: before an example is sampled, the calling kernel seeds numba's generator (one per
thread) with (base + example index) mod SEED_SPACE, so the draws of an example depend only on the
base and its index: not on threads, chunking or Dask shards (a shard shifts the base by its first
example, `shifted`). Successive MT19937 seeds give unrelated streams (its seeding scrambles them).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from emc.structures.semiring import MAX

SAMPLE = MAX + 1  # the smallest sampling request
SEED_SPACE = 2 ** 31 - 1
MAX_SAMPLES = 2 ** 20  # samples per example per E-step (the request packs base and count in an int64)
ONE_SAMPLE = SAMPLE + 1  # sampling(1, 0): one draw, for a caller that seeded the generator itself


def require_sampler(module, what: str) -> None:
    """Refuse a model whose structure cannot sample yet (its DP would not recognise a request)."""
    if not hasattr(module, "sample_example"):
        from emc.spec.errors import EmcError

        raise EmcError(f"{what} needs posterior sampling, which the {getattr(module, 'STRUCTURE', 'model')!s} "
                       "structure does not offer yet (see docs/adding-a-structure.md)")


def sampling(samples: int, base: int) -> int:
    """The `semiring` value asking for `samples` posterior draws per example, seeded by `base`."""
    if not 1 <= samples < MAX_SAMPLES:
        raise ValueError(f"samples must be between 1 and {MAX_SAMPLES - 1}, not {samples}")
    return SAMPLE + samples + MAX_SAMPLES * (int(base) % SEED_SPACE)


def shifted(semiring: int, offset: int) -> int:
    """The same request for examples numbered from `offset` (a Dask shard's first example)."""
    if semiring < SAMPLE:
        return semiring
    return sampling(sample_count(semiring), sample_base(semiring) + offset)


@njit(inline="always")
def is_sampling(semiring):
    return semiring >= SAMPLE


@njit(inline="always")
def sample_count(semiring):
    return (semiring - SAMPLE) % MAX_SAMPLES


@njit(inline="always")
def sample_base(semiring):
    return (semiring - SAMPLE) // MAX_SAMPLES


@njit(cache=True)
def reseed(base, example):
    """Seed this thread's generator for one example's draws."""
    np.random.seed((base + example) % SEED_SPACE)


@njit(cache=True)
def draw(weights, count):
    """An index q < count with probability weights[q] / sum(weights[:count]) (weights >= 0, not
    all 0). Round-off past the last positive weight lands on it, never on a zero weight."""
    total = 0.0
    for q in range(count):
        total += weights[q]
    u = np.random.random() * total
    last = -1
    for q in range(count):
        if weights[q] > 0.0:
            last = q
            u -= weights[q]
            if u < 0.0:
                return q
    return last


@njit(cache=True)
def draw_log(log_weights, count, scratch):
    """draw() for log-space weights (-inf: impossible); `scratch` holds at least `count` values."""
    best = -np.inf
    for q in range(count):
        if log_weights[q] > best:
            best = log_weights[q]
    for q in range(count):
        scratch[q] = np.exp(log_weights[q] - best) if log_weights[q] > -np.inf else 0.0
    return draw(scratch, count)
