"""Penn Treebank trees, one per line: the tag yield and the unlabeled constituent spans.

A tree is written `(LABEL CHILD ...)`, a leaf `(TAG word)`, and the treebank's outer bracket has
no label: `((S (NP-SBJ (DT The) (NN board)) ...))`. Before the yield and spans are taken, the
empty elements (tag -NONE-: traces, null complementizers) and the punctuation tags of
PUNCTUATION are removed, and so is every constituent left without a leaf. Function tags and
co-indices on labels (NP-SBJ-1) do not matter here: the spans are unlabeled, and a leaf is
recognised by its exact tag.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

EMPTY_ELEMENT = "-NONE-"
# Klein & Manning's WSJ10 convention: these tags are removed with their words.
PUNCTUATION = frozenset({",", ".", ":", "``", "''", "-LRB-", "-RRB-", "#", "$"})

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


class TreeError(ValueError):
    """A line that is not one well-formed tree; the message says where (1-based column)."""


@dataclass
class StrippedTree:
    """A tree reduced to what grammar induction sees: the tags of its kept leaves, and the spans
    (i, j) over them of its phrasal constituents (the whole sentence included; a unary chain
    gives one span)."""

    tags: list[str]
    spans: set[tuple[int, int]]


def read_tree(text: str) -> StrippedTree:
    """Parse one bracketed tree and strip it (see the module docstring)."""
    tokens = [(m.group(), m.start() + 1) for m in _TOKEN.finditer(text)]
    if not tokens:
        raise TreeError("empty line: expected a tree")
    tags: list[str] = []
    spans: set[tuple[int, int]] = set()
    position = _node(tokens, 0, tags, spans)
    if position < len(tokens):
        raise TreeError(f"text after the end of the tree at column {tokens[position][1]}")
    return StrippedTree(tags, spans)


def _node(tokens: list[tuple[str, int]], position: int, tags: list[str], spans: set[tuple[int, int]]) -> int:
    """Read the node starting at tokens[position]; append its kept tags, add its spans; return
    the position after it. Iterative, so deep trees cannot exhaust the Python stack."""
    # stack entries: (first kept leaf of the open node, column of its '(')
    stack: list[tuple[int, int]] = []
    while True:
        if position >= len(tokens):
            raise TreeError(f"unbalanced parentheses: {len(stack)} bracket(s) never closed")
        token, column = tokens[position]
        if token == ")":
            if not stack:
                raise TreeError(f"')' at column {column} closes nothing")
            start, _ = stack.pop()
            if len(tags) > start:
                spans.add((start, len(tags)))
            position += 1
            if not stack:
                return position
            continue
        if token != "(":
            raise TreeError(f"'{token}' at column {column}: expected '(' (a word must follow its tag)")
        nxt = tokens[position + 1][0] if position + 1 < len(tokens) else ")"
        after = tokens[position + 2][0] if position + 2 < len(tokens) else ""
        if nxt not in "()" and after not in "()":
            # a leaf: (TAG word)
            if position + 3 >= len(tokens) or tokens[position + 3][0] != ")":
                raise TreeError(f"the leaf at column {column} has more than a tag and a word")
            if nxt != EMPTY_ELEMENT and nxt not in PUNCTUATION:
                tags.append(nxt)
            position += 4
            if not stack:
                return position
            continue
        if nxt == ")":
            raise TreeError(f"empty brackets '()' at column {column}")
        stack.append((len(tags), column))
        position += 1 if nxt == "(" else 2  # skip the label, if any
