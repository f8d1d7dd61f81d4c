"""label(d, classes=K): one latent class per example (a mixture model).

A block over the class alone, P(c), fires once per example; a block over a token of the example,
P(d | c), fires once per token (the bag of words of a naive Bayes mixture). Over several observed
variables, label(v, n, classes=K), an example is a tuple of fields, one line `v ||| n`, each field
its own vocabulary and its blocks firing once per token of that field (latent classes over
verb-object pairs: Pereira, Tishby & Lee 1993; Rooth et al. 1999).
"""
from __future__ import annotations

from emc.spec.structure import ArgSpec, Attribute, Binding, Slot, SlotError, Structure, summary

EXAMPLE, TOKEN = "example", "token"
MORE_FIELDS = 3  # observed variables after the first: label(v, n, classes=K) has fields v and n


def field_slots(binding: Binding) -> dict[str, str]:
    """Observed variable -> the slot its tokens feed: token, token2, token3, ... in the order written."""
    roles = ["x"] + [f"x{i + 2}" for i in range(MORE_FIELDS)]
    return {binding.observed[role]: TOKEN + (str(i + 1) if i else "") for i, role in enumerate(roles)
            if role in binding.observed}


def _attributes(binding: Binding) -> dict[str, Attribute]:
    c = binding.latent
    attrs = {c: Attribute(c, "latent", "classes", "the example's class")}
    slots = field_slots(binding)
    for d, slot in slots.items():
        what = "a token of the example" if len(slots) == 1 else f"a token of the example's field {d}"
        attrs[d] = Attribute(d, "observed", f"vocab:{d}", f"{what} (the block fires once per token)", slot, tokens_of=d)
    return attrs


def _slot_rule(binding: Binding, outcome: list[Attribute], context: list[Attribute]) -> str:
    attrs = outcome + context
    if not any(a.path == binding.latent for a in attrs):
        raise SlotError(f"this block does not involve the class '{binding.latent}', so it cannot change the posterior",
                        f"condition on it: P({', '.join(a.path for a in outcome)} | {binding.latent})")
    fields = {a.slot for a in attrs if a.slot}
    if len(fields) > 1:
        raise SlotError("a block reads the tokens of one observed variable, not of several",
                        "one block per field: P(v | c), P(n | c)")
    return fields.pop() if fields else EXAMPLE


LABEL = Structure(
    name="label",
    help=summary(__doc__),
    signature="label(d, classes=K)",
    example="latent c : label(d, classes=20)",
    extra_observed=MORE_FIELDS,
    args=(ArgSpec("classes", "int", None, "number of classes", low=1, high=100000),),
    slots=(Slot(EXAMPLE, "once per example"), Slot(TOKEN, "once per token of the example, or of its first field"))
    + tuple(Slot(f"{TOKEN}{i + 2}", f"once per token of field {i + 2}") for i in range(MORE_FIELDS)),
    attributes=_attributes,
    slot_rule=_slot_rule,
    dp="one posterior over the classes",
    cost=lambda args: f"O(K n) per example of n tokens (n summed over the fields of a tuple), K = {args['classes']}",
    package=lambda binding: "tuples" if len(binding.observed) > 1 else "label",
)
