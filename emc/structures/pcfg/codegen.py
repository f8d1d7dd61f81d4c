"""How the labeled span tree's generated glue names its attributes (see
emc/codegen/templates/pcfg.py.j2).

The rule slot loops over (left, right, parent) labels (b, c, a), the emit slot over the positions
i of a sentence and the preterminal's label a, the root slot over the root's label a. The node
slot's factors multiply into both the rule scores (with `preterminal` = 0) and the emission
scores (`preterminal` = 1).
"""
from __future__ import annotations

from emc.spec.model import ResolvedAttr
from emc.spec.structure import Binding

TEMPLATE = "pcfg.py.j2"


def arrays(binding: Binding) -> list[str]:
    """offsets: example boundaries in tokens (the tokens themselves are in the token arrays)."""
    return ["offsets"]


def attribute_expr(binding: Binding, attr: ResolvedAttr, slot: str) -> str:
    t = binding.latent
    return {f"{t}.label": "a", f"{t}.left_label": "b", f"{t}.right_label": "c", f"{t}.root": "a",
            f"{t}.preterminal": "preterminal"}[attr.attribute.path]


def token_expr(binding: Binding, attr: ResolvedAttr, slot: str, array: str) -> str:
    return f"{array}[first + i]"
