"""Metrics for induced tags (and clusters) against gold labels.

- many-to-one: each induced state is mapped to the gold tag it most often co-occurs with.
- one-to-one: states and tags matched one-for-one (Hungarian algorithm) to maximise agreement;
  states or tags left over count as wrong.
- variation of information (Meila 2003), in bits: H(pred | gold) + H(gold | pred); 0 is perfect.
- accuracy: when states are the gold tags themselves (a tag dictionary).
"""
from __future__ import annotations

import numpy as np

from emc.eval.assignment import max_weight_matching


def contingency(predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    predicted = np.asarray(predicted, np.int64)
    gold = np.asarray(gold, np.int64)
    if predicted.shape != gold.shape:
        raise ValueError(f"{len(predicted)} predicted labels for {len(gold)} gold labels")
    table = np.zeros((predicted.max(initial=0) + 1, gold.max(initial=0) + 1), np.int64)
    np.add.at(table, (predicted, gold), 1)
    return table


def many_to_one(table: np.ndarray) -> float:
    total = table.sum()
    return float(table.max(axis=1).sum() / total) if total else 0.0


def one_to_one(table: np.ndarray) -> float:
    total = table.sum()
    if not total:
        return 0.0
    rows, cols = max_weight_matching(table.astype(np.float64))
    return float(table[rows, cols].sum() / total)


def variation_of_information(table: np.ndarray) -> float:
    total = table.sum()
    if not total:
        return 0.0
    p = table / total
    pp, pg = p.sum(axis=1), p.sum(axis=0)
    nz = p > 0
    mutual = float((p[nz] * np.log2(p[nz] / np.outer(pp, pg)[nz])).sum())
    h_pred = -float((pp[pp > 0] * np.log2(pp[pp > 0])).sum())
    h_gold = -float((pg[pg > 0] * np.log2(pg[pg > 0])).sum())
    return h_pred + h_gold - 2 * mutual


def tagging_scores(predicted: np.ndarray, gold: np.ndarray, direct_gold: np.ndarray | None = None) -> dict[str, float]:
    table = contingency(predicted, gold)
    scores = {"many_to_one": many_to_one(table), "one_to_one": one_to_one(table),
              "vi": variation_of_information(table)}
    if direct_gold is not None:
        scores["accuracy"] = float(np.mean(predicted == direct_gold)) if len(gold) else 0.0
    return scores
