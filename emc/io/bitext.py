"""Parallel text and word alignments on disk.

Bitext comes in two forms:
- one file, `source ||| target` per line (the form fast_align and cdec read);
- two files of the same number of lines, one sentence per line (`--source`, `--target`).
Tokens are separated by whitespace. A pair with an empty side is kept as an empty example (fit
skips it; decode prints an empty line for it), so output lines match input lines.

Alignments are sets of links (i, j): i a source position, j a target position, both 0-based.
- Pharaoh format: `i-j` per link, separated by spaces, one line per pair (a blank line for a
  pair without links); `i?j` marks a possible (not sure) link in a gold file.
- NAACL 2003 format (Mihalcea & Pedersen 2003): `SENT I J [S|P] [confidence]` per line, positions
  and sentence ids 1-based, I on the source side and J on the target side; S (the default) is a
  sure link, P a possible one. Sentence k is the pair on line k of the bitext.
Gold alignments are (sure, possible) with sure a subset of possible (a sure link is possible).
"""
from __future__ import annotations

from array import array

import numpy as np

from emc.io.corpus import TokenField, TokenFieldBuilder
from emc.io.readers import read_lines, require_examples
from emc.io.vocab import Vocabulary
from emc.spec.errors import DataError

SEPARATOR = "|||"

Links = frozenset  # of (source position, target position)


def read_bitext(path: str, source: Vocabulary, target: Vocabulary) -> tuple[TokenField, TokenField, np.ndarray]:
    """A `source ||| target` file: (source side, target side, line number of each pair)."""
    sides = TokenFieldBuilder(source), TokenFieldBuilder(target)
    lines = array("q")
    for number, line in read_lines(path):
        if not line.strip():
            left, right = "", ""
        else:
            parts = line.split(SEPARATOR)
            if len(parts) != 2:
                found = "no" if len(parts) == 1 else str(len(parts) - 1)
                raise DataError(path, number, f"expected `source {SEPARATOR} target`, found {found} '{SEPARATOR}' "
                                              f"(give the two sides as two files with --source and --target)")
            left, right = parts
        sides[0].add(left.split())
        sides[1].add(right.split())
        lines.append(number)
    _require_pairs(path, sides)
    return sides[0].field(), sides[1].field(), np.frombuffer(lines, np.int64).copy()


def read_parallel(source_path: str, target_path: str, source: Vocabulary,
                  target: Vocabulary) -> tuple[TokenField, TokenField, np.ndarray]:
    """Two files with one sentence per line, line k of one the translation of line k of the other."""
    sides = TokenFieldBuilder(source), TokenFieldBuilder(target)
    for side, path in zip(sides, (source_path, target_path)):
        for _, line in read_lines(path):
            side.add(line.split())
    counts = [len(s) for s in sides]
    if counts[0] != counts[1]:
        shorter = source_path if counts[0] < counts[1] else target_path
        raise DataError(shorter, min(counts) + 1, f"the file ends here, but {source_path} has {counts[0]} lines and "
                                                  f"{target_path} has {counts[1]}: the two sides must have one line per pair")
    _require_pairs(f"{source_path} and {target_path}", sides)
    return sides[0].field(), sides[1].field(), np.arange(1, counts[0] + 1, dtype=np.int64)


def _require_pairs(path: str, sides: tuple[TokenFieldBuilder, TokenFieldBuilder]) -> None:
    lengths = [np.frombuffer(s.lengths, np.int64) for s in sides]
    require_examples(path, int(np.count_nonzero((lengths[0] > 0) & (lengths[1] > 0))), "sentence pair")


def read_gold(path: str, fmt: str, lengths: tuple[np.ndarray, np.ndarray]) -> list[tuple[Links, Links]]:
    """Gold links per pair, as (sure, possible); `lengths` are the (source, target) lengths of
    the pairs, against which every link is checked."""
    if fmt == "naacl":
        gold = _read_naacl(path, len(lengths[0]))
    elif fmt == "pharaoh":
        gold = _read_pharaoh_gold(path, len(lengths[0]))
    else:
        raise DataError(path, None, f"unknown gold format '{fmt}' (naacl or pharaoh)")
    for pair, ((sure, possible), where) in enumerate(gold):
        for i, j in possible:
            if not (0 <= i < lengths[0][pair] and 0 <= j < lengths[1][pair]):
                raise DataError(path, where.get((i, j)), f"link {i}-{j} (0-based) is outside pair {pair + 1}, whose "
                                                         f"sides have {lengths[0][pair]} and {lengths[1][pair]} words")
    return [links for links, _ in gold]


def _read_naacl(path: str, pairs: int):
    sure: list[set] = [set() for _ in range(pairs)]
    possible: list[set] = [set() for _ in range(pairs)]
    where: list[dict] = [{} for _ in range(pairs)]
    for number, line in read_lines(path):
        cols = line.split()
        if not cols:
            continue
        if len(cols) < 3 or not all(c.isdigit() for c in cols[:3]) or (len(cols) > 3 and cols[3] not in ("S", "P")):
            raise DataError(path, number, "expected `SENT I J [S|P]` (NAACL format: 1-based sentence and positions)")
        sent, i, j = int(cols[0]), int(cols[1]) - 1, int(cols[2]) - 1
        if not 1 <= sent <= pairs:
            raise DataError(path, number, f"sentence {sent} does not exist: the bitext has {pairs} pairs")
        link = (i, j)
        possible[sent - 1].add(link)
        if len(cols) == 3 or cols[3] == "S":
            sure[sent - 1].add(link)
        where[sent - 1].setdefault(link, number)
    return [((frozenset(s), frozenset(p)), w) for s, p, w in zip(sure, possible, where)]


def _read_pharaoh_gold(path: str, pairs: int):
    out = []
    for number, line in read_lines(path):
        sure, possible = set(), set()
        for token in line.split():
            sep = "-" if "-" in token else "?"
            left, _, right = token.partition(sep)
            if not (left.isdigit() and right.isdigit()):
                raise DataError(path, number, f"'{token}' is not a link `i-j` (sure) or `i?j` (possible)")
            link = (int(left), int(right))
            possible.add(link)
            if sep == "-":
                sure.add(link)
        out.append(((frozenset(sure), frozenset(possible)), {link: number for link in possible}))
    if len(out) != pairs:
        raise DataError(path, None, f"has {len(out)} lines for {pairs} sentence pairs (one line per pair)")
    return out


def swap_links(links: Links) -> Links:
    """The links seen from the other side: (j, i) for (i, j)."""
    return frozenset((j, i) for i, j in links)


def pharaoh(links) -> str:
    """`i-j` links in order of source, then target position."""
    return " ".join(f"{i}-{j}" for i, j in sorted(links))
