"""alignment(f from e, null=yes, jump=no): each target word f_j links to one source word e_i (or NULL).

Parts are links (j, i). `a.target` is the target word f_j, `a.source` the source word e_i (or NULL
when null=yes); a block P(a.target | a.source) is IBM Model 1's translation table. With jump=yes
the links form a chain over source positions (the HMM aligner of Vogel et al. 1996) and
`a.jump` = i - i_prev (bucketed) is scored by a block such as P(a.jump). With jump=no,
`a.diagonal` = i - the diagonal's source position at j (bucketed as jumps are) is scored by a
block such as P(a.diagonal): IBM Model 2 with fast_align's diagonal (Dyer et al. 2013).

A link block relates the two sides: its outcome is on one side and its context on the other
(P(a.target | a.source), P(a.source.lower | a.target)), or it is P(a.source). Its table is sparse:
it holds only the (row, outcome) pairs that co-occur in the data.

Jumps: i_prev is the source position of the previous target word's link, -1 before the first
one; a link to NULL keeps i_prev (the NULL states of Och & Ney 2003) and has its own jump
value, `null`, the last bucket of the jump space; jumps of +-maxjump or more share the end
buckets, whose weight is spread evenly over the positions they reach. In weight expressions the
NULL jump counts as 0 (the position does not move).

The diagonal: target word j of m lies on the diagonal at source position floor((2j + 1) l / 2m) of
l, the source word under the middle of j; a link's distance from it is bucketed, and its end
buckets shared, as a jump from that position would be; a link to NULL scores the `null` bucket.
The buckets' weights are not renormalised per target word (the model is deficient, as IBM Models
3 and 4 are), so EM stays closed-form: the expected count of a bucket is the posterior mass of
the links in it.
"""
from __future__ import annotations

from emc.spec.structure import ArgSpec, Attribute, Binding, Slot, SlotError, Structure, summary

LINK, JUMP, DIAGONAL = "link", "jump", "diagonal"
REVERSE = "reverse"  # the reverse model's folder inside a run (emc/runtime/modes/alignment.py, agreement.py)


def _attributes(binding: Binding) -> dict[str, Attribute]:
    a, f, e = binding.latent, binding.observed["target"], binding.observed["source"]
    attrs = {
        f"{a}.target": Attribute(f"{a}.target", "observed", f"vocab:{f}", f"the target word {f}_j", LINK, tokens_of=f),
        f"{a}.source": Attribute(f"{a}.source", "latent", f"vocab:{e}", f"the source word {e}_i it links to", LINK, tokens_of=e),
    }
    if binding.args["jump"]:
        attrs[f"{a}.jump"] = Attribute(f"{a}.jump", "latent", "jump", "i - i_prev, the jump in source positions", JUMP, numeric=True)
    else:
        attrs[f"{a}.diagonal"] = Attribute(f"{a}.diagonal", "latent", "jump", "i - the diagonal's source position at j",
                                           DIAGONAL, numeric=True)
    return attrs


def _slot_rule(binding: Binding, outcome: list[Attribute], context: list[Attribute]) -> str:
    slots = {a.slot for a in outcome + context}
    for position in (JUMP, DIAGONAL):
        if position in slots and len(slots) > 1:
            raise SlotError(f"a block scores either the linked words or the {position}, not both")
        if position in slots:
            return position
    a = binding.latent
    hint = f"write P({a}.target | {a}.source), P({a}.source | {a}.target) or P({a}.source)"
    outcome_sides, context_sides = {_side(binding, x) for x in outcome}, {_side(binding, x) for x in context}
    if len(outcome_sides) > 1 or len(context_sides) > 1:
        raise SlotError("a link block's outcome, and its context, each lie on one side of the pair", hint)
    if outcome_sides == context_sides:
        raise SlotError("a link block relates the two sides: its outcome on one side, its context on the other", hint)
    return LINK


def _side(binding: Binding, attr: Attribute) -> str:
    return "source" if attr.path == f"{binding.latent}.source" else "target"


def slot_tables(factors, slot: str) -> set[str]:
    """The tables read by the factors (of a checked model) of one slot."""
    return {f.table for f in factors if f.slot == slot}


def _table_space(binding: Binding, attr: Attribute, slot: str, is_outcome: bool) -> str:
    if attr.path == f"{binding.latent}.source" and binding.args["null"]:
        return attr.space + "+null"
    return attr.space


ALIGNMENT = Structure(
    name="alignment",
    help=summary(__doc__),
    signature="alignment(f from e, null=yes, jump=no, maxjump=20)",
    example="latent a : alignment(f from e, null=yes)",
    observed_roles=("target", "source"),
    uses_from=True,
    args=(
        ArgSpec("null", "bool", True, "a target word may link to NULL (no source word)"),
        ArgSpec("jump", "bool", False, "links form a chain scored by the jump between source positions"),
        ArgSpec("maxjump", "int", 20, "jumps (or distances from the diagonal) of +-maxjump or more share an end bucket", low=1, high=1000),
    ),
    slots=(Slot(LINK, "per link (target position, source position)"), Slot(JUMP, "per pair of consecutive links"),
           Slot(DIAGONAL, "per link, its distance from the diagonal (jump=no)")),
    attributes=_attributes,
    slot_rule=_slot_rule,
    table_space=_table_space,
    dp="per-target-word posteriors over source positions (a chain over them with jump=yes)",
    cost=lambda args: "O(m l) per pair" + (" (O(m l^2) with jumps)" if args.get("jump") else ""),
    per_position=("source",),
    symmetric=True,
)
