"""How the segmentation's generated glue names its attributes (see
emc/codegen/templates/segmentation.py.j2): the segment slot loops over start positions i and
lengths l; `word` is the id of the segment's word, read from the packed `words` array. Its
parts have no observed-token attributes, so there is no `token_expr`.
"""
from __future__ import annotations

from emc.spec.model import ResolvedAttr
from emc.spec.structure import Binding

TEMPLATE = "segmentation.py.j2"


def arrays(binding: Binding) -> list[str]:
    """offsets: example boundaries in the symbol sequence; words: for every symbol position p and
    length l, the substring vocabulary id of x[p:p+l] at words[p * maxlen + l - 1] (-1 past the
    end of the example)."""
    return ["offsets", "words"]


def attribute_expr(binding: Binding, attr: ResolvedAttr, slot: str) -> str:
    s = binding.latent
    return {f"{s}.word": "word", f"{s}.length": "l"}[attr.attribute.path]

