"""Telling a file's format from its first lines, to catch a file read in the wrong one: a CoNLL
file read as sentences (the default `tokens`) became one 3-token "sentence" per word, and plain
text read as CoNLL one sentence of every line's first word; both fitted without a word.

Only a file whose format was not given is sniffed (`--format tokens` reads anything as sentences),
and only shapes no sentence file has are reported: most lines a CoNLL-U word line or comment, a
bracketed tree, a `source ||| target` pair, or blank-line separated blocks of lines that nearly
all have the same few columns.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from emc.io.readers import Lines
from emc.spec.errors import DataError

SNIFFED_LINES = 2000
MAJORITY = 0.5
SAME_COLUMNS = 0.9
MAX_COLUMNS = 15  # CoNLL files have a handful of columns; more is a sentence


def _is_conllu_line(line: str) -> bool:
    fields = line.split("\t")
    return line.startswith("#") or (len(fields) == 10 and fields[0].split("-")[0].split(".")[0].isdigit())


def sniff_format(lines: list[str]) -> tuple[str, str] | None:
    """(format, what the lines look like) for lines that are not one sentence per line; None else."""
    text = [line for line in lines if line.strip()]
    if not text:
        return None
    share = lambda test: sum(1 for line in text if test(line)) / len(text)  # noqa: E731
    if share(_is_conllu_line) > MAJORITY:
        return "conllu", "CoNLL-U (one word per line, 10 tab-separated fields)"
    if share(lambda line: line.lstrip().startswith("(") and line.rstrip().endswith(")")) > MAJORITY:
        return "ptb", "bracketed trees, one per line"
    if share(lambda line: " ||| " in line) > MAJORITY:
        return "bitext", "sentence pairs (source ||| target)"
    blanks = len(lines) - len(text)
    if blanks >= 2 and len(text) >= 2 * blanks:  # sentences of two words or more on average
        width, count = Counter(len(line.split()) for line in text).most_common(1)[0]
        if 2 <= width <= MAX_COLUMNS and count / len(text) >= SAME_COLUMNS:
            return "conll", f"columns (one word per line with {width} columns, blank lines between sentences)"
    return None


def refuse_other_format(path: str | Path | Lines, first_lines: list[str], formats: tuple[str, ...]) -> None:
    """Raise DataError when `path`, read as one sentence per line (its first lines, up to
    SNIFFED_LINES, given), looks like another format, naming the --format that reads it (or the
    formats this structure reads, if none does)."""
    if isinstance(path, Lines):
        return
    found = sniff_format(first_lines[:SNIFFED_LINES])
    if found is None:
        return
    fmt, what = found
    advice = (f"read it with --format {fmt}" if fmt in formats else
              f"this structure reads {', '.join(formats)}, not {fmt}")
    raise DataError(str(path), None, f"looks like {what}, not one sentence per line: {advice} "
                                     f"(--format tokens reads it as sentences all the same)")


def refuse_plain_text_as_conll(path: str | Path | Lines, blank_lines: int, widths: set[int]) -> None:
    """A file read as CoNLL (`widths`: the column counts of its non-blank lines) with no blank line
    and lines of different lengths is running text: read as CoNLL it became one sentence of every
    line's first word."""
    if blank_lines == 0 and len(widths) > 1:
        raise DataError(str(path), None, f"read as CoNLL it has no blank line between sentences and lines of "
                                         f"{min(widths)} to {max(widths)} columns: it looks like one sentence per "
                                         f"line (--format tokens), not one word per line")
