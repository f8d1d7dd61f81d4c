"""Data for structures written as rules: token corpora in, derivations out.

Input: the chain's formats (one sentence per line, CoNLL columns, CoNLL-U), read into the
structure's one observed variable. Decoding prints a derivation as its parts, one
`name(value,value,...)` per part (the part's variables in the order the spec declares them),
separated by spaces, one example per line (format_decoded says in which order). Gold tags
(`--gold-column`) are scored as tagging when parts label tokens (`labels x[t] as k`), else, when
they are B-/I-/O chunk tags, the parts whose first two variables are the ends of a span of tokens
are read as segments and scored by chunk-span F1 (`boundary_f1`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emc.eval.chunks import chunk_spans, span_scores
from emc.eval.tagging import tagging_scores
from emc.io.corpus import Corpus
from emc.io.vocab import Vocabulary
from emc.spec.errors import DataError, EmcError
from emc.spec.model import CheckedModel
from emc.structures.chain import data as chain_data
from emc.structures.rules import space_sizes as rule_space_sizes
from emc.structures.rules.program import N, arity_bound
from emc.structures.rules.program import evaluate as evaluate_index
from emc.structures.rules.spans import SPANS, pack_spans

FORMATS = chain_data.FORMATS
FORMAT_HELP = chain_data.FORMAT_HELP
FIT_OPTIONS = chain_data.FIT_OPTIONS[:2]
DECODE_OPTIONS = chain_data.FIT_OPTIONS[:2]


def read(model: CheckedModel, path: str, options: dict[str, Any], vocabs: dict[str, Vocabulary]) -> Corpus:
    if options.get("output") == "conllu":
        raise DataError(path, None, "--output conllu is for chains and dependency trees: a structure written as "
                                    "rules prints its parts")
    return chain_data.read_field(model.binding.observed[model.structure.observed_roles[0]], path, options, vocabs)


def space_sizes(model: CheckedModel, args: dict[str, Any]) -> dict[str, int]:
    return rule_space_sizes(model.structure.program, args)


def pack(model: CheckedModel, corpus: Corpus, args: dict[str, Any], labels: dict[str, list[str]],
         options: dict[str, Any], vocabs: dict[str, Vocabulary], frozen) -> dict[str, np.ndarray]:
    """offsets of the examples, and the span ids of the program's `x[i:j]` attributes."""
    if corpus.labeled_mask is not None and corpus.labeled_mask.any():
        raise DataError(corpus.path, None, "a structure written as rules does not take labeled examples yet")
    field = corpus.fields[model.binding.observed[model.structure.observed_roles[0]]]
    arrays = {"offsets": field.offsets.astype(np.int32)}
    arrays.update(pack_spans(model, field, args, vocabs, frozen))
    return arrays


def decoded_length(corpus: Corpus, model: CheckedModel) -> np.ndarray:
    """out[0] = the number of parts, then each part's number and variables (PART_WIDTH values)."""
    lengths = corpus.fields[model.binding.observed[model.structure.observed_roles[0]]].lengths()
    program = model.structure.program
    return 1 + 4 * (lengths + 3) * len(program.items) * arity_bound(program)


def posterior_length(corpus: Corpus, model: CheckedModel, args: dict[str, Any]) -> np.ndarray:
    return np.zeros(len(corpus), np.int64)


def derivation(model: CheckedModel, decoded: np.ndarray) -> list[tuple[str, tuple[int, ...]]]:
    """The decoded parts as (part name, variable values)."""
    program = model.structure.program
    width = arity_bound(program)
    parts = program.parts
    out = []
    for q in range(int(decoded[0])):
        row = decoded[1 + q * width: 1 + (q + 1) * width]
        rule = parts[int(row[0])]
        out.append((rule.name, tuple(int(v) for v in row[1:1 + len(rule.params)])))
    return out


def format_decoded(corpus: Corpus, model: CheckedModel, ex: int, decoded: np.ndarray, labels: dict[str, list[str]]) -> str:
    """The parts, left to right for a program built by position (a chain's steps in sentence
    order), top-down for one built by span width (a tree's root first, each node before its
    children, left child first)."""
    parts = derivation(model, decoded)
    if model.structure.program.kind == "last":
        parts.reverse()
    return " ".join(f"{name}({','.join(map(str, values))})" for name, values in parts)


def format_posterior(corpus: Corpus, model: CheckedModel, ex: int, marginals: np.ndarray,
                     labels: dict[str, list[str]], args: dict[str, Any]) -> str:
    raise EmcError("--posteriors is not available for structures written as rules yet: decode the best "
                   "derivation, or draw from the posterior with --sample N")


def segments(model: CheckedModel, decoded: np.ndarray, length: int) -> list[tuple[int, int]]:
    """The spans [i, j) of the parts whose first two variables are positions i < j."""
    program = model.structure.program
    spans = []
    for name, values in derivation(model, decoded):
        rule = next(r for r in program.parts if r.name == name)
        if len(values) >= 2 and _is_span(program, rule) and 0 <= values[0] < values[1] <= length:
            spans.append((values[0], values[1]))
    return sorted(set(spans))


def _is_span(program, rule) -> bool:
    """Both of the part's first two variables index positions of items."""
    positional = set()
    for ref in (rule.head, *rule.body):
        item = program.items[ref.name]
        for d in item.positions:
            positional |= set(ref.args[d].names)
    return rule.params[0] in positional and rule.params[1] in positional


def token_labels(model: CheckedModel, decoded: np.ndarray, length: int) -> np.ndarray:
    """The label each token gets from the part that `labels` it (-1: none)."""
    program = model.structure.program
    labels = np.full(length, -1, np.int64)
    for name, values in derivation(model, decoded):
        rule = next(r for r in program.parts if r.name == name)
        if rule.label is not None:
            env = dict(zip(rule.params, values))
            env.update({N: length, **model.binding.args})
            position = evaluate_index(rule.label[1], env)
            if 0 <= position < length:
                labels[position] = env[rule.label[2]]
    return labels


def evaluate(corpus: Corpus, model: CheckedModel, decoded: list[np.ndarray], labels: dict[str, list[str]]) -> dict[str, float]:
    """With parts that label tokens (`labels x[t] as k`): tagging accuracy against the gold tags
    (many-to-one, one-to-one, VI). Otherwise, with gold B-/I-/O chunk tags: chunk-span precision,
    recall and F1 of the parts over spans, and the F1 of the all-singletons baseline (every token
    its own segment)."""
    gold = corpus.gold.get("tags")
    if gold is None or not decoded:
        return {}
    field = corpus.fields[model.binding.observed[model.structure.observed_roles[0]]]
    lengths = field.lengths()
    if any(rule.label is not None for rule in model.structure.program.parts):
        predicted = np.concatenate([token_labels(model, out, lengths[ex]) for ex, out in enumerate(decoded)])
        return tagging_scores(predicted, gold.ids[:len(predicted)])
    if not all(tag == "O" or tag[:2] in ("B-", "I-") for tag in gold.vocab.values[1:]):
        return {}
    gold_spans, predicted, singletons = [], [], []
    for ex, out in enumerate(decoded):
        tags = gold.tokens(ex)
        gold_spans.append(chunk_spans(tags))
        predicted.append(segments(model, out, lengths[ex]))
        singletons.append([(i, i + 1) for i in range(len(tags))])
    scores = span_scores(gold_spans, predicted, "boundary")
    scores.update({"singletons_f1": span_scores(gold_spans, singletons, "boundary")["boundary_f1"]})
    return scores
