"""spantree(x, labels=K): a probabilistic context-free grammar in Chomsky normal form over K labels.

The front end of the span tree with labels (emc/structures/spantree/__init__.py dispatches here):
a binary tree over the sentence whose every node carries one of K labels. Its parts are the
binary nodes (a label rewritten as a left and a right label), the preterminals (a label over one
token) and the root (the label of the whole sentence), so a tree's probability is the product of
the blocks of its root, its rewrites and its preterminals (Baker 1979; Lari & Young 1990).
Whether a node rewrites or emits follows from its span (one symbol: a preterminal), so every
binary shape of the sentence is possible, as the CCM's P(tree) is uniform; a block over
`t.preterminal` (the node slot, every node) makes the grammar choose it, P(t.preterminal |
t.label), as a textbook PCFG's rules A -> B C and A -> w share one distribution.
"""
from __future__ import annotations

from emc.spec.structure import Attribute, Binding, Restatement, Slot, SlotError

RULE, EMIT, ROOT, NODE = "rule", "emit", "root", "node"
SLOTS = (Slot(RULE, "per binary node: its label and its children's labels"),
         Slot(EMIT, "per preterminal: its label and its token"),
         Slot(ROOT, "once per sentence: the label of the whole sentence"),
         Slot(NODE, "per node, binary or preterminal: its label and which it is"))


def attributes(binding: Binding) -> dict[str, Attribute]:
    t, x = binding.latent, binding.observed["x"]
    return {
        f"{t}.label": Attribute(f"{t}.label", "latent", "labels", "the node's label (a rewritten node or a preterminal)"),
        f"{t}.left_label": Attribute(f"{t}.left_label", "latent", "labels", "the label of a binary node's left child", RULE),
        f"{t}.right_label": Attribute(f"{t}.right_label", "latent", "labels", "the label of a binary node's right child", RULE),
        f"{t}.root": Attribute(f"{t}.root", "latent", "labels", "the label of the tree's root (the whole sentence)", ROOT),
        f"{t}.preterminal": Attribute(f"{t}.preterminal", "latent", "bool",
                                      "whether the node is a preterminal (1) or a binary node (0)", NODE),
        x: Attribute(x, "observed", f"vocab:{x}", "the token under a preterminal", EMIT, tokens_of=x),
    }


def slot_rule(binding: Binding, outcome: list[Attribute], context: list[Attribute]) -> str:
    t = binding.latent
    attrs = outcome + context
    slots = {a.slot for a in attrs if a.slot}
    if len(slots) > 1:
        raise SlotError(f"a labeled span-tree block is a rewrite ({t}.label, {t}.left_label, {t}.right_label), "
                        f"an emission (x and {t}.label), a node's kind ({t}.preterminal) or the root ({t}.root), "
                        f"not a mix",
                        f"split it, e.g. P({t}.left_label, {t}.right_label | {t}.label) and P(x | {t}.label)")
    if not slots:
        raise SlotError(f"{t}.label alone does not say which nodes the block scores",
                        f"a rewrite: P({t}.left_label, {t}.right_label | {t}.label); a preterminal: "
                        f"P(x | {t}.label); the root: P({t}.root)")
    slot = slots.pop()
    if slot == ROOT and any(a.path != f"{t}.root" for a in attrs):
        raise SlotError(f"a root block scores {t}.root alone", f"write P({t}.root)")
    if slot == NODE and any(a.path not in (f"{t}.label", f"{t}.preterminal") for a in attrs):
        raise SlotError(f"a node block scores {t}.preterminal and {t}.label only",
                        f"write P({t}.preterminal | {t}.label)")
    if slot == EMIT and not any(a.path == f"{t}.label" for a in attrs):
        raise SlotError(f"this block does not involve the preterminal's label, so it cannot change the posterior",
                        f"condition on it: P({', '.join(a.path for a in outcome)} | {t}.label)")
    return slot


# The DP is this rule program (CKY over labeled spans, as specs/rules/pcfg.em states it), compiled
# by the rules (emc/structures/rules/restate.py): a rewrite is a binary firing, a preterminal a
# leaf, the root label the top; a node block scores both kinds of node, told apart by preterminal.
PROGRAM = """
structure tree(x, labels=10)
  item  span(i in 0..n, j in 0..n, a in 0..labels-1)
  item  whole()
  part  leaf(i, a) : span(i, i + 1, a) where word = x[i], preterminal = 1 in 0..1
  part  binary(i, k, j, a, b, c) : span(i, j, a) += span(i, k, b) * span(k, j, c) for k in i+1..j-1
        where preterminal = 0 in 0..1
  part  top(a) : whole() += span(0, n, a)
  goal  whole()
"""
RESTATED = Restatement(PROGRAM, {
    RULE: (("binary", {"label": "a", "left_label": "b", "right_label": "c"}),),
    EMIT: (("leaf", {"label": "a", "x": "word"}),),
    ROOT: (("top", {"root": "a"}),),
    NODE: (("binary", {"label": "a", "preterminal": "preterminal"}),
           ("leaf", {"label": "a", "preterminal": "preterminal"})),
}, bounded_spaces=frozenset({"labels", "bool"}))
