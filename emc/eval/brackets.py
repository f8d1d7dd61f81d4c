"""Unlabeled bracket scores of induced trees against gold trees.

Conventions (Klein & Manning 2002, micro-averaged as in Klein & Manning 2004):
- a bracket is a span (i, j) over the sentence's symbols (fenceposts 0..n); each sentence's
  brackets are a set, so a gold unary chain counts once;
- no credit for the whole sentence or single symbols: every binary tree has them, so they are left
  out of both sides (`nontrivial`);
- precision, recall and F1 are micro-averaged: bracket counts summed over the corpus, then divided;
- crossing_brackets is the mean over sentences of the number of predicted brackets that cross a
  gold bracket ((a, b) crosses (c, d) when a < c < b < d or c < a < d < b).
"""
from __future__ import annotations

from typing import Iterable

Span = tuple[int, int]


def nontrivial(spans: Iterable[Span], n: int) -> set[Span]:
    """The spans that get credit: longer than one symbol and shorter than the sentence."""
    return {(i, j) for i, j in spans if 1 < j - i < n}


def right_branching(n: int) -> set[Span]:
    """The brackets of the right-branching tree (x0 (x1 (x2 ...))) over n symbols."""
    return {(i, n) for i in range(n - 1)}


def crosses(a: Span, b: Span) -> bool:
    return a[0] < b[0] < a[1] < b[1] or b[0] < a[0] < b[1] < a[1]


def bracket_scores(predicted: list[set[Span]], gold: list[set[Span]], lengths: list[int]) -> dict[str, float]:
    """precision, recall, f1 (fractions) and crossing_brackets (per sentence) over a corpus;
    spans that get no credit are dropped here, so callers may pass whole trees."""
    matched = n_predicted = n_gold = crossing = 0
    for pred, ref, n in zip(predicted, gold, lengths, strict=True):
        pred, ref = nontrivial(pred, n), nontrivial(ref, n)
        matched += len(pred & ref)
        n_predicted += len(pred)
        n_gold += len(ref)
        crossing += sum(1 for p in pred if any(crosses(p, g) for g in ref))
    precision = matched / n_predicted if n_predicted else 0.0
    recall = matched / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1,
            "crossing_brackets": crossing / len(lengths) if lengths else 0.0}
