"""How the chain's generated glue names its attributes (see emc/codegen/templates/chain.py.j2).

Emission slot: loops over positions t and states k. Transition slot: loops over the previous
states (i = z.prev2, j = z.prev; START = K) and the next state k (STOP = K).
"""
from __future__ import annotations

from emc.spec.model import ResolvedAttr
from emc.spec.structure import Binding

TEMPLATE = "chain.py.j2"


def arrays(binding: Binding) -> list[str]:
    """offsets: example boundaries in the token arrays; constrained: 1 for examples whose states
    are restricted (tag dictionary, labeled examples); allowed_start / allowed_states: per token,
    the allowed states (a CSR list)."""
    return ["offsets", "constrained", "allowed_start", "allowed_states"]


def attribute_expr(binding: Binding, attr: ResolvedAttr, slot: str) -> str:
    path = attr.attribute.path
    z = binding.latent
    return {z: "k", f"{z}.prev": "j", f"{z}.prev2": "i"}[path]


def token_expr(binding: Binding, attr: ResolvedAttr, slot: str, array: str) -> str:
    return f"{array}[first + t]"
