"""Chunk spans from B-/I-/O tags (CoNLL-2000) and span precision / recall / F1.

A chunk starts at a B- tag, or at an I- tag whose type differs from the chunk before it (the
CoNLL convention for a chunk that begins without its B-), and runs over the I- tags of its type
that follow. An `O` token is a chunk of its own, so every token lies in exactly one span and a
segmentation of the sentence can be scored against the chunks directly.
"""
from __future__ import annotations

from typing import Sequence


def chunk_spans(tags: Sequence[str]) -> list[tuple[int, int]]:
    """The chunks of one sentence as token spans [i, j)."""
    spans = []
    start, kind = None, None
    for i, tag in enumerate(tags):
        prefix, _, name = tag.partition("-")
        continues = prefix == "I" and start is not None and name == kind
        if not continues:
            if start is not None:
                spans.append((start, i))
            start, kind = i, (name if prefix in ("B", "I") else None)
        if prefix not in ("B", "I"):
            spans.append((start, i + 1))
            start, kind = None, None
    if start is not None:
        spans.append((start, len(tags)))
    return spans


def span_scores(gold: Sequence[Sequence[tuple[int, int]]], predicted: Sequence[Sequence[tuple[int, int]]],
                prefix: str) -> dict[str, float]:
    """Precision, recall and F1 of predicted spans (exact matches) over a corpus, named
    `<prefix>_precision` and so on."""
    correct = sum(len(set(g) & set(p)) for g, p in zip(gold, predicted))
    n_gold = sum(len(set(g)) for g in gold)
    n_predicted = sum(len(set(p)) for p in predicted)
    precision = correct / n_predicted if n_predicted else 0.0
    recall = correct / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {f"{prefix}_precision": precision, f"{prefix}_recall": recall, f"{prefix}_f1": f1}
