"""The substring index: every run of at most L symbols inside an example, numbered once.

A segment is a (position, length) pair; its word is the run of symbol ids it covers. `index_runs`
gives each such run an index in first-seen order with one pass of an open-addressing hash table
keyed by a rolling hash of the ids, where a hash hit is confirmed by comparing the runs themselves
(so two different words never share an index). Python then touches each distinct run once, to
name it, never each occurrence.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from emc.io.vocab import Vocabulary

NO_RUN = -1  # a (position, length) that crosses the end of its example

_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


@njit(inline="always")
def _mix(h):
    """splitmix64's finaliser: spreads the rolling hash over the table's low bits."""
    h ^= h >> np.uint64(31)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    return h


@njit(inline="always")
def _same_run(ids, a, b, length):
    for k in range(length):
        if ids[a + k] != ids[b + k]:
            return False
    return True


@njit(cache=True)
def index_runs(ids, offsets, max_length):
    """run_of[p * L + l - 1]: the index of the run ids[p:p+l] (NO_RUN when it leaves its example),
    and for each index its first occurrence (first_start, length)."""
    total = ids.shape[0]
    run_of = np.full(total * max_length, NO_RUN, np.int32)
    capacity = 16
    while capacity < 2 * total * max_length:
        capacity *= 2
    mask = np.uint64(capacity - 1)
    slots = np.full(capacity, -1, np.int64)  # index of the run stored in a slot, -1 empty
    hashes = np.empty(total * max_length, np.uint64)
    first_start = np.empty(total * max_length, np.int64)
    lengths = np.empty(total * max_length, np.int64)
    count = 0
    for ex in range(offsets.shape[0] - 1):
        end = offsets[ex + 1]
        for p in range(offsets[ex], end):
            h = np.uint64(0)
            for l in range(1, min(max_length, end - p) + 1):
                h = (h + np.uint64(ids[p + l - 1]) + np.uint64(1)) * _MULTIPLIER
                slot = _mix(h) & mask
                while True:
                    stored = slots[slot]
                    if stored < 0:
                        slots[slot] = count
                        hashes[count] = h
                        first_start[count] = p
                        lengths[count] = l
                        run_of[p * max_length + l - 1] = count
                        count += 1
                        break
                    if hashes[stored] == h and lengths[stored] == l and _same_run(ids, first_start[stored], p, l):
                        run_of[p * max_length + l - 1] = stored
                        break
                    slot = (slot + np.uint64(1)) & mask
    return run_of, first_start[:count].copy(), lengths[:count].copy()


def word_ids(ids: np.ndarray, offsets: np.ndarray, symbols: list[str], max_length: int,
             vocab: Vocabulary) -> np.ndarray:
    """The vocabulary id of every segment's word, laid out as `index_runs`'s run_of (NO_RUN past an
    example's end). A word is named by its symbols joined; new words are added to `vocab`."""
    run_of, first_start, lengths = index_runs(np.ascontiguousarray(ids, np.int32),
                                              np.ascontiguousarray(offsets, np.int64), max_length)
    pieces = [symbols[i] for i in ids]
    text = "".join(pieces)
    at = np.zeros(len(pieces) + 1, np.int64)  # where each symbol starts in `text`
    np.cumsum([len(piece) for piece in pieces], out=at[1:])
    begin, end = at[first_start].tolist(), at[first_start + lengths].tolist()
    names = [text[b:e] for b, e in zip(begin, end)]
    vocab_of_run = np.array(vocab.encode(names), np.int32)
    return np.where(run_of >= 0, vocab_of_run[np.maximum(run_of, 0)], NO_RUN).astype(np.int32)
