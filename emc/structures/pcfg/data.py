"""Labeled span-tree (PCFG) data: the span tree's input (tag sequences, or Penn Treebank trees with
`--format ptb`, `--max-length`), packed as token offsets (and the token ids the blocks read); the
best tree, a derivation of the DP's rule program, printed with its labels, `(3 (1 DT NN) (5 VBD
(1 DT NN)))` (preterminals as their symbols); unlabeled bracket scores against gold trees, as for
the constituent-context model. Labels are numbers 0..K-1.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emc.eval.brackets import bracket_scores
from emc.io.corpus import Corpus
from emc.io.vocab import Vocabulary
from emc.spec.model import CheckedModel
from emc.structures.rules.evaluation import derivation
from emc.structures.rules.given import given_arrays
from emc.structures.rules.program import decoded_size
from emc.structures.spantree.data import (DECODE_OPTIONS, FIT_OPTIONS, FORMAT_HELP, FORMATS,  # noqa: F401
                                          format_posterior, read)


def space_sizes(model: CheckedModel, args: dict[str, Any]) -> dict[str, int]:
    return {"labels": int(args["labels"]), "bool": 2}


def pack(model: CheckedModel, corpus: Corpus, args: dict[str, Any], labels: dict[str, list[str]],
         options: dict[str, Any], vocabs: dict[str, Vocabulary], frozen: dict[str, int] | None) -> dict[str, np.ndarray]:
    """offsets, and the labeled examples' brackets, which their trees' spans may not cross
    (emc/structures/rules/given.py: a partially bracketed corpus)."""
    field = corpus.fields[model.binding.observed["x"]]
    return {"offsets": field.offsets.astype(np.int32),
            **given_arrays(model.code_model.structure.program, corpus, field.lengths(), args, labels)}


def decoded_length(corpus: Corpus, model: CheckedModel) -> np.ndarray:
    """The decoded derivation of the DP's rule program (emc/structures/pcfg/__init__.py: PROGRAM)."""
    return decoded_size(model.code_model.structure.program, corpus.fields[model.binding.observed["x"]].lengths())


def posterior_length(corpus: Corpus, model: CheckedModel, args: dict[str, Any]) -> np.ndarray:
    """P(node) for each non-empty span."""
    n = corpus.fields[model.binding.observed["x"]].lengths()
    return n * (n + 1) // 2


def decoded_nodes(model: CheckedModel, decoded: np.ndarray) -> dict[tuple[int, int], tuple[int, int]]:
    """(start, end) -> (label, split) for each node of a decoded tree (split 0 for a preterminal),
    from the program's parts: leaf(i, a) a preterminal over x[i], binary(i, k, j, a, b, c) a node
    over x[i:j] split at k."""
    nodes = {}
    for name, values in derivation(model.code_model, decoded):
        if name == "leaf":
            i, a = values
            nodes[(i, i + 1)] = (a, 0)
        elif name == "binary":
            i, k, j, a = values[:4]
            nodes[(i, j)] = (a, k)
    return nodes


def labeled_brackets(symbols: list[str], nodes: dict[tuple[int, int], tuple[int, int]]) -> str:
    """`(3 (1 DT NN) (5 VBD ...))`: each binary node as (label left right); preterminals as their symbols."""
    if not nodes:
        return ""

    def node(i: int, j: int) -> str:
        label, split = nodes[(i, j)]
        if j - i == 1:
            return symbols[i]
        return f"({label} {node(i, split)} {node(split, j)})"

    if len(symbols) == 1:
        return f"({nodes[(0, 1)][0]} {symbols[0]})"
    return node(0, len(symbols))


def format_decoded(corpus: Corpus, model: CheckedModel, ex: int, decoded: np.ndarray, labels: dict[str, list[str]]) -> str:
    return labeled_brackets(corpus.fields[model.binding.observed["x"]].tokens(ex), decoded_nodes(model, decoded))


def evaluate(corpus: Corpus, model: CheckedModel, decoded: list[np.ndarray], labels: dict[str, list[str]]) -> dict[str, float]:
    """Unlabeled bracket precision, recall, F1 and crossing brackets against the gold trees, the
    CCM's conventions (emc/eval/brackets.py: no credit for the whole sentence or single symbols)."""
    gold = corpus.gold.get("brackets")
    if gold is None:
        return {}
    lengths = corpus.fields[model.binding.observed["x"]].lengths().tolist()
    predicted = [set(decoded_nodes(model, d)) for d in decoded]
    scores = bracket_scores(predicted, gold, lengths)
    return {"unlabeled_precision": scores["precision"], "unlabeled_recall": scores["recall"],
            "unlabeled_f1": scores["f1"], "crossing_brackets": scores["crossing_brackets"]}
