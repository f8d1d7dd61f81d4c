"""Data for structures written as rules: token corpora in, derivations out.

Input, into the structure's one observed variable: for tokens, the chain's formats (one sentence
per line, CoNLL columns, CoNLL-U) and Penn Treebank trees (the tags are the tokens); for symbols,
the segmentation's (one utterance per line, spaces as gold words with --gold-spaces). Decoding
prints a derivation as its parts, one `name(value,value,...)` per part (the part's variables in
the order the spec declares them), separated by spaces, one example per line (format_decoded says
in which order). What a derivation is scored as: emc/structures/rules/evaluation.py.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emc.io.corpus import Corpus, TokenField
from emc.io.heads import read_dependencies
from emc.io.ptb import TreeError, read_tree
from emc.io.readers import read_lines, require_examples
from emc.io.vocab import Vocabulary
from emc.spec.errors import DataError, EmcError
from emc.spec.model import CheckedModel
from emc.structures.chain import data as chain_data
from emc.structures.posteriors import format_segment_posteriors, format_span_posteriors, format_token_posteriors
from emc.structures.rules import posterior_kind, posterior_size, tag_argument, takes_given
from emc.structures.rules import space_sizes as rule_space_sizes
from emc.structures.rules.evaluation import derivation, evaluate_derivations
from emc.structures.rules.given import given_arrays
from emc.structures.rules.program import decoded_size
from emc.structures.rules.spans import pack_spans
from emc.structures.segmentation import data as segmentation_data

FORMATS = chain_data.FORMATS + segmentation_data.FORMATS + ("ptb",)
FORMAT_HELP = {**chain_data.FORMAT_HELP, **segmentation_data.FORMAT_HELP,
               "ptb": "one Penn Treebank tree per line: its part-of-speech tags are the tokens; its brackets and "
                      "its head-rule dependencies are the gold"}
FIT_OPTIONS = chain_data.FIT_OPTIONS[:2]
DECODE_OPTIONS = chain_data.FIT_OPTIONS[:2]


def read(model: CheckedModel, path: str, options: dict[str, Any], vocabs: dict[str, Vocabulary]) -> Corpus:
    if options.get("output") == "conllu":
        raise DataError(path, None, "--output conllu is for chains and dependency trees: a structure written as "
                                    "rules prints its parts")
    x = _observed(model)
    if model.observed[x] == "symbols":
        return segmentation_data.read_field(x, path, options, vocabs)
    if options.get("format") == "ptb":
        return _read_ptb(x, path, options, vocabs)
    return chain_data.read_field(x, path, options, vocabs)


def _observed(model: CheckedModel) -> str:
    return model.binding.observed[model.structure.observed_roles[0]]


def _read_ptb(x: str, path: str, options: dict[str, Any], vocabs: dict[str, Vocabulary]) -> Corpus:
    """Trees, one per line: the tags are the sentence; brackets and head-rule dependencies the gold
    (corpus.gold["brackets"], ["heads"]). A blank line, or with --max-length a longer sentence,
    is an empty example (decoding prints an empty line for it)."""
    sentences, brackets, heads, numbers = [], [], [], []
    limit = options.get("max_length") or 0
    too_long = 0
    for number, line in read_lines(path):
        tags, spans, tree_heads = [], set(), []
        if line.strip():
            try:
                tree = read_tree(line)
                tags, spans = tree.tags, tree.spans
                tree_heads = read_dependencies(line)[1]
            except TreeError as err:
                raise DataError(path, number, f"not a Penn Treebank tree: {err}") from None
        if limit and len(tags) > limit:
            tags, spans, tree_heads = [], set(), []
            too_long += 1
        sentences.append(tags)
        brackets.append(spans)
        heads.append(tree_heads)
        numbers.append(number)
    require_examples(path, sum(1 for s in sentences if s), "sentence")
    vocab = vocabs.setdefault(f"vocab:{x}", Vocabulary())
    corpus = Corpus(path, {x: TokenField.from_lists([vocab.encode(s) for s in sentences], vocab)}, np.array(numbers),
                    too_long=too_long)
    corpus.gold["brackets"] = brackets
    corpus.gold["heads"] = heads
    return corpus


def named_values(model: CheckedModel, options: dict[str, Any], corpus: Corpus) -> dict[str, list[str]]:
    """A tagging program's labels named by the labeled examples' tags, their number its argument
    (rules/__init__.py: tag_argument): {argument: the tags}, as a chain's states are named."""
    argument = tag_argument(model.structure.program)
    tags = corpus.gold.get("tags")
    if argument is None or tags is None or corpus.labeled_mask is None or not corpus.labeled_mask.any():
        return {}
    names: set[str] = set()
    for ex in np.flatnonzero(corpus.labeled_mask).tolist():
        names.update(tags.tokens(ex))
    return {argument: sorted(names)}


def space_sizes(model: CheckedModel, args: dict[str, Any]) -> dict[str, int]:
    return rule_space_sizes(model.structure.program, args)


def pack(model: CheckedModel, corpus: Corpus, args: dict[str, Any], labels: dict[str, list[str]],
         options: dict[str, Any], vocabs: dict[str, Vocabulary], frozen) -> dict[str, np.ndarray]:
    """offsets of the examples, the span ids of the program's `x[i:j]` attributes, and the given
    structures of the labeled examples (emc/structures/rules/given.py)."""
    field = corpus.fields[_observed(model)]
    arrays = {"offsets": field.offsets.astype(np.int32)}
    arrays.update(pack_spans(model, field, args, vocabs, frozen))
    given = given_arrays(model.structure.program, corpus, field.lengths(), args, labels)  # refused where none can be
    if takes_given(model.structure.program):
        arrays.update(given)
    return arrays


def decoded_length(corpus: Corpus, model: CheckedModel) -> np.ndarray:
    """out[0] = the number of parts, then each part's number and variables (PART_WIDTH values)."""
    return decoded_size(model.structure.program, corpus.fields[_observed(model)].lengths())


def posterior_length(corpus: Corpus, model: CheckedModel, args: dict[str, Any]) -> np.ndarray:
    """Per token, a value per label (or per head, the root first): posterior_example's output."""
    program = model.structure.program
    if posterior_kind(program) is None:
        raise EmcError("--posteriors prints what a program's parts label (`labels x[i] as k`, `labels x[i:j] as c`) "
                       "or attach (`attaches d to h`), the words they read (`w = x[i:j]`), or the spans a program "
                       "built by span width builds, and this program has none of these: decode the best derivation, "
                       "or draw from the posterior with --sample N")
    lengths = corpus.fields[_observed(model)].lengths()
    return np.array([posterior_size(program, args, n) for n in lengths.tolist()], np.int64)


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
    """Per token: the token, then VALUE:probability for the values above 1e-3, most probable
    first; a value is a label, or a head (1-based, 0 for the root) as in CoNLL. For spans, `i-j:p`
    per span that may or may not be built (fenceposts 0..n), as the span tree prints them; for
    segments, a line per word of probability >= 1e-3, as the segmentation prints them."""
    tokens = corpus.fields[_observed(model)].tokens(ex)
    kind = posterior_kind(model.structure.program)
    if kind == "spans":
        return format_span_posteriors(len(tokens), marginals)
    if kind == "segments":
        joint = "" if model.observed[_observed(model)] == "symbols" else " "
        return format_segment_posteriors(tokens, marginals, joint)
    return format_token_posteriors(tokens, marginals)


def evaluate(corpus: Corpus, model: CheckedModel, decoded: list[np.ndarray], labels: dict[str, list[str]]) -> dict[str, float]:
    """See emc/structures/rules/evaluation.py: tagging, attachment, brackets, words or chunks."""
    return evaluate_derivations(corpus, model, _observed(model), decoded)
