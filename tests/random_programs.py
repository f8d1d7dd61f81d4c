"""Random small rule programs for the brute-force tests (tests/test_rules_bruteforce.py).

A program is drawn from one of two families, each a skeleton with optional rules, attributes and
blocks chosen at random: built by position (a chain whose steps read one or two tokens, with an
optional second item on every level and filters on positions) or by span width (CKY over labeled
spans with optional ternary rules, an optional unary layer on the same level, span attributes and
filters on widths). Every program the generator writes is valid and every example of at least
one token has a derivation, so what the tests compare is the generated code, not the checker.
"""
from __future__ import annotations

import numpy as np

# per family: the optional pieces, each (part declaration, its attributes)
CHAIN = {
    "head": ["structure gen(x, states={size})",
             "  item  a(t in 0..n, k in 0..states)",
             "  item  done()",
             "  axiom a(0, states)"],
    "always": [("one(t, j, k) : a(t, k) += a(t - 1, j) for k in 0..states-1 where w = x[t - 1], g = j + k in 0..states+states",
                ["j", "k", "w", "g"]),
               ("stop(k) : done() += a(n, k) for k in 0..states-1", ["k"])],
    "optional": [("two(t, j, k) : a(t, k) += a(t - 2, j) for k in 0..states-1 where y = x[t - 2:t], f = t - 2 in 1..n",
                  ["j", "k", "y"]),
                 (["item  b(t in 0..n, k in 0..states-1)"],
                  [("hop(t, k) : b(t, k) += a(t, k) for k in 0..states-1", ["k"]),
                   ("back(t, k, c) : a(t, c) += b(t - 1, k) for c in 0..states-1 where v = x[t - 1]", ["k", "c", "v"])])],
}
TREE = {
    "head": ["structure gen(x, labels={size})",
             "  item  span(i in 0..n, j in 0..n, a in 0..labels-1)",
             "  item  whole()"],
    "always": [("leaf(i, a) : span(i, i + 1, a) where word = x[i]", ["a", "word"]),
               ("binary(i, k, j, a, b, c) : span(i, j, a) += span(i, k, b) * span(k, j, c) for k in i+1..j-1 "
                "where d = k - i in 1..2", ["a", "b", "c", "d"])],
    "optional": [("tri(i, k, l, j, a) : span(i, j, a) += span(i, k, a) * span(k, l, a) * span(l, j, a) "
                  "for k in i+1..i+2, l in k+1..j-1 where y = x[i:k]", ["a", "y"]),
                 (["item  unit(i in 0..n, j in 0..n, a in 0..labels-1)"],
                  [("lift(i, j, a, b) : unit(i, j, a) += span(i, j, b)", ["a", "b"])])],
}
TOKENS = ["a b c", "b c a a", "c a", "a", "b b c"]


def random_program(seed: int) -> tuple[str, list[str]]:
    """A random program (family by the seed's parity) with random blocks, and its data."""
    rng = np.random.default_rng(seed)
    family = CHAIN if seed % 2 == 0 else TREE
    lines = ["model random_rules", "observed x : tokens"]
    lines += [line.format(size=int(rng.integers(1, 3))) for line in family["head"]]
    parts = list(family["always"])
    unary = False
    for piece in family["optional"]:
        if rng.random() < 0.6:
            if isinstance(piece[0], list):  # an item with its parts
                lines[3:3] = ["  " + line.strip() if not line.startswith("  ") else line for line in piece[0]]
                parts += piece[1]
                unary = family is TREE
            else:
                parts.append(piece)
    if family is TREE:
        parts.append(("top(a) : whole() += unit(0, n, a)", ["a"]) if unary else ("top(a) : whole() += span(0, n, a)", ["a"]))
    lines += [f"  part  {declaration}" for declaration, _ in parts]
    lines += ["  goal  done()" if family is CHAIN else "  goal  whole()", "latent z : gen(x)"]
    lines += _blocks(rng, parts)
    return "\n".join(lines) + "\n", TOKENS


def _blocks(rng: np.random.Generator, parts: list[tuple[str, list[str]]]) -> list[str]:
    """Per part, most often one block: a random attribute as outcome, maybe another as context;
    a fixed weight on a numeric attribute now and then."""
    blocks = []
    for declaration, attrs in parts:
        part = declaration.split("(")[0]
        if rng.random() < 0.15:
            continue
        outcome, *rest = rng.permutation(attrs)
        context = f" | z.{part}.{rest[0]}" if rest and rng.random() < 0.7 else ""
        blocks.append(f"multinomial {part}_block : P(z.{part}.{outcome}{context})")
        if "g" in attrs and rng.random() < 0.5:
            blocks.append(f"weight {part}_near : exp(-0.5 * z.{part}.g)")
    return blocks
