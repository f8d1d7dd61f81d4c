"""How the spantree's generated glue names its attributes (see emc/codegen/templates/spantree.py.j2).

The span slot loops over the spans (i, j) of a sentence and the bracket value c (1: constituent,
0: distituent); a span's yield, context and length ids are read from the packed per-span arrays
into locals before the loop over c. Spantree attributes are never tokens, so there is no
`token_expr`.
"""
from __future__ import annotations

from emc.spec.model import ResolvedAttr
from emc.spec.structure import Binding

TEMPLATE = "spantree.py.j2"


def arrays(binding: Binding) -> list[str]:
    """offsets: example boundaries in tokens; span_start: where each example's spans begin in the
    per-span arrays (span (i, j) of example ex is span_start[ex] + dp.span_index(n, i, j)), then
    n + 1 empty spans when they are modelled; span_yield / span_context / span_length: the ids of
    each span's yield, context and length."""
    return ["offsets", "span_start", "span_yield", "span_context", "span_length"]


def attribute_expr(binding: Binding, attr: ResolvedAttr, slot: str) -> str:
    t = binding.latent
    return {f"{t}.constituent": "c", f"{t}.yield": "yield_id", f"{t}.context": "context_id",
            f"{t}.length": "length_id"}[attr.attribute.path]
