"""Tag sequences with their true dependency trees from a random DMV: `emc sample specs/dmv.em`.

The model has the spec's three blocks over --vocab-size tags t0, t1, ... (default 20): the root's
tag (Dirichlet(1)), each head's dependents per direction (Dirichlet(0.1): a few preferred tags),
and each head's stop decisions per direction and valence (uniform on [0.1, 0.9]).

A tree is drawn by the DMV's own story: the root's tag, then each head, on each side, decides
before each dependent whether to stop (knowing whether it has taken one on that side yet) and, if
not, draws the dependent's tag; the dependents of a side are generated outward from the head, and
each is a head in turn, so the trees are projective. The story alone gives a heavy-tailed length
(at a mean of 15 words, over half the sentences are one word), so a sentence's length n is drawn
first (Poisson, mean --mean-length, at least 1) and the story is followed given n: each decision
is drawn in proportion to its probability times that of completing the tree with the words left,
from the size distributions `Sizes` computes.

Printed as CoNLL-X (ID FORM LEMMA CPOSTAG POSTAG FEATS HEAD DEPREL PHEAD PDEPREL, the tag as
FORM, CPOSTAG and POSTAG), which `emc fit --format conll` reads with the true heads as gold;
`--format tokens` prints the tag sequences.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from emc.spec.model import CheckedModel

FORMATS = ("conll", "tokens")
DEFAULT_TAGS = 20
LEFT, RIGHT = 0, 1
NOT_ADJACENT, ADJACENT = 0, 1


@dataclass
class Sizes:
    """Under the DMV: subtree[h, n], the probability that a head tagged h heads n words in all
    (itself included); side[h, d, a, r], that its dependents on side d, from valence a on, head r
    words in all. Both for sizes up to the longest sentence."""

    subtree: np.ndarray
    side: np.ndarray


def sample(model: CheckedModel, args: dict[str, Any], rng: np.random.Generator, examples: int,
           options: dict[str, Any]) -> list[list[tuple[str, int]]]:
    """`examples` sentences, each a list of (tag, head) with CoNLL heads (1-based, 0 the root)."""
    T = options.get("vocab_size") or DEFAULT_TAGS
    mean_length = options.get("mean_length") or 15.0
    tags = [f"t{i}" for i in range(T)]
    root = rng.dirichlet(np.ones(T))
    attach = rng.dirichlet(np.full(T, 0.1), size=(T, 2))  # [head, direction, dependent]
    stop = rng.uniform(0.1, 0.9, size=(T, 2, 2))  # [head, direction, adjacent]
    lengths = np.maximum(1, rng.poisson(mean_length, size=examples))
    sizes = _sizes(attach, stop, int(lengths.max()))
    return [[(tags[t], h) for t, h in _draw_tree(rng, root, attach, stop, sizes, int(n))] for n in lengths]


def _sizes(attach: np.ndarray, stop: np.ndarray, longest: int) -> Sizes:
    """Sizes by increasing n: the sides' sizes up to n - 1 need subtrees up to n - 1, and a head's
    subtree of n words is itself and its two sides' n - 1."""
    T = len(attach)
    subtree = np.zeros((T, longest + 1))
    side = np.zeros((T, 2, 2, longest + 1))
    for n in range(1, longest + 1):
        r = n - 1
        # a first (or next) dependent heading k words, then the side's other dependents r - k
        more = np.einsum("hdc,ck,hdk->hd", attach, subtree[:, 1:r + 1], side[:, :, NOT_ADJACENT, r - 1::-1][..., :r])
        side[:, :, :, r] = (1.0 - stop) * more[:, :, None] + (stop if r == 0 else 0.0)
        subtree[:, n] = np.einsum("hk,hk->h", side[:, LEFT, ADJACENT, :n], side[:, RIGHT, ADJACENT, n - 1::-1])
    return Sizes(subtree, side)


def _draw_tree(rng: np.random.Generator, root: np.ndarray, attach: np.ndarray, stop: np.ndarray,
               sizes: Sizes, n: int) -> list[tuple[int, int]]:
    """One tree of n words as (tag id, CoNLL head) per word in sentence order. An explicit stack
    of heads to expand (with the words each must head): a tree can be deep."""
    T = len(root)
    tag = [_draw(rng, root * sizes.subtree[:, n])]
    parent = [-1]
    sides: list[tuple[list[int], list[int]]] = [([], [])]  # per node: its left, right dependents, nearest first
    pending = [(0, n)]
    while pending:
        head, words = pending.pop()
        h = tag[head]
        left = _draw(rng, sizes.side[h, LEFT, ADJACENT, :words] * sizes.side[h, RIGHT, ADJACENT, words - 1::-1])
        for direction, remaining in ((LEFT, left), (RIGHT, words - 1 - left)):
            # the head stops exactly when its dependents on this side already head `remaining` words
            while remaining > 0:
                # (dependent tag, words it heads) in proportion to its probability and the rest's
                rest = sizes.side[h, direction, NOT_ADJACENT, remaining - 1::-1]
                weights = attach[h, direction][:, None] * sizes.subtree[:, 1:remaining + 1] * rest[None, :]
                dependent, k = divmod(_draw(rng, weights.ravel()), remaining)
                tag.append(dependent)
                parent.append(head)
                sides.append(([], []))
                sides[head][direction].append(len(tag) - 1)
                pending.append((len(tag) - 1, k + 1))
                remaining -= k + 1
    return _in_sentence_order(tag, parent, sides)


def _draw(rng: np.random.Generator, weights: np.ndarray) -> int:
    """An index drawn in proportion to non-negative weights."""
    return int(rng.choice(len(weights), p=weights / weights.sum()))


def _in_sentence_order(tag: list[int], parent: list[int],
                       sides: list[tuple[list[int], list[int]]]) -> list[tuple[int, int]]:
    """The words left to right: a head's left dependents farthest first, the head, its right
    dependents nearest first, each with its own dependents around it."""
    order: list[int] = []
    stack: list[tuple[bool, int]] = [(False, 0)]  # (write the node itself?, node)
    while stack:
        write, node = stack.pop()
        if write:
            order.append(node)
            continue
        left, right = sides[node]
        stack += [(False, r) for r in reversed(right)]
        stack.append((True, node))
        stack += [(False, d) for d in left]
    position = {node: i + 1 for i, node in enumerate(order)}
    return [(tag[node], position[parent[node]] if parent[node] >= 0 else 0) for node in order]


def format_sentences(sentences: list[list[tuple[str, int]]], fmt: str) -> str:
    if fmt == "tokens":
        return "".join(" ".join(t for t, _ in s) + "\n" for s in sentences)
    return "".join("".join(f"{i}\t{t}\t_\t{t}\t{t}\t_\t{h}\t_\t_\t_\n" for i, (t, h) in enumerate(s, 1)) + "\n"
                   for s in sentences)
