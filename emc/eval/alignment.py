"""Word-alignment quality against gold links with sure (S) and possible (P) links, S within P
(Och & Ney 2003):

    precision = |A & P| / |A|,  recall = |A & S| / |S|,
    AER = 1 - (|A & S| + |A & P|) / (|A| + |S|)

summed over the corpus before dividing. Lower AER is better; a predicted link counts as right
when it is possible, and the sure links are the ones that must be found.
"""
from __future__ import annotations

from typing import Iterable


def alignment_scores(predicted: Iterable[Iterable[tuple[int, int]]],
                     gold: Iterable[tuple[frozenset, frozenset]]) -> dict[str, float]:
    """{"aer", "precision", "recall"} of predicted link sets against (sure, possible) gold."""
    found = sure_found = possible_found = n_sure = 0
    for links, (sure, possible) in zip(predicted, gold):
        links = set(links)
        found += len(links)
        n_sure += len(sure)
        sure_found += len(links & sure)
        possible_found += len(links & possible)
    return {
        "aer": 1.0 - (sure_found + possible_found) / (found + n_sure) if found + n_sure else 0.0,
        "precision": possible_found / found if found else 0.0,
        "recall": sure_found / n_sure if n_sure else 0.0,
    }
