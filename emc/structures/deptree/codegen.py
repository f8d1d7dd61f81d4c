"""How the deptree's generated glue names its attributes (see emc/codegen/templates/deptree.py.j2).

Every slot loops over the head position h (its token id read into `tag_h`); the attach slot also
over the dependent position a (`tag_a`) with `side` 0 when a is left of h, 1 when right; the stop
slot over the side, the valence `adj` and the decision `s`. Tokens are read from the packed
`tags` array rather than as token attributes, because an attachment reads two tokens of the same
sentence (the head's and the dependent's).
"""
from __future__ import annotations

from emc.spec.model import ResolvedAttr
from emc.spec.structure import Binding

TEMPLATE = "deptree.py.j2"


def arrays(binding: Binding) -> list[str]:
    """offsets: example boundaries; tags: the token id of every word (`<unk>` at decode time for
    tokens the model was not trained on); constrained: 1 for the examples whose tree is given
    (--labeled), gold_head: per word of the corpus, its given head (1-based, 0: the root); both
    empty when no example is labeled."""
    return ["offsets", "tags", "constrained", "gold_head"]


def attribute_expr(binding: Binding, attr: ResolvedAttr, slot: str) -> str:
    d = binding.latent
    return {f"{d}.root": "tag_h", f"{d}.head": "tag_h", f"{d}.dependent": "tag_a", f"{d}.direction": "side",
            f"{d}.adjacent": "adj", f"{d}.stop": "s"}[attr.attribute.path]
