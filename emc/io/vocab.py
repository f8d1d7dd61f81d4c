"""Vocabularies: value <-> id for every space read from data (tokens, views, substrings, ...).

Policy for unknown values (documented in README "Unknown words"): id 0 of every vocabulary is
`<unk>`. A vocabulary grows while a corpus is read, also at decode time (so views such as
`x.suffix(3)` can be computed for a word never seen in training); when a corpus is packed for a
trained model, every id the model was not trained on becomes 0, and the `<unk>` outcome of each
learned table is given the summed probability of the outcomes seen once in training (hapax
legomena), the usual estimate for a new word, or the row's smallest probability when there were
none (see emc/runtime/params.py: unknown_outcomes); then each 0 of such a table becomes a small
share of the value's training frequency, so that a value seen in training is possible in every row
(emc/runtime/unseen.py).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

UNK = "<unk>"


class Vocabulary:
    """Values in first-seen order after `<unk>`, with training counts."""

    def __init__(self, values: list[str] | None = None, counts: list[int] | None = None):
        values = list(values or [])
        if not values or values[0] != UNK:
            values = [UNK] + [v for v in values if v != UNK]
        self.values = values
        self.index: dict[str, int] = {v: i for i, v in enumerate(self.values)}
        self.counts = np.zeros(len(self.values), np.int64) if counts is None else np.asarray(counts, np.int64)

    def __len__(self) -> int:
        return len(self.values)

    def add(self, value: str) -> int:
        i = self.index.get(value)
        if i is None:
            i = self.index[value] = len(self.values)
            self.values.append(value)
        return i

    def encode(self, values: list[str]) -> list[int]:
        index, add = self.index, self.add
        return [index[v] if v in index else add(v) for v in values]

    def lookup(self, value: str) -> int:
        return self.index.get(value, 0)

    def count(self, ids: np.ndarray) -> None:
        """Record training counts (for the hapax estimate of unknown words)."""
        self.counts = np.bincount(ids, minlength=len(self.values)).astype(np.int64)

    def copy(self) -> "Vocabulary":
        return Vocabulary(list(self.values), self.counts.copy())

    def to_json(self) -> dict:
        return {"values": self.values, "counts": self.counts.tolist()}

    @staticmethod
    def from_json(data: dict) -> "Vocabulary":
        return Vocabulary(data["values"], data["counts"])


def vocabularies_json(vocabs: dict[str, Vocabulary]) -> str:
    """vocab.json's text (load_vocabularies reads it back)."""
    return json.dumps({name: v.to_json() for name, v in vocabs.items()}, ensure_ascii=False)


def load_vocabularies(path: Path) -> dict[str, Vocabulary]:
    """vocab.json's vocabularies; ValueError says how the file is not what vocabularies_json writes
    (a duplicate value would give two ids one word, and decode it as either)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("not an object of vocabularies (name -> {values, counts})")
    out = {}
    for name, entry in data.items():
        values = entry.get("values") if isinstance(entry, dict) else None
        counts = entry.get("counts") if isinstance(entry, dict) else None
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ValueError(f"vocabulary '{name}' has no list of values (strings)")
        # values added after counting (a segmentation's substrings, while packing) have no count
        if not isinstance(counts, list) or len(counts) > len(values) or \
                not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
            raise ValueError(f"vocabulary '{name}' has no list of counts (whole numbers >= 0, one per value "
                             f"counted)")
        if len(set(values)) != len(values):
            seen: set[str] = set()
            twice = next(v for v in values if v in seen or seen.add(v))
            raise ValueError(f"vocabulary '{name}' holds '{twice}' twice")
        if not values or values[0] != UNK:
            raise ValueError(f"vocabulary '{name}' does not start with {UNK}")
        out[name] = Vocabulary.from_json(entry)
    return out
