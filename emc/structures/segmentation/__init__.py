"""segmentation(x, maxlen=L): split a symbol sequence into words of at most L symbols (semi-Markov).

Parts are segments: a run of symbols x[i:i+l], 1 <= l <= L. Every block and weight is scored per
segment: `s.word` is the segment's symbol string (its vocabulary is every substring of length
<= L seen in the corpus), `s.length` its length. Fixed weights such as exp(-s.length ^ 1.6)
multiply into the segment score.
"""
from __future__ import annotations

from emc.spec.structure import ArgSpec, Attribute, Binding, Slot, Structure, summary

SEGMENT = "segment"


def _attributes(binding: Binding) -> dict[str, Attribute]:
    s = binding.latent
    return {
        f"{s}.word": Attribute(f"{s}.word", "latent", "substrings", "the segment's symbol string (a word)", SEGMENT,
                                 feature_views=True),
        f"{s}.length": Attribute(f"{s}.length", "latent", "length", "the segment's length in symbols (1..maxlen)", SEGMENT, numeric=True),
    }


def _slot_rule(binding: Binding, outcome: list[Attribute], context: list[Attribute]) -> str:
    return SEGMENT


SEGMENTATION = Structure(
    name="segmentation",
    help=summary(__doc__),
    signature="segmentation(x, maxlen=L)",
    example="latent s : segmentation(x, maxlen=10)",
    input_kinds=("symbols",),
    args=(ArgSpec("maxlen", "int", 10, "longest word, in symbols", low=1, high=64),),
    slots=(Slot(SEGMENT, "per segment (start, length)"),),
    attributes=_attributes,
    slot_rule=_slot_rule,
    dp="semi-Markov forward-backward over segment ends",
    cost=lambda args: f"O(n L) per utterance of n symbols, L = maxlen = {args['maxlen']}",
)
