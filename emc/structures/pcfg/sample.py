"""Sentences with their true trees from a random PCFG: `emc sample specs/pcfg.em`.

The grammar has the spec's three blocks over K labels: the root label (Dirichlet(1)), binary
rewrites P(left, right | label) (Dirichlet(0.1) over the K^2 label pairs, so each label prefers a
few), and preterminal emissions over --vocab-size symbols w0, w1, ... (Dirichlet(0.05): each label
emits mostly its own symbols, as the chain's sampler does).

The spec's model scores a tree by its root, rewrites and emissions alone: no block decides between
rewriting and emitting, so the choice is made by the sentence's length. A sentence's length n is
drawn first (Poisson, mean --mean-length, at least 1); then the tree is drawn top-down from the
model given n: a span of one symbol emits, a longer one rewrites. Since each label's rewrites sum
to 1 over the children's labels, every binary bracketing of n symbols has the same total
probability, so the split of a span of m symbols at k is drawn in proportion to the number of
bracketings on each side, Catalan(k - 1) * Catalan(m - k - 1), and the children's labels from the
parent's rewrites. (A per-label rewrite-or-emit probability would instead give a near-critical
branching process: at a mean of 15 words, half the sentences would be single symbols.)

Printed as Penn Treebank trees, one per line, labels as numbers and each symbol its own tag,
`(3 (1 (0 (w4 w4)) (2 (w7 w7))) ...)`, which `emc fit --format ptb` reads with the true
brackets as gold; `--format tokens` prints the yields.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from emc.spec.model import CheckedModel

FORMATS = ("ptb", "tokens")


@dataclass
class Tree:
    """A labeled binary tree: a preterminal has a symbol and no children."""

    label: int
    symbol: str = ""
    children: list["Tree"] = field(default_factory=list)


def sample(model: CheckedModel, args: dict[str, Any], rng: np.random.Generator, examples: int,
           options: dict[str, Any]) -> list[Tree]:
    """`examples` trees from a random grammar with args["labels"] labels."""
    K = int(args["labels"])
    vocab_size = options.get("vocab_size") or 1000
    mean_length = options.get("mean_length") or 15.0
    symbols = [f"w{i}" for i in range(vocab_size)]
    root = rng.dirichlet(np.ones(K))
    rules = rng.dirichlet(np.full(K * K, 0.1), size=K)  # [parent, left * K + right]
    emit = rng.dirichlet(np.full(vocab_size, 0.05), size=K)
    lengths = np.maximum(1, rng.poisson(mean_length, size=examples))
    trees = []
    for n in lengths:
        top = Tree(int(rng.choice(K, p=root)))
        pending = [(top, int(n))]  # nodes still to expand, with their number of symbols
        while pending:
            node, m = pending.pop()
            if m == 1:
                node.symbol = symbols[int(rng.choice(vocab_size, p=emit[node.label]))]
                continue
            k = 1 + int(rng.choice(m - 1, p=_split_probabilities(m)))
            left, right = divmod(int(rng.choice(K * K, p=rules[node.label])), K)
            node.children = [Tree(left), Tree(right)]
            pending += [(node.children[0], k), (node.children[1], m - k)]
        trees.append(top)
    return trees


def _split_probabilities(m: int) -> np.ndarray:
    """P(split after k symbols), k = 1..m-1, for a uniformly drawn binary bracketing of m symbols."""
    counts = [_catalan(k - 1) * _catalan(m - k - 1) for k in range(1, m)]
    total = _catalan(m - 1)
    return np.array([c / total for c in counts])


def _catalan(n: int) -> int:
    """The number of binary bracketings of n + 1 symbols."""
    return math.comb(2 * n, n) // (n + 1)


def yield_of(tree: Tree) -> list[str]:
    """The tree's symbols, left to right."""
    out, stack = [], [tree]
    while stack:
        node = stack.pop()
        if node.children:
            stack += reversed(node.children)
        else:
            out.append(node.symbol)
    return out


def bracketed(tree: Tree) -> str:
    """`(label left right)` per node, a preterminal `(label (symbol symbol))`: its symbol is the
    tag of a Penn Treebank leaf."""
    parts: list[str] = []
    stack: list[Tree | str] = [tree]  # a string is a closing bracket still to write
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts[-1] += item
        elif item.children:
            parts.append(f"({item.label}")
            stack += [")", *reversed(item.children)]
        else:
            parts.append(f"({item.label} ({item.symbol} {item.symbol}))")
    return " ".join(parts)


def format_sentences(trees: list[Tree], fmt: str) -> str:
    if fmt == "tokens":
        return "".join(" ".join(yield_of(t)) + "\n" for t in trees)
    return "".join(bracketed(t) + "\n" for t in trees)
