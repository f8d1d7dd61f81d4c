"""How the glue of a label over several fields names its attributes (see
emc/codegen/templates/tuples.py.j2): every slot loops over the classes k; a field's token slot
also over the positions j of that field's tokens in the example."""
from __future__ import annotations

from emc.spec.model import ResolvedAttr
from emc.spec.structure import Binding
from emc.structures.label import field_slots

TEMPLATE = "tuples.py.j2"


def arrays(binding: Binding) -> list[str]:
    """offsets:FIELD per field, in the order written (token, token2, ... slots): example e's tokens
    of that field are positions offsets[e]:offsets[e + 1] of its token arrays."""
    return [f"offsets:{name}" for name in field_slots(binding)]


def attribute_expr(binding: Binding, attr: ResolvedAttr, slot: str) -> str:
    return {binding.latent: "k"}[attr.attribute.path]


def token_expr(binding: Binding, attr: ResolvedAttr, slot: str, array: str) -> str:
    return f"{array}[j]"
