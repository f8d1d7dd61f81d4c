"""Metrics for word segmentation against gold segmentations (Brent 1999; Goldwater et al. 2009).

- token precision / recall / F1: a predicted word is correct when both of its edges are gold word
  edges and no gold edge falls inside it (the same word token at the same place).
- boundary precision / recall / F1: over the boundaries inside utterances (an utterance's own
  edges are known and not scored).

Segmentations are given as word-start flags over the concatenated symbols of every example
(nonzero: a word starts at this symbol), with `offsets` marking the examples.
"""
from __future__ import annotations

import numpy as np


def _f1(correct: int, predicted: int, gold: int) -> tuple[float, float, float]:
    precision = correct / predicted if predicted else 0.0
    recall = correct / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def segmentation_scores(predicted: np.ndarray, gold: np.ndarray, offsets: np.ndarray) -> dict[str, float]:
    """Token and boundary precision, recall and F1 of predicted word starts against gold ones."""
    predicted = np.asarray(predicted) != 0
    gold = np.asarray(gold) != 0
    if predicted.shape != gold.shape:
        raise ValueError(f"{len(predicted)} predicted symbols for {len(gold)} gold symbols")
    edges = np.zeros(len(gold) + 1, bool)  # utterance edges, as positions 0..N
    edges[np.asarray(offsets)] = True
    starts_p = predicted | edges[:-1]
    starts_g = gold | edges[:-1]

    word_starts = np.flatnonzero(starts_p)
    word_ends = np.append(word_starts[1:], len(gold))  # the next start is this word's end
    gold_edge = np.append(starts_g, True)  # an example's end is the next one's start, or N
    gold_before = np.concatenate([[0], np.cumsum(starts_g)])  # gold starts at positions < p
    inside = gold_before[word_ends] - gold_before[word_starts + 1]
    correct = int(np.count_nonzero(starts_g[word_starts] & gold_edge[word_ends] & (inside == 0)))
    token_p, token_r, token_f = _f1(correct, len(word_starts), int(np.count_nonzero(starts_g)))

    internal_p = starts_p & ~edges[:-1]
    internal_g = starts_g & ~edges[:-1]
    hits = int(np.count_nonzero(internal_p & internal_g))
    boundary_p, boundary_r, boundary_f = _f1(hits, int(np.count_nonzero(internal_p)), int(np.count_nonzero(internal_g)))
    return {"token_precision": token_p, "token_recall": token_r, "token_f1": token_f,
            "boundary_precision": boundary_p, "boundary_recall": boundary_r, "boundary_f1": boundary_f}
