"""Examples whose structure is given (--labeled: semi-supervised EM, Nigam et al. 2000) for a
structure written as rules, or a built-in restated as one.

The given structure is read from the gold the input carries, through what the program's parts
declare (emc/structures/rules/__init__.py: takes_given), and says which firings may be part of
the example's derivations: a part with a place among the posteriors (emit.part_place) fires
only where its place is allowed, the other parts as they fit around them. So a derivation
agrees with the given structure, and the E-step sums over those that do:

- parts that `labels x[t] as k`, k in 0..A-1: each token's given tag (`--gold-column`), the
  labels then named by the labeled examples' tags and A their number (data.named_values), as a
  chain's states are;
- parts that `attaches d to h`: each dependent's given head (the trees of `--format ptb`);
- a program built by span width: the spans crossing none of the given brackets (a partially
  bracketed corpus, Pereira & Schabes 1992: the trees of `--format ptb`);
- parts reading words (`w = x[i:j]`) of a program built by position: the given words
  (`--gold-spaces`, `--gold FILE`).

Packed per example as flags laid out as its posteriors are: given_flags[given_start[ex] + place],
given_start[ex] = -1 for an example whose structure is not given (both empty when none is).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emc.io.corpus import Corpus
from emc.spec.errors import DataError
from emc.structures.posteriors import nonempty_spans
from emc.structures.rules import posterior_kind, posterior_size, tag_argument, takes_given
from emc.structures.rules.program import Program
from emc.structures.rules.spans import longest_span

# what the given structure is read from, per posterior kind: the gold annotation and how to give it
GOLD = {"attaches": ("heads", "trees with --format ptb"), "spans": ("brackets", "trees with --format ptb"),
        "segments": ("words", "the words spaced, with --gold-spaces (or --gold FILE)"),
        "labels": ("tags", "columns with --format conll --gold-column N")}


def given_arrays(program: Program, corpus: Corpus, lengths: np.ndarray, args: dict[str, Any],
                 labels: dict[str, list[str]]) -> dict[str, np.ndarray]:
    """given_start and given_flags for the labeled examples of the corpus; `labels` names a
    tagging program's labels (data.named_values: the tags of the labeled examples)."""
    mask = corpus.labeled_mask
    if mask is None or not mask.any():
        return {"given_start": np.zeros(0, np.int32), "given_flags": np.zeros(0, np.int32)}
    if not takes_given(program):
        what = ("label spans of tokens (`labels x[i:j] as c`), or labels not counted by one argument, which no "
                "corpus's tags name" if posterior_kind(program) == "labels" else "declare none of these")
        raise DataError(corpus.path, None, "labeled examples (--labeled) give a structure written as rules through "
                                           "the tags its parts give tokens (`labels x[t] as k`, k in 0..A-1), the "
                                           "heads its parts attach, the spans of a program built by span width or "
                                           f"the words its parts read, and this program's parts {what}")
    kind = posterior_kind(program)
    name, how = GOLD[kind]
    gold = corpus.gold.get(name)
    starts = np.full(len(corpus), -1, np.int32)
    flags: list[np.ndarray] = []
    offset = 0
    for ex in np.flatnonzero(mask).tolist():
        given = (gold if kind == "labels" else gold[ex]) if gold is not None else None
        if given is None:
            path, line = corpus.location(ex)
            raise DataError(path, line, f"a labeled example needs its structure, here its {name}: give --labeled "
                                        f"data as {how}")
        n = int(lengths[ex])
        if kind == "labels":
            names = labels[tag_argument(program)]
            allowed = _allowed_tags([names.index(tag) for tag in given.tokens(ex)], len(names))
        else:
            allowed = _allowed(kind, given, n, max(1, longest_span(program, args)) if kind == "segments" else 0)
        if len(allowed) != posterior_size(program, args, n):
            raise AssertionError(f"given flags of {len(allowed)} places for {posterior_size(program, args, n)}")
        starts[ex] = offset
        offset += len(allowed)
        flags.append(allowed)
    return {"given_start": starts, "given_flags": np.concatenate(flags).astype(np.int32)}


def _allowed_tags(tags: list[int], count: int) -> np.ndarray:
    """1 at each token's given tag, the label of that name."""
    allowed = np.zeros((len(tags), count), np.int32)
    allowed[np.arange(len(tags)), tags] = 1
    return allowed.ravel()


def _allowed(kind: str, given, n: int, longest: int) -> np.ndarray:
    """1 at each place of the example's posteriors where a part may fire."""
    if kind == "attaches":  # given[d]: d's head, numbered from 1 (0: the root)
        allowed = np.zeros((n, n + 1), np.int32)
        allowed[np.arange(n), np.asarray(given, np.int64)] = 1
        return allowed.ravel()
    if kind == "spans":  # a span may not cross a given bracket
        brackets = list(given)
        return np.array([int(not any(a < i < b < j or i < a < j < b for a, b in brackets))
                         for i, j in nonempty_spans(n)], np.int32)
    starts = [int(i) for i in np.flatnonzero(given)] + [n]  # the words' first symbols
    allowed = np.zeros((n, longest), np.int32)
    for i, j in zip(starts[:-1], starts[1:]):
        if j - i <= longest:  # a longer word rules the example out
            allowed[i, j - i - 1] = 1
    return allowed.ravel()
