"""Dense feature vectors from a text file, one word per line: `word value value ...` (the format
word2vec, GloVe and fastText write; a word2vec header line `count dimension` is skipped).

A featured block reads them through the `vectors("file")` view (emc/runtime/blocks/features.py): each
dimension is a real-valued feature of the word, conjoined with the block's row.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from emc.io.readers import read_lines
from emc.spec.errors import DataError


@dataclass(frozen=True)
class Vectors:
    """Word -> row of `values` (words x dimension)."""

    path: str
    index: dict[str, int]
    values: np.ndarray

    @property
    def dimension(self) -> int:
        return self.values.shape[1]

    def lookup(self, word: str) -> np.ndarray | None:
        """The word's vector, else its lowercase form's, else None (the word then has no dense
        features: all its values are 0)."""
        row = self.index.get(word)
        if row is None:
            row = self.index.get(word.lower())
        return None if row is None else self.values[row]


@functools.lru_cache(maxsize=8)
def read_vectors(path: str) -> Vectors:
    """The vectors of a file; errors name the file and line."""
    if not Path(path).is_file():
        raise DataError(path, None, "no such file of word vectors (`word value value ...` per line)")
    index: dict[str, int] = {}
    first_line: dict[str, int] = {}
    rows: list[list[float]] = []
    dimension = None
    for number, line in read_lines(path):
        fields = line.split()
        if not fields:
            continue
        if number == 1 and len(fields) == 2 and all(f.isdigit() for f in fields):
            continue  # word2vec's header: count and dimension
        try:
            values = [float(f) for f in fields[1:]]
        except ValueError:
            bad = next(f for f in fields[1:] if not _is_number(f))
            raise DataError(path, number, f"'{bad}' is not a number: write `word value value ...`") from None
        if not values:
            raise DataError(path, number, f"the word '{fields[0]}' has no values: write `word value value ...`")
        if not all(math.isfinite(v) for v in values):
            raise DataError(path, number, f"the vector of '{fields[0]}' has a value that is not finite")
        if dimension is None:
            dimension = len(values)
        elif len(values) != dimension:
            raise DataError(path, number, f"the vector of '{fields[0]}' has {len(values)} values; the lines "
                                          f"before have {dimension}")
        if fields[0] in index:
            raise DataError(path, number, f"the word '{fields[0]}' has a vector already (line "
                                          f"{first_line[fields[0]]})")
        index[fields[0]], first_line[fields[0]] = len(rows), number
        rows.append(values)
    if not rows:
        raise DataError(path, None, "has no vectors (`word value value ...` per line)")
    return Vectors(path, index, np.array(rows, dtype=float))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True

