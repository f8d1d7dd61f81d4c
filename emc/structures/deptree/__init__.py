"""deptree(x): a projective dependency tree over the sentence with one root (the DMV's trees).

Parts are the root choice, the attachments and the stop decisions of the dependency model with
valence (Klein & Manning 2004). `d.root` is the root word's token; an attachment has a head
`d.head`, a dependent `d.dependent` and a direction `d.direction` (left, right); each head, on
each side, decides `d.stop` (1: no more dependents) before each dependent and once after the
last, with `d.adjacent` saying whether it has taken none on that side yet (valence). A block
over `d.root` feeds the root slot, one over `d.dependent` the attach slot, one over `d.stop`
or `d.adjacent` the stop slot.
"""
from __future__ import annotations

from emc.spec.structure import Attribute, Binding, Slot, SlotError, Structure, summary

ROOT, ATTACH, STOP = "root", "attach", "stop"


def _attributes(binding: Binding) -> dict[str, Attribute]:
    d, x = binding.latent, binding.observed["x"]
    vocab = f"vocab:{x}"
    return {
        f"{d}.root": Attribute(f"{d}.root", "latent", vocab, "the root word", ROOT),
        f"{d}.head": Attribute(f"{d}.head", "latent", vocab,
                               "the head word of an attachment or a stop decision"),
        f"{d}.dependent": Attribute(f"{d}.dependent", "latent", vocab, "the dependent word of an attachment", ATTACH),
        f"{d}.direction": Attribute(f"{d}.direction", "latent", "direction",
                                    "the side of the head: 0 left, 1 right"),
        f"{d}.stop": Attribute(f"{d}.stop", "latent", "bool", "1: the head takes no more dependents on this side", STOP),
        f"{d}.adjacent": Attribute(f"{d}.adjacent", "latent", "bool",
                                   "1: the head has no dependent on this side yet (valence)", STOP),
    }


def _slot_rule(binding: Binding, outcome: list[Attribute], context: list[Attribute]) -> str:
    d = binding.latent
    slots = {a.slot for a in outcome + context if a.slot}
    hint = (f"write P({d}.root), P({d}.dependent | {d}.head, {d}.direction) or "
            f"P({d}.stop | {d}.head, {d}.direction, {d}.adjacent)")
    if len(slots) > 1:
        raise SlotError(f"a deptree block scores the root, an attachment or a stop decision, not "
                        f"{' and '.join(sorted(slots))} at once", hint)
    if not slots:
        raise SlotError(f"a deptree block needs {d}.root, {d}.dependent or {d}.stop to say what it scores", hint)
    slot = slots.pop()
    if slot == ROOT and len(outcome + context) > 1:
        raise SlotError(f"the root slot has only {d}.root", f"write P({d}.root)")
    return slot


DEPTREE = Structure(
    name="deptree",
    help=summary(__doc__),
    signature="deptree(x)",
    example="latent d : deptree(x)",
    args=(),
    slots=(Slot(ROOT, "once per sentence, at its root word"), Slot(ATTACH, "per attachment (head, dependent)"),
           Slot(STOP, "per head and side: before each dependent (stop=0) and after the last (stop=1)")),
    attributes=_attributes,
    slot_rule=_slot_rule,
    dp="split-head inside-outside over projective trees, with valence (Eisner & Satta 1999): the rule program "
       "emc/structures/deptree/chart.em, compiled",
    cost=lambda args: "O(n^3) per sentence of n tokens",
)
