"""How the alignment's generated glue names its attributes (see emc/codegen/templates/alignment.py.j2).

Link blocks (over a.target and a.source) have sparse tables: the glue finds each link's entry
through the packed index (index.py, links.py), whose rows the data module computes from the
token ids (with NULL) when it packs the corpus. So the glue never evaluates the link slot's row
and outcome expressions; the token expressions below say what they stand for. Jump blocks loop
over the jump buckets d, and so do diagonal blocks (a link's distance from the diagonal is
bucketed as a jump).
"""
from __future__ import annotations

from emc.spec.model import ResolvedAttr
from emc.spec.structure import Binding

TEMPLATE = "alignment.py.j2"


def arrays(binding: Binding) -> list[str]:
    """source_offsets / target_offsets: each pair's tokens; pair_rows / pair_ranks: where each
    pair's context-side rows and link ranks start in link_rows / link_ranks; row_starts: each
    link block's CSR row starts; blocks: per link block, (context side, its row_starts offset);
    rank_format: 1 when ranks are 16-bit (two per int32), 0 when 32-bit."""
    return ["source_offsets", "target_offsets", "pair_rows", "pair_ranks", "link_rows", "link_ranks",
            "row_starts", "blocks", "rank_format"]


def attribute_expr(binding: Binding, attr: ResolvedAttr, slot: str) -> str:
    if attr.attribute.path in (f"{binding.latent}.jump", f"{binding.latent}.diagonal"):
        return "d"
    raise ValueError(f"{attr.text} is read through the link index, not by an expression")


def token_expr(binding: Binding, attr: ResolvedAttr, slot: str, array: str) -> str:
    if attr.attribute.path == f"{binding.latent}.source":
        return f"{array}[source_first + i]"
    return f"{array}[target_first + j]"
