"""Examples made of several fields on one line, `v ||| n` (as in bitext: emc/io/bitext.py), each
field a whitespace-separated token sequence with its own vocabulary. A blank line, or a line with
an empty field, is kept as an empty example (fit skips it, decode prints an empty line)."""
from __future__ import annotations

from array import array

import numpy as np

from emc.io.corpus import TokenField, TokenFieldBuilder
from emc.io.readers import read_lines
from emc.io.vocab import Vocabulary
from emc.spec.errors import DataError

SEPARATOR = "|||"


def read_fields(path: str, vocabs: list[Vocabulary], names: list[str]) -> tuple[list[TokenField], np.ndarray]:
    """Each line's fields, encoded with vocabs[i] for field i (named names[i] in messages), and the
    line number of each example."""
    builders = [TokenFieldBuilder(v) for v in vocabs]
    lines = array("q")
    want = f" {SEPARATOR} ".join(names)
    for number, line in read_lines(path):
        if not line.strip():
            parts = [""] * len(builders)
        else:
            parts = line.split(SEPARATOR)
            if len(parts) != len(builders):
                raise DataError(path, number, f"expected {len(builders)} fields `{want}`, found {len(parts)} "
                                              f"(fields are separated by '{SEPARATOR}')")
        for builder, part in zip(builders, parts):
            builder.add(part.split())
        lines.append(number)
    return [b.field() for b in builders], np.frombuffer(lines, np.int64).copy()
