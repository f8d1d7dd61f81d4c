"""label(d, classes=K): one latent class per example (a mixture model).

A block over the class alone, P(c), fires once per example; a block over a token of the example,
P(d | c), fires once per token (the bag of words of a naive Bayes mixture).
"""
from __future__ import annotations

from emc.structures.base import ArgSpec, Attribute, Binding, Slot, SlotError, Structure

EXAMPLE, TOKEN = "example", "token"


def _attributes(binding: Binding) -> dict[str, Attribute]:
    c, d = binding.latent, binding.observed["x"]
    return {
        c: Attribute(c, "latent", "classes", "the example's class"),
        d: Attribute(d, "observed", f"vocab:{d}", "a token of the example (the block fires once per token)", TOKEN, tokens_of=d),
    }


def _slot_rule(binding: Binding, outcome: list[Attribute], context: list[Attribute]) -> str:
    attrs = outcome + context
    if not any(a.path == binding.latent for a in attrs):
        raise SlotError(f"this block does not involve the class '{binding.latent}', so it cannot change the posterior",
                        f"condition on it: P({', '.join(a.path for a in outcome)} | {binding.latent})")
    return TOKEN if any(a.slot == TOKEN for a in attrs) else EXAMPLE


LABEL = Structure(
    name="label",
    help=__doc__.split("\n\n")[1].replace("\n", " "),
    signature="label(d, classes=K)",
    example="latent c : label(d, classes=20)",
    observed_roles=("x",),
    uses_from=False,
    input_kinds=("tokens",),
    args=(ArgSpec("classes", "int", None, "number of classes", low=1, high=100000),),
    slots=(Slot(EXAMPLE, "once per example"), Slot(TOKEN, "once per token of the example")),
    attributes=_attributes,
    slot_rule=_slot_rule,
    dp="one posterior over the classes",
    cost=lambda args: f"O(K n) per example of n tokens, K = {args['classes']}",
)
