"""Dependencies from Penn Treebank trees by head rules: the gold trees of the DMV literature.

A tree is read with its labels, stripped as emc/io/ptb.py strips it for grammar induction
(empty elements, the punctuation tags of ptb.PUNCTUATION, and the constituents left without a
leaf), and then each constituent's head child is chosen by Collins' head rules (Collins 1999,
appendix A; table written here from the published rules): every word's head is the head word of
the smallest constituent whose head word it is not, and the sentence's head word is the root.

Rules: for a label, a direction and a list of categories in priority order: for each category
in turn, scan the children in that direction (left: first to last; right: last to first) and
take the first child of that category; when no category matches, the first child in that
direction. Noun phrases have their own rule (NP_RULE). Labels lose their function tags and
indices first (NP-SBJ-1 -> NP, PP=2 -> PP); an unknown label takes its first child.
"""
from __future__ import annotations

from emc.io.ptb import Node, leaf_tags, parse_stripped

LEFT, RIGHT = "left", "right"
HEAD_RULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ADJP": (LEFT, ("NNS", "QP", "NN", "$", "ADVP", "JJ", "VBN", "VBG", "ADJP", "JJR", "NP", "JJS", "DT", "FW",
                    "RBR", "RBS", "SBAR", "RB")),
    "ADVP": (RIGHT, ("RB", "RBR", "RBS", "FW", "ADVP", "TO", "CD", "JJR", "JJ", "IN", "NP", "JJS", "NN")),
    "CONJP": (RIGHT, ("CC", "RB", "IN")),
    "FRAG": (RIGHT, ()),
    "INTJ": (LEFT, ()),
    "LST": (RIGHT, ("LS", ":")),
    "NAC": (LEFT, ("NN", "NNS", "NNP", "NNPS", "NP", "NAC", "EX", "$", "CD", "QP", "PRP", "VBG", "JJ", "JJS", "JJR",
                   "ADJP", "FW")),
    "PP": (RIGHT, ("IN", "TO", "VBG", "VBN", "RP", "FW")),
    "PRN": (LEFT, ()),
    "PRT": (RIGHT, ("RP",)),
    "QP": (LEFT, ("$", "IN", "NNS", "NN", "JJ", "RB", "DT", "CD", "NCD", "QP", "JJR", "JJS")),
    "RRC": (RIGHT, ("VP", "NP", "ADVP", "ADJP", "PP")),
    "S": (LEFT, ("TO", "IN", "VP", "S", "SBAR", "ADJP", "UCP", "NP")),
    "SBAR": (LEFT, ("WHNP", "WHPP", "WHADVP", "WHADJP", "IN", "DT", "S", "SQ", "SINV", "SBAR", "FRAG")),
    "SBARQ": (LEFT, ("SQ", "S", "SINV", "SBARQ", "FRAG")),
    "SINV": (LEFT, ("VBZ", "VBD", "VBP", "VB", "MD", "VP", "S", "SINV", "ADJP", "NP")),
    "SQ": (LEFT, ("VBZ", "VBD", "VBP", "VB", "MD", "VP", "SQ")),
    "UCP": (RIGHT, ()),
    "VP": (LEFT, ("TO", "VBD", "VBN", "MD", "VBZ", "VB", "VBG", "VBP", "VP", "ADJP", "NN", "NNS", "NP")),
    "WHADJP": (LEFT, ("CC", "WRB", "JJ", "ADJP")),
    "WHADVP": (RIGHT, ("CC", "WRB")),
    "WHNP": (LEFT, ("WDT", "WP", "WP$", "WHADJP", "WHPP", "WHNP")),
    "WHPP": (RIGHT, ("IN", "TO", "FW")),
    "NX": (LEFT, ()),
    "X": (RIGHT, ()),
}
# Collins' noun-phrase rule, tried in order: (direction, categories); a step matches the first
# child (scanning in its direction) whose category is any of its categories.
NP_RULE: tuple[tuple[str, tuple[str, ...]], ...] = (
    (RIGHT, ("NN", "NNP", "NNPS", "NNS", "NX", "POS", "JJR")),
    (LEFT, ("NP",)),
    (RIGHT, ("$", "ADJP", "PRN")),
    (RIGHT, ("CD",)),
    (RIGHT, ("JJ", "JJS", "RB", "QP")),
)
NOUN_PHRASES = frozenset({"NP", "NML"})


def head_cycle(heads: list[int]) -> list[int] | None:
    """Words (1-based) that never reach the root by following their heads (1-based, 0 the root),
    in the order of the cycle they end in; None when every word does: a tree."""
    state = [0] * (len(heads) + 1)  # 0 unseen, 1 on the current path, 2 reaches the root
    state[0] = 2
    for start in range(1, len(heads) + 1):
        path, word = [], start
        while state[word] == 0:
            state[word] = 1
            path.append(word)
            word = heads[word - 1]
        if state[word] == 1:  # came back to a word of this path
            return path[path.index(word):]
        for w in path:
            state[w] = 2
    return None


def cycle_message(cycle: list[int]) -> str:
    return (f"the heads form a cycle ({' -> '.join(map(str, cycle + cycle[:1]))}), so these words never reach "
            f"the root (0): not a tree")


def read_dependencies(text: str) -> tuple[list[str], list[int]]:
    """The stripped tag yield of one bracketed tree and each tag's head (1-based, 0 for the root)."""
    root = parse_stripped(text)
    tags = leaf_tags(root)
    if not tags:
        return [], []
    heads = [0] * len(tags)
    _attach(root, heads)
    return tags, heads


def head_child(node: Node) -> Node:
    """The child of a phrase that carries its head word, by the rules above."""
    children = node.children
    if len(children) == 1:
        return children[0]
    if node.label in NOUN_PHRASES:
        if children[-1].label == "POS":
            return children[-1]
        for direction, categories in NP_RULE:
            found = _scan(children, direction, categories)
            if found is not None:
                return found
        return children[-1]
    direction, priorities = HEAD_RULES.get(node.label, (LEFT, ()))
    for wanted in priorities:
        found = _scan(children, direction, (wanted,))
        if found is not None:
            return found
    return children[0] if direction == LEFT else children[-1]


def _scan(children: list[Node], direction: str, categories: tuple[str, ...]) -> Node | None:
    for child in (children if direction == LEFT else reversed(children)):
        if child.label in categories:
            return child
    return None


def _attach(root: Node, heads: list[int]) -> None:
    """heads[i] for every kept leaf: each phrase's non-head children's head words depend on its
    head word; the root's head word on 0."""
    head_word: dict[int, int] = {}
    order: list[Node] = []
    stack = [root]
    while stack:  # parents before children; heads are found children first (reversed order)
        node = stack.pop()
        order.append(node)
        stack.extend(node.children)
    for node in reversed(order):
        if node.is_leaf:
            head_word[id(node)] = node.position
            continue
        chosen = head_child(node)
        head = head_word[id(chosen)]
        head_word[id(node)] = head
        for child in node.children:
            if child is not chosen:
                heads[head_word[id(child)]] = head + 1
    heads[head_word[id(root)]] = 0
