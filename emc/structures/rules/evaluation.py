"""What a derivation of a structure written as rules is scored as, against the gold the input
carries. A derivation is read through what its parts declare:

- parts that `labels x[t] as k`: a tag per token, scored as tagging (many-to-one, one-to-one, VI);
- parts that `attaches d to h` (or `attaches h`, to the root): a head per token, scored by
  directed and undirected attachment accuracy;
- otherwise the spans of the parts (those a part labels, `labels x[i:j] as c`; else their head
  item's two positions, as CKY's span(i, j, a), or their first two variables when both are
  positions, as a segment seg(i, j, ...)): scored as
  brackets against gold trees (PTB), as words against gold spaces (symbols), or as chunks
  against gold B-/I-/O tags (chunk-span F1, `boundary_f1`, beside the all-singletons baseline;
  with labeled spans also the many-to-one accuracy of the labels against the gold chunk types).
"""
from __future__ import annotations

import numpy as np

from emc.eval.brackets import bracket_scores
from emc.eval.chunks import chunk_spans, span_scores
from emc.eval.dependencies import attachment_scores
from emc.eval.segmentation import segmentation_scores
from emc.eval.tagging import tagging_scores
from emc.io.corpus import Corpus
from emc.spec.model import CheckedModel
from emc.structures.rules.program import N, Program, Rule, arity_bound, evaluate


def derivation(model: CheckedModel, decoded: np.ndarray) -> list[tuple[str, tuple[int, ...]]]:
    """The decoded parts as (part name, variable values), in read-back order (top-down)."""
    program = model.structure.program
    width = arity_bound(program)
    out = []
    for q in range(int(decoded[0])):
        row = decoded[1 + q * width: 1 + (q + 1) * width]
        rule = program.parts[int(row[0])]
        out.append((rule.name, tuple(int(v) for v in row[1:1 + len(rule.params)])))
    return out


def _firings(model: CheckedModel, decoded: np.ndarray, length: int):
    """(rule, variable values with n and the arguments) of each decoded part."""
    program = model.structure.program
    for name, values in derivation(model, decoded):
        rule = next(r for r in program.parts if r.name == name)
        env = dict(zip(rule.params, values))
        env.update({N: length, **model.binding.args})
        yield rule, env


def segments(model: CheckedModel, decoded: np.ndarray, length: int) -> list[tuple[int, int]]:
    """The spans [i, j) of the parts that cover spans of tokens."""
    program = model.structure.program
    spans = set()
    for rule, env in _firings(model, decoded, length):
        span = _span(program, rule, env)
        if span is not None and 0 <= span[0] < span[1] <= length:
            spans.add(span)
    return sorted(spans)


def _span(program: Program, rule: Rule, env: dict) -> tuple[int, int] | None:
    if rule.label is not None and rule.label[2] is not None:  # labels x[i:j] as c
        return evaluate(rule.label[1], env), evaluate(rule.label[2], env)
    if any(r.label is not None and r.label[2] is not None for r in program.parts):
        return None  # the parts that label spans are the segments
    head = program.items[rule.head.name]
    if len(head.positions) == 2:
        first, last = head.positions
        return evaluate(rule.head.args[first], env), evaluate(rule.head.args[last], env)
    positional = set()
    for ref in (rule.head, *rule.body):
        for d in program.items[ref.name].positions:
            positional |= set(ref.args[d].names)
    if len(rule.params) >= 2 and rule.params[0] in positional and rule.params[1] in positional:
        return env[rule.params[0]], env[rule.params[1]]
    return None


def token_labels(model: CheckedModel, decoded: np.ndarray, length: int) -> np.ndarray:
    """The label each token gets from the part that `labels` it or its span (-1: none)."""
    labels = np.full(length, -1, np.int64)
    for rule, env in _firings(model, decoded, length):
        if rule.label is not None:
            _, start, end, variable = rule.label
            first = evaluate(start, env)
            last = evaluate(end, env) if end is not None else first + 1
            labels[max(first, 0):min(last, length)] = env[variable]
    return labels


def _labels_tokens(parts: list[Rule]) -> bool:
    return any(rule.label is not None and rule.label[2] is None for rule in parts)


def _labels_spans(parts: list[Rule]) -> bool:
    return any(rule.label is not None and rule.label[2] is not None for rule in parts)


def token_heads(model: CheckedModel, decoded: np.ndarray, length: int) -> list[int]:
    """Each token's head from the parts that attach it: 1-based, 0 for the root, -1 for none."""
    heads = [-1] * length
    for rule, env in _firings(model, decoded, length):
        if rule.attach is not None:
            dependent, head = rule.attach
            d = evaluate(dependent, env)
            if 0 <= d < length:
                heads[d] = 0 if head is None else evaluate(head, env) + 1
    return heads


def evaluate_derivations(corpus: Corpus, model: CheckedModel, x: str, decoded: list[np.ndarray]) -> dict[str, float]:
    """The scores of the decoded derivations against the corpus's gold, by what the parts declare."""
    if not decoded:
        return {}
    parts = model.structure.program.parts
    field = corpus.fields[x]
    lengths = field.lengths()
    if any(rule.attach is not None for rule in parts):
        gold = corpus.gold.get("heads")
        if gold is None:
            return {}
        return attachment_scores([token_heads(model, out, lengths[ex]) for ex, out in enumerate(decoded)], gold)
    if _labels_tokens(parts):
        gold = corpus.gold.get("tags")
        if gold is None:
            return {}
        predicted = np.concatenate([token_labels(model, out, lengths[ex]) for ex, out in enumerate(decoded)])
        return tagging_scores(predicted, gold.ids[:len(predicted)])
    spans = [segments(model, out, lengths[ex]) for ex, out in enumerate(decoded)]
    if "brackets" in corpus.gold:
        return bracket_scores([set(s) for s in spans], corpus.gold["brackets"], list(lengths))
    if "words" in corpus.gold:
        starts = [np.zeros(length, np.int8) for length in lengths]
        for ex, found in enumerate(spans):
            for i, _ in found:
                starts[ex][i] = 1
        return segmentation_scores(np.concatenate(starts), np.concatenate(corpus.gold["words"]), field.offsets)
    scores = _chunk_scores(corpus, spans)
    if scores and _labels_spans(parts):
        # each token gets its segment's class, against its gold chunk's type (B-NP, I-NP: NP; O: O)
        gold = corpus.gold["tags"]
        kinds = np.array([tag.split("-", 1)[-1] for tag in gold.vocab.values])
        _, kind_ids = np.unique(kinds, return_inverse=True)
        predicted = np.concatenate([token_labels(model, out, lengths[ex]) for ex, out in enumerate(decoded)])
        classes = tagging_scores(predicted, kind_ids[gold.ids[:len(predicted)]])
        scores.update({f"class_{name}": value for name, value in classes.items() if name != "vi"})
    return scores


def _chunk_scores(corpus: Corpus, spans: list[list[tuple[int, int]]]) -> dict[str, float]:
    gold = corpus.gold.get("tags")
    if gold is None or not all(tag == "O" or tag[:2] in ("B-", "I-") for tag in gold.vocab.values[1:]):
        return {}
    gold_spans = [chunk_spans(gold.tokens(ex)) for ex in range(len(spans))]
    singletons = [[(i, i + 1) for i in range(len(g) and g[-1][1])] for g in gold_spans]
    scores = span_scores(gold_spans, spans, "boundary")
    scores["singletons_f1"] = span_scores(gold_spans, singletons, "boundary")["boundary_f1"]
    return scores
