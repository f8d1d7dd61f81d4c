"""Penn Treebank trees, one per line: the one reader of the format (the span tree's unlabeled
constituent spans and the dependency tree's head rules, emc/io/heads.py, both start from it).

A tree is written `(LABEL CHILD ...)`, a leaf `(TAG word)`, and the treebank's outer bracket has
no label: `((S (NP-SBJ (DT The) (NN board)) ...))`. Before the yield and spans are taken, the
empty elements (tag -NONE-: traces, null complementizers) and the punctuation tags of
PUNCTUATION are removed, and so is every constituent left without a leaf. Function tags and
co-indices on labels (NP-SBJ-1) are dropped from a phrase's label (`category`); a leaf is
recognised by its exact tag.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from emc.io.readers import read_lines
from emc.spec.errors import DataError

EMPTY_ELEMENT = "-NONE-"
# Klein & Manning's WSJ10 convention: these tags are removed with their words.
PUNCTUATION = frozenset({",", ".", ":", "``", "''", "-LRB-", "-RRB-", "#", "$"})

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


class TreeError(ValueError):
    """A line that is not one well-formed tree; the message says where (1-based column)."""


@dataclass
class Node:
    """A node of a stripped tree: a phrase (its category, children in order) or a kept leaf."""

    label: str  # a phrase's category (function tags dropped), or a leaf's tag
    children: list["Node"] = field(default_factory=list)
    position: int = -1  # a leaf's index among the kept leaves; -1 for phrases

    @property
    def is_leaf(self) -> bool:
        return self.position >= 0


@dataclass
class StrippedTree:
    """A tree reduced to what grammar induction sees: the tags of its kept leaves, and the spans
    (i, j) over them of its phrasal constituents (the whole sentence included; a unary chain
    gives one span)."""

    tags: list[str]
    spans: set[tuple[int, int]]


def category(label: str) -> str:
    """A label without function tags and indices: NP-SBJ-1 -> NP, PP=2 -> PP (-NONE-, -LRB- kept)."""
    if label.startswith("-"):
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0] or label


def read_tree(text: str) -> StrippedTree:
    """Parse one bracketed tree and strip it (see the module docstring): its tags and spans."""
    root = parse_stripped(text)
    tags: list[str] = []
    spans: set[tuple[int, int]] = set()
    for node, start, end in _walk(root):
        if node.is_leaf:
            tags.append(node.label)
        elif end > start:
            spans.add((start, end))
    return StrippedTree(tags, spans)


def leaf_tags(root: Node) -> list[str]:
    """The tags of a stripped tree's kept leaves, left to right."""
    return [node.label for node, _, _ in _walk(root) if node.is_leaf]


def parse_stripped(text: str) -> Node:
    """One bracketed tree as a labeled tree, stripped (see the module docstring), its kept leaves
    numbered left to right. A tree that is a bare leaf is a phrase with that one leaf; a tree
    with no kept leaf is a phrase without children. Iterative, so deep trees cannot exhaust the
    Python stack."""
    tokens = [(m.group(), m.start() + 1) for m in _TOKEN.finditer(text)]
    if not tokens:
        raise TreeError("empty line: expected a tree")
    stack: list[Node] = []
    position, kept = 0, 0
    while True:
        if position >= len(tokens):
            raise TreeError(f"unbalanced parentheses: {len(stack)} bracket(s) never closed")
        token, column = tokens[position]
        if token == ")":
            if not stack:
                raise TreeError(f"')' at column {column} closes nothing")
            node = stack.pop()
            position += 1
            if not stack:
                top = node
                break
            if node.children:  # a constituent left without a leaf goes
                stack[-1].children.append(node)
            continue
        if token != "(":
            raise TreeError(f"'{token}' at column {column}: expected '(' (a word must follow its tag)")
        nxt = tokens[position + 1][0] if position + 1 < len(tokens) else ")"
        after = tokens[position + 2][0] if position + 2 < len(tokens) else ""
        if nxt not in "()" and after not in "()":  # a leaf: (TAG word)
            if position + 3 >= len(tokens) or tokens[position + 3][0] != ")":
                raise TreeError(f"the leaf at column {column} has more than a tag and a word")
            position += 4
            keep = nxt != EMPTY_ELEMENT and nxt not in PUNCTUATION
            if keep:
                leaf = Node(nxt, position=kept)
                kept += 1
            if not stack:
                top = Node("", [leaf] if keep else [])
                break
            if keep:
                stack[-1].children.append(leaf)
            continue
        if nxt == ")":
            raise TreeError(f"empty brackets '()' at column {column}")
        stack.append(Node(category(nxt) if nxt != "(" else ""))
        position += 1 if nxt == "(" else 2  # skip the label, if any
    if position < len(tokens):
        raise TreeError(f"text after the end of the tree at column {tokens[position][1]}")
    return top


def _walk(root: Node) -> Iterator[tuple[Node, int, int]]:
    """(node, its first kept leaf, the end of its last) for every node, parents before children."""
    order: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(reversed(node.children))
    bounds: dict[int, tuple[int, int]] = {}
    for node in reversed(order):  # children first: a phrase runs from its first child to its last
        if node.is_leaf:
            bounds[id(node)] = (node.position, node.position + 1)
        elif node.children:
            bounds[id(node)] = (bounds[id(node.children[0])][0], bounds[id(node.children[-1])][1])
        else:
            bounds[id(node)] = (0, 0)
    for node in order:
        yield (node, *bounds[id(node)])


def read_tree_file(path: str, parse: Callable[[int, str], tuple[list[str], Any]],
                   empty: Callable[[], Any]) -> tuple[list[list[str]], list[Any], list[int]]:
    """One tree per line, each read by `parse(line number, line)` into its tags and its gold
    (`empty()` for a blank line, an empty example, so that decode's output lines match); a line
    that is not a tree is refused with its number. Returns the tags, the gold and the line numbers."""
    sentences, gold, numbers = [], [], []
    for number, line in read_lines(path):
        tags, value = [], empty()
        if line.strip():
            try:
                tags, value = parse(number, line)
            except TreeError as err:
                raise DataError(path, number, f"not a Penn Treebank tree: {err}") from None
        sentences.append(tags)
        gold.append(value)
        numbers.append(number)
    return sentences, gold, numbers
