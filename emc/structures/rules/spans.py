"""Span attributes (`w = x[i:j]`): the tokens from i up to j as one word of their own vocabulary.

Every run of at most L tokens inside an example gets an id in the `substrings` vocabulary (its
tokens joined by spaces; symbols joined as they are, as the segmentation names its words), packed as the segmentation packs its substrings: spans[p * L + l - 1]
is the id of the run of length l starting at token p. L, the longest span any part can have, is
found by grounding the variables the spans' ends depend on at two lengths: it must not grow with
the input.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emc.io.corpus import TokenField
from emc.io.vocab import Vocabulary
from emc.spec.errors import EmcError
from emc.structures.rules.program import Program, Rule, span_bound
from emc.structures.segmentation.substrings import NO_RUN, index_runs

SPANS = "substrings"  # the name the segmentation gives its runs: a twin written as rules shares its vocabulary


def span_attributes(program: Program) -> list[tuple[Rule, Any]]:
    return [(rule, attr) for rule in program.parts for attr in rule.where if attr.kind == "span"]


def longest_span(program: Program, args: dict[str, int]) -> int:
    """The longest span of any span attribute under the arguments (0 without them). The checker
    refuses a span that grows with the input under the spec's arguments; arguments set at fit
    time are checked again here."""
    longest = 0
    for rule, attr in span_attributes(program):
        found = span_bound(rule, attr, args)
        if found is None:
            raise EmcError(f"part '{rule.name}': the span {attr.observed}[{attr.index.text}:{attr.end.text}] can grow "
                           "with the input under these arguments: bound its length by the structure's arguments")
        longest = max(longest, found)
    return longest


def pack_spans(model, field: TokenField, args: dict[str, Any], vocabs: dict[str, Vocabulary], frozen) -> dict:
    """`spans` (the id of every run, NO_RUN past an example's end) and `span_length` ([L])."""
    program = model.structure.program
    if not span_attributes(program):
        return {}
    length = max(1, longest_span(program, args))
    run_of, first_start, lengths = index_runs(np.ascontiguousarray(field.ids, np.int32),
                                              np.ascontiguousarray(field.offsets, np.int64), length)
    values = field.vocab.values
    joint = "" if model.observed[model.binding.observed[program.observed[0]]] == "symbols" else " "
    names = [joint.join(values[t] for t in field.ids[s:s + l]) for s, l in zip(first_start.tolist(), lengths.tolist())]
    vocab = vocabs.setdefault(SPANS, Vocabulary())
    ids = np.array(vocab.encode(names), np.int32)
    spans = np.where(run_of >= 0, ids[np.maximum(run_of, 0)], NO_RUN).astype(np.int32)
    if frozen is None:
        vocab.count(spans[spans != NO_RUN])
    elif SPANS not in frozen.growing:
        spans[spans >= frozen.get(SPANS, 0)] = 0
    return {"spans": spans, "span_length": np.array([length], np.int32)}
