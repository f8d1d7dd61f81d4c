"""spantree(x, empty=no): a binary bracketing of the sentence; every span is a constituent or a distituent.

Parts are spans (i, j) of the sentence, scored whether in the tree or out of it (the
constituent-context model of Klein & Manning 2002). `t.yield` is the symbol sequence x[i:j],
`t.context` the pair of symbols either side (with boundary symbols), `t.constituent` whether the
span is in the tree, `t.length` its length. P(tree) is uniform over binary bracketings. Every
non-empty span is scored: single symbols and the whole sentence are constituents of every
bracketing, the others either; with empty=yes the empty spans (i, i) are scored too, always as
distituents (empty yield, length 0). With labels=K the tree's nodes carry labels instead: a PCFG
in Chomsky normal form (emc/structures/pcfg/__init__.py).
"""
from __future__ import annotations

from emc.structures import pcfg
from emc.spec.structure import ArgSpec, Attribute, Binding, Slot, SlotError, Structure, summary

SPAN = "span"


def _labeled(binding: Binding) -> bool:
    return binding.args.get("labels", 0) > 0


def _attributes(binding: Binding) -> dict[str, Attribute]:
    if _labeled(binding):
        return pcfg.attributes(binding)
    t = binding.latent
    return {
        f"{t}.yield": Attribute(f"{t}.yield", "observed", "yields", "the span's symbol sequence", SPAN),
        f"{t}.context": Attribute(f"{t}.context", "observed", "contexts", "the symbols either side of the span", SPAN),
        f"{t}.constituent": Attribute(f"{t}.constituent", "latent", "bool", "whether the span is a constituent", SPAN),
        f"{t}.length": Attribute(f"{t}.length", "observed", "length", "the span's length", SPAN, numeric=True),
    }


def _slot_rule(binding: Binding, outcome: list[Attribute], context: list[Attribute]) -> str:
    if _labeled(binding):
        if binding.args["empty"]:
            raise SlotError("empty=yes scores empty spans as distituents; a labeled tree (labels=K) has none",
                            "drop empty=yes")
        return pcfg.slot_rule(binding, outcome, context)
    return SPAN


SPANTREE = Structure(
    name="spantree",
    help=summary(__doc__),
    signature="spantree(x, empty=no, labels=0)",
    example="latent t : spantree(x)",
    args=(ArgSpec("empty", "bool", False, "also score the empty spans (i, i), always as distituents"),
          ArgSpec("labels", "int", 0, "K > 0: the nodes carry one of K labels (a PCFG); 0: unlabeled bracketings",
                  low=0, high=1000, listed_values=(10,))),
    slots=(Slot(SPAN, "per span (i, j), in or out of the tree"),) + pcfg.SLOTS,
    attributes=_attributes,
    slot_rule=_slot_rule,
    dp="inside-outside over binary bracketings (labeled binary trees with labels=K: a PCFG, whose DP is the CKY "
       "rule program of emc/structures/pcfg/__init__.py, compiled)",
    cost=lambda args: (f"O(n^3 K^2 + n^2 K^3) per sentence of n tokens, K = {args['labels']} labels"
                       if args.get("labels") else "O(n^3) per sentence of n tokens"),
    package=lambda binding: "pcfg" if _labeled(binding) else "spantree",
    restated=lambda binding: pcfg.RESTATED if _labeled(binding) else None,
)
