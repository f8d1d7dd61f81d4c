"""CoNLL-U (Universal Dependencies), read as UD specifies and written back with one column replaced.

A sentence is a block of lines ended by a blank line (or the end of the file): comment lines
starting with `#`, then one line per word of ten tab-separated fields
ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC. Besides the words (integer IDs 1, 2, ...),
a block may hold multiword-token lines (ID a range `1-2`: the surface token, whose words follow)
and empty nodes (ID a decimal `1.1`, from the enhanced graph): both are kept for writing back but
are not words, so no model sees them. Fields are separated by tabs only (a FORM may hold a
space). HEAD is the ID of the word's head, 0 for the root, or `_` when the treebank gives none.

Every malformed line is an error naming the file and line: the wrong number of fields, an ID
out of sequence, a HEAD that is not a word of the sentence.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from emc.io.heads import cycle_message, head_cycle
from emc.io.readers import read_lines
from emc.spec.errors import DataError, EmcError

FIELDS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
COLUMN = {name: i for i, name in enumerate(FIELDS)}
_RANGE = re.compile(r"[1-9][0-9]*-[1-9][0-9]*")
_EMPTY_NODE = re.compile(r"(0|[1-9][0-9]*)\.[1-9][0-9]*")
_WORD = re.compile(r"[1-9][0-9]*")

# `emc decode --output conllu`: the option both the chain and the dependency tree offer.
OUTPUT_OPTION = (("--output",), {"choices": ("text", "conllu"), "default": None,
                                 "help": "decode: the output format; conllu (with --format conllu) writes the input "
                                         "back with the predicted column (a chain's UPOS, or the column of "
                                         "--gold-column; a deptree's HEAD and DEPREL)"})


@dataclass
class Sentence:
    """One CoNLL-U sentence: its lines as read, and the fields of its words."""

    line: int  # the file line of the block's first line
    rows: list[str] = field(default_factory=list)  # every line of the block, as read
    words: list[list[str]] = field(default_factory=list)  # the ten fields of each word
    word_rows: list[int] = field(default_factory=list)  # the index in `rows` of each word's line
    word_lines: list[int] = field(default_factory=list)  # the file line of each word
    target: str = "upos"  # the column a decoder writing the sentence back puts its prediction in

    def column(self, name: str) -> list[str]:
        return [w[COLUMN[name]] for w in self.words]

    def heads(self) -> list[int] | None:
        """Each word's head (0: the root), or None when any HEAD is `_`."""
        values = self.column("head")
        if "_" in values:
            return None
        return [int(v) for v in values]

    def with_column(self, replacements: dict[str, list[str]]) -> str:
        """The block as read, with the named columns of its word lines replaced (one value per
        word), ended by the blank line that separates sentences."""
        rows = list(self.rows)
        for w, r in enumerate(self.word_rows):
            fields = list(self.words[w])
            for name, values in replacements.items():
                fields[COLUMN[name]] = values[w]
            rows[r] = "\t".join(fields)
        return "\n".join(rows) + "\n"


def read_conllu(path: Any) -> list[Sentence]:
    """Every sentence of a CoNLL-U file, checked (see the module docstring)."""
    sentences: list[Sentence] = []
    current: Sentence | None = None
    for number, line in read_lines(path):
        if not line.strip():
            if current is not None:
                _finish(path, current)
                sentences.append(current)
                current = None
            continue
        if current is None:
            current = Sentence(number)
        current.rows.append(line)
        if line.startswith("#"):
            if current.words:
                raise DataError(path, number, "a comment line inside a sentence: comments come before its first "
                                              "word (is a blank line missing before it?)")
            continue
        fields = line.split("\t")
        if len(fields) != len(FIELDS):
            raise DataError(path, number, f"a CoNLL-U line has 10 tab-separated fields, this one has {len(fields)}"
                                          + (" (fields are separated by tabs, not spaces)" if len(fields) < 4 else ""))
        ident = fields[0]
        if _RANGE.fullmatch(ident):
            first, last = (int(v) for v in ident.split("-"))
            if first != len(current.words) + 1 or last < first:
                raise DataError(path, number, f"multiword token '{ident}' must start at the next word, "
                                              f"{len(current.words) + 1}, and end at or after it")
            continue
        if _EMPTY_NODE.fullmatch(ident):
            continue
        if not _WORD.fullmatch(ident):
            raise DataError(path, number, f"the ID '{ident}' is not a word number, a range (1-2) or an empty node (1.1)")
        if int(ident) != len(current.words) + 1:
            raise DataError(path, number, f"word ID {ident} out of sequence: expected {len(current.words) + 1}")
        if fields[1] == "":
            raise DataError(path, number, "the FORM field is empty (write _ for an unknown value)")
        current.word_rows.append(len(current.rows) - 1)
        current.word_lines.append(number)
        current.words.append(fields)
    if current is not None:
        _finish(path, current)
        sentences.append(current)
    return sentences


def _finish(path: Any, sentence: Sentence) -> None:
    """Check what needs the whole sentence: it has words, and every HEAD is one of them, 0 or `_`."""
    if not sentence.words:
        raise DataError(path, sentence.line, "a sentence with comments but no word lines")
    n = len(sentence.words)
    for fields, number in zip(sentence.words, sentence.word_lines):
        head = fields[COLUMN["head"]]
        if head != "_" and not (head.isdigit() and int(head) <= n):
            raise DataError(path, number, f"HEAD '{head}' is not 0 (the root), `_` or a word of this sentence (1..{n})")
        if head.isdigit() and int(head) == int(fields[0]):
            raise DataError(path, number, f"word {fields[0]} is its own head")
    heads = [fields[COLUMN["head"]] for fields in sentence.words]
    cycle = None if "_" in heads else head_cycle([int(h) for h in heads])
    if cycle is not None:
        raise DataError(path, sentence.word_lines[cycle[0] - 1], cycle_message(cycle))


def gold_column_name(value: Any) -> str:
    """--gold-column for CoNLL-U: upos (the default) or xpos."""
    name = "upos" if value is None else str(value).lower()
    if name not in ("upos", "xpos"):
        raise EmcError(f"--gold-column {value}: with --format conllu the gold column is upos or xpos")
    return name
