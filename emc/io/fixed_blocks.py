"""The file format of a fixed block (`multinomial lm : P(s | m) fixed`, given by the spec's
`fixed "FILE"` or `emc fit --fixed lm=FILE`).

One entry per line: the value of each of the block's attributes, outcome first and then the
context, in the order the spec writes them, then the probability; fields separated by whitespace.
Blank lines and lines starting with `#` are ignored. For `P(s | m)` a line reads

    the 0 0.0523          # P(s = "the" | m = 0)

A token value is a word (as the tokenizer produces it); a latent value is what the structure
names it (a class id 0..K-1, or its label name). Entries not listed are 0. Entries for words that
the data never uses are skipped (they cannot change the posterior). Each context's probabilities
must sum to at most 1 (not to exactly 1: the rest of the mass may sit on words absent from the
data), and an entry may be given once.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from emc.io.readers import read_lines
from emc.spec.errors import DataError

# value -> index of one axis of the table; None: a value the data does not use (entry skipped);
# raises ValueError with a message for a value that cannot be on this axis.
AxisLookup = Callable[[str], "int | None"]

SUM_TOLERANCE = 1e-6


def read_fixed_table(path: str, block: str, outcome_axes: list[tuple[AxisLookup, int]],
                     context_axes: list[tuple[AxisLookup, int]]) -> np.ndarray:
    """The table as a flat array in emc's outcome-major layout (entry = outcome * rows + row,
    outcome and row mixed-radix over the axes in order); each axis is (lookup, size)."""
    axes = outcome_axes + context_axes
    rows = int(np.prod([size for _, size in context_axes], dtype=np.int64))
    outcomes = int(np.prod([size for _, size in outcome_axes], dtype=np.int64))
    table = np.zeros(rows * outcomes)
    seen: set[tuple[str, ...]] = set()
    context_total: dict[tuple[str, ...], float] = {}
    entries = 0
    for number, line in read_lines(path):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) != len(axes) + 1:
            raise DataError(path, number, f"block '{block}' needs {len(axes)} value(s) and a probability per line, "
                                          f"this line has {len(fields)} field(s)")
        probability = _probability(path, number, fields[-1])
        if tuple(fields[:-1]) in seen:
            raise DataError(path, number, f"this entry of block '{block}' was given before")
        seen.add(tuple(fields[:-1]))
        context = tuple(fields[len(outcome_axes):-1])
        context_total[context] = context_total.get(context, 0.0) + probability
        if context_total[context] > 1.0 + SUM_TOLERANCE:
            where = f" given {' '.join(context)}" if context else ""
            raise DataError(path, number, f"the probabilities of block '{block}'{where} sum to more than 1 by this line")
        indices = []
        for (lookup, _), value in zip(axes, fields[:-1]):
            try:
                index = lookup(value)
            except ValueError as err:
                raise DataError(path, number, str(err)) from None
            indices.append(index)
        entries += 1
        if any(i is None for i in indices):
            continue
        outcome = _mixed_radix(indices[:len(outcome_axes)], [s for _, s in outcome_axes])
        row = _mixed_radix(indices[len(outcome_axes):], [s for _, s in context_axes])
        table[outcome * rows + row] = probability
    if entries == 0:
        raise DataError(path, None, f"the file of fixed block '{block}' has no entries")
    return table


def _probability(path: str, number: int, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise DataError(path, number, f"'{text}' is not a number (the last field is the probability)") from None
    if not np.isfinite(value) or value < 0:
        raise DataError(path, number, f"the probability {text} is not a finite number >= 0")
    return value


def _mixed_radix(indices: list[int], sizes: list[int]) -> int:
    flat = 0
    for index, size in zip(indices, sizes):
        flat = flat * size + index
    return flat
