"""A corpus in memory: token ids per observed variable, flat, with example offsets.

Readers encode tokens into ids as they go (no per-token Python objects are kept), so a corpus of
millions of tokens costs a few bytes per token. Gold annotations for evaluation and labeled
latent structures for semi-supervised EM ride along, in whatever form their structure reads.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from emc.io.readers import require_examples
from emc.io.views import apply_views
from emc.io.vocab import Vocabulary
from emc.spec.errors import DataError


@dataclass
class TokenField:
    """Tokens of one observed variable: example i is ids[offsets[i]:offsets[i + 1]]."""

    ids: np.ndarray  # int32
    offsets: np.ndarray  # int64, n_examples + 1
    vocab: Vocabulary

    @staticmethod
    def from_lists(examples: list[list[int]], vocab: Vocabulary) -> "TokenField":
        offsets = np.zeros(len(examples) + 1, np.int64)
        np.cumsum([len(e) for e in examples], out=offsets[1:])
        ids = np.fromiter((i for e in examples for i in e), np.int32, count=int(offsets[-1]))
        return TokenField(ids, offsets, vocab)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def example(self, i: int) -> np.ndarray:
        return self.ids[self.offsets[i]:self.offsets[i + 1]]

    def tokens(self, i: int) -> list[str]:
        values = self.vocab.values
        return [values[j] for j in self.example(i)]

    def subset(self, indices: np.ndarray) -> "TokenField":
        return TokenField.from_lists([self.example(i).tolist() for i in indices], self.vocab)

    def view(self, views: tuple[tuple[str, int | None], ...], vocab: Vocabulary) -> "TokenField":
        """The same tokens seen through views (x.suffix(3)): computed once per token type."""
        mapping = np.array([vocab.add(apply_views(v, views)) for v in self.vocab.values], np.int32)
        return TokenField(mapping[self.ids], self.offsets, vocab)


class TokenFieldBuilder:
    """A TokenField read one example at a time: tokens are encoded into `vocab` as they come and
    kept as flat int32 ids with the examples' lengths (no per-token objects)."""

    def __init__(self, vocab: Vocabulary):
        self.vocab = vocab
        self.ids = array("i")
        self.lengths = array("q")

    def __len__(self) -> int:
        return len(self.lengths)

    def add(self, tokens: list[str]) -> None:
        """The next example, its tokens as read."""
        self.ids.extend(self.vocab.encode(tokens))
        self.lengths.append(len(tokens))

    def field(self) -> TokenField:
        offsets = np.zeros(len(self.lengths) + 1, np.int64)
        np.cumsum(np.frombuffer(self.lengths, np.int64), out=offsets[1:])
        return TokenField(np.frombuffer(self.ids, np.int32).copy(), offsets, self.vocab)


@dataclass
class Corpus:
    """Examples read from one file or more (`concat`). `fields` holds the observed variables by
    name; `lines` the source line of each example and `files` / `file_of` its file (for messages:
    `location`); `path` is the first file; `gold` task annotations used only to evaluate;
    `labeled` the latent structures given as supervision, with `labeled_mask` marking which
    examples carry one."""

    path: str
    fields: dict[str, TokenField]
    lines: np.ndarray
    gold: dict[str, Any] = field(default_factory=dict)
    labeled: dict[str, Any] = field(default_factory=dict)
    labeled_mask: np.ndarray | None = None
    files: list[str] = field(default_factory=list)  # every file read, in order ([path] when empty)
    file_of: np.ndarray | None = None  # per example, its file's index in `files` (all 0 when None)
    # with --max-length, how many examples were read as empty for being longer (None: the reader
    # does not cut by length, so the flag must be refused, not ignored)
    too_long: int | None = None

    def __post_init__(self) -> None:
        if not self.files:
            self.files = [self.path]
        if self.file_of is None:
            self.file_of = np.zeros(len(self.lines), np.int32)

    def __len__(self) -> int:
        return len(self.lines)

    def location(self, i: int) -> tuple[str, int]:
        """(file, line) of example i."""
        return self.files[int(self.file_of[i])], int(self.lines[i])

    def lengths(self) -> np.ndarray:
        """Length of each example, by its first observed variable."""
        return next(iter(self.fields.values())).lengths()

    def nonempty(self) -> np.ndarray:
        """Indices of the examples that have data in every field."""
        keep = np.ones(len(self), bool)
        for f in self.fields.values():
            keep &= f.lengths() > 0
        return np.flatnonzero(keep)

    def concat(self, other: "Corpus", labeled: bool) -> "Corpus":
        """This corpus followed by another read with the same vocabularies; `labeled` marks the
        other's examples as supervision (their gold annotations become their latent structure)."""
        if set(other.gold) != set(self.gold):
            raise DataError(other.path, None, f"has annotations {sorted(other.gold) or 'none'} but the data has "
                                              f"{sorted(self.gold) or 'none'}: give both in the same format")
        mask = np.concatenate([self.labeled_mask if self.labeled_mask is not None else np.zeros(len(self), bool),
                               np.full(len(other), labeled)])
        return Corpus(
            path=self.path,
            fields={k: _concat_any(f, other.fields[k]) for k, f in self.fields.items()},
            lines=np.concatenate([self.lines, other.lines]),
            gold={k: _concat_any(v, other.gold[k]) for k, v in self.gold.items()},
            labeled={k: _concat_any(v, other.labeled[k]) for k, v in self.labeled.items()},
            labeled_mask=mask,
            files=self.files + other.files,
            file_of=np.concatenate([self.file_of, other.file_of + len(self.files)]),
            too_long=None if self.too_long is None and other.too_long is None else
            (self.too_long or 0) + (other.too_long or 0),
        )

    def subset(self, indices: np.ndarray) -> "Corpus":
        return Corpus(
            path=self.path,
            fields={k: f.subset(indices) for k, f in self.fields.items()},
            lines=self.lines[indices],
            gold={k: _subset_any(v, indices) for k, v in self.gold.items()},
            labeled={k: _subset_any(v, indices) for k, v in self.labeled.items()},
            labeled_mask=None if self.labeled_mask is None else self.labeled_mask[indices],
            files=self.files,
            file_of=self.file_of[indices],
            too_long=self.too_long,  # of the examples read, as `Problem.read` counts them
        )


def sentence_corpus(path: str, name: str, sentences: list[list[str]], vocab: Vocabulary, lines: list[int],
                    max_length: int, unit: str = "words") -> Corpus:
    """The corpus of one field `name` read a sentence an example: refused when no sentence has a
    token, sentences over --max-length read as empty (cut_long), tokens encoded by `vocab`."""
    require_examples(path, sum(1 for s in sentences if s), "sentence")
    sentences, too_long = cut_long(path, sentences, max_length, unit)
    return Corpus(path, {name: TokenField.from_lists([vocab.encode(s) for s in sentences], vocab)}, np.array(lines),
                  too_long=too_long)


def cut_long(path: str, sentences: list[list[str]], limit: int, unit: str = "words") -> tuple[list[list[str]], int]:
    """--max-length: each sentence longer than `limit` read as empty (fit skips it, decode prints an
    empty line), and how many were; refused when none is left. A limit of 0: no limit."""
    if not limit:
        return sentences, 0
    if limit < 0:
        raise DataError(path, None, f"--max-length {limit}: give the longest sentence to keep (0: no limit)")
    kept = [s if len(s) <= limit else [] for s in sentences]
    if not any(kept):
        raise DataError(path, None, f"no sentence has at most {limit} {unit} (--max-length {limit})")
    return kept, sum(1 for s in sentences if len(s) > limit)


def _subset_any(value: Any, indices: np.ndarray) -> Any:
    if isinstance(value, TokenField):
        return value.subset(indices)
    if isinstance(value, np.ndarray):
        return value[indices]
    return [value[i] for i in indices]


def _concat_any(a: Any, b: Any) -> Any:
    if isinstance(a, TokenField):
        return TokenField(np.concatenate([a.ids, b.ids]), np.concatenate([a.offsets, a.offsets[-1] + b.offsets[1:]]),
                          a.vocab)
    if isinstance(a, np.ndarray):
        return np.concatenate([a, b])
    return list(a) + list(b)
