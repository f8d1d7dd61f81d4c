"""How the label structure's generated glue names its attributes (see
emc/codegen/templates/label.py.j2).

Both slots loop over the example's classes k (all K, or a labeled example's own). The token slot
also loops over the example's bag of words: entry i of the bag is one distinct token with its
count, and `bag_token[i]` is the position of one of its occurrences in the token arrays, so every
token array (views included) is read there.
"""
from __future__ import annotations

from emc.spec.model import ResolvedAttr
from emc.spec.structure import Binding

TEMPLATE = "label.py.j2"


def arrays(binding: Binding) -> list[str]:
    """bag_offsets: example e's bag is entries bag_offsets[e]:bag_offsets[e + 1]; bag_token: per
    entry, the position of one occurrence of its token; bag_count: per entry, how many times the
    token occurs; class_of: per example, its class when labeled, else -1 (empty when no example
    is labeled)."""
    return ["bag_offsets", "bag_token", "bag_count", "class_of"]


def attribute_expr(binding: Binding, attr: ResolvedAttr, slot: str) -> str:
    return {binding.latent: "k"}[attr.attribute.path]


def token_expr(binding: Binding, attr: ResolvedAttr, slot: str, array: str) -> str:
    return f"{array}[bag_token[i]]"
