"""Attachment accuracy of dependency trees, and the attachment baselines.

Trees are lists of heads, one per word, numbered from 1 (0: the root), as CoNLL writes them.
Directed accuracy: the fraction of words whose predicted head is the gold head. Undirected: the
fraction of predicted attachments (word, head) that are gold attachments in either direction,
the root attachment (word, 0) included (Klein & Manning 2004). Both are micro-averaged over the
words of the sentences that have a gold tree (None: no gold tree, not scored).
"""
from __future__ import annotations

from typing import Sequence


def attachment_scores(predicted: Sequence[Sequence[int]], gold: Sequence[Sequence[int] | None]) -> dict[str, float]:
    directed = undirected = words = 0
    for pred, true in zip(predicted, gold):
        if true is None or not len(pred):
            continue
        if len(pred) != len(true):
            raise ValueError(f"a predicted tree of {len(pred)} words against a gold tree of {len(true)}")
        edges = {frozenset((w + 1, h)) for w, h in enumerate(true)}
        for w, h in enumerate(pred):
            directed += int(true[w] == h)
            undirected += int(frozenset((w + 1, h)) in edges)
        words += len(pred)
    if words == 0:
        return {}
    return {"directed": directed / words, "undirected": undirected / words}


def left_attach(n: int) -> list[int]:
    """Every word's head is the word before it; the first word is the root."""
    return list(range(n))


def right_attach(n: int) -> list[int]:
    """Every word's head is the word after it; the last word is the root."""
    return [w + 2 for w in range(n - 1)] + [0] if n else []
