"""alignment(f from e, null=yes, jump=no): each target word f_j links to one source word e_i (or NULL).

Parts are links (j, i). `a.target` is the target word f_j, `a.source` the source word e_i (or NULL
when null=yes); a block P(a.target | a.source) is IBM Model 1's translation table. With jump=yes
the links form a chain over source positions (the HMM aligner of Vogel et al. 1996) and
`a.jump` = i - i_prev (bucketed) is scored by a block such as P(a.jump).
"""
from __future__ import annotations

from emc.structures.base import ArgSpec, Attribute, Binding, Slot, SlotError, Structure

LINK, JUMP = "link", "jump"


def _attributes(binding: Binding) -> dict[str, Attribute]:
    a, f, e = binding.latent, binding.observed["target"], binding.observed["source"]
    attrs = {
        f"{a}.target": Attribute(f"{a}.target", "observed", f"vocab:{f}", f"the target word {f}_j", LINK, tokens_of=f),
        f"{a}.source": Attribute(f"{a}.source", "latent", f"vocab:{e}", f"the source word {e}_i it links to", LINK, tokens_of=e),
    }
    if binding.args["jump"]:
        attrs[f"{a}.jump"] = Attribute(f"{a}.jump", "latent", "jump", "i - i_prev, the jump in source positions", JUMP, numeric=True)
    return attrs


def _slot_rule(binding: Binding, outcome: list[Attribute], context: list[Attribute]) -> str:
    slots = {a.slot for a in outcome + context}
    if slots == {LINK, JUMP}:
        raise SlotError("a block scores either the linked words or the jump, not both")
    return JUMP if JUMP in slots else LINK


def _table_space(binding: Binding, attr: Attribute, slot: str, is_outcome: bool) -> str:
    if attr.path == f"{binding.latent}.source" and binding.args["null"]:
        return attr.space + "+null"
    return attr.space


ALIGNMENT = Structure(
    name="alignment",
    help=__doc__.split("\n\n")[1].replace("\n", " "),
    signature="alignment(f from e, null=yes, jump=no)",
    example="latent a : alignment(f from e, null=yes)",
    observed_roles=("target", "source"),
    uses_from=True,
    input_kinds=("tokens",),
    args=(
        ArgSpec("null", "bool", True, "a target word may link to NULL (no source word)"),
        ArgSpec("jump", "bool", False, "links form a chain scored by the jump between source positions"),
    ),
    slots=(Slot(LINK, "per link (target position, source position)"), Slot(JUMP, "per pair of consecutive links")),
    attributes=_attributes,
    slot_rule=_slot_rule,
    table_space=_table_space,
)
