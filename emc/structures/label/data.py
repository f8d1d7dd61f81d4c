"""Label data: documents (emc/io/documents.py) packed as bags of words, labeled documents as
class constraints, fixed blocks from files, and one class per line as output.

A document is packed as its bag of words: one entry per distinct word with its count, so the
E-step costs O(distinct words x classes) per document and nothing dense over the vocabulary is
ever built. Vocabulary: `read` adds every word of a file; once every file is read,
`complete_corpus` applies the frequency cut-off (--stop-words, --min-count) to the whole training
data, or, with a trained vocabulary (`emc decode`, `emc fit --init RUN`), keeps exactly the words
of that vocabulary and leaves the others out, as the cut-off left them out in training (so no word
is ever read as `<unk>`).

Classes: with --supervised-field NAME the documents carrying field NAME are labeled; the classes
are then the label names (their number overrides the spec's `classes`), each labeled document is
restricted to its class, and decoding prints names. Otherwise classes are numbered 0..K-1 and a
`label` field (--gold-field) is only gold for evaluation.
"""
from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

import numpy as np

from emc.io.corpus import Corpus, TokenField
from emc.io.documents import TOKENIZERS, TextOptions, frequency_cutoff, read_documents
from emc.io.fixed_blocks import read_fixed_table
from emc.io.readers import require_examples
from emc.io.vocab import Vocabulary
from emc.spec.errors import DataError
from emc.spec.model import CheckedModel, ResolvedAttr

FORMATS = ("text", "jsonl")
FORMAT_HELP = {
    "text": "one document per line (label structure: tokenised by --tokenize)",
    "jsonl": "one JSON object per line with a \"text\" string and an optional \"label\" (--text-field, "
             "--gold-field, --supervised-field); gzip read transparently",
}


class NamedFiles(argparse.Action):
    """`--fixed NAME=FILE`, repeatable, collected into a dict NAME -> FILE."""

    def __call__(self, parser, namespace, value, option_string=None):
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise argparse.ArgumentError(self, f"'{value}': write NAME=FILE (the block's name, then its file)")
        files = dict(getattr(namespace, self.dest) or {})
        files[name.strip()] = path.strip()
        setattr(namespace, self.dest, files)


# The fields describe the file being read, at fit and at decode time alike.
_FIELD_OPTIONS = [
    (("--text-field",), {"metavar": "NAME", "default": "text", "help": "jsonl: the field holding the text"}),
    (("--gold-field",), {"metavar": "NAME", "default": "label",
                         "help": "jsonl: the field holding the gold class, for evaluation"}),
]
FIT_OPTIONS = _FIELD_OPTIONS + [
    (("--supervised-field",), {"metavar": "NAME", "default": None,
                               "help": "jsonl: documents carrying this field are labeled examples (semi-supervised "
                                       "EM); the classes become the label names"}),
    (("--tokenize",), {"choices": TOKENIZERS, "default": "letters",
                       "help": "letters: lowercase, words are runs of letters; whitespace: tokens as written"}),
    (("--strip-headers",), {"action": "store_true",
                            "help": "jsonl: drop each text up to its first blank line (mail/news headers)"}),
    (("--stop-words",), {"type": int, "default": 0, "metavar": "N",
                         "help": "remove the N most frequent words of the training data (all its files)"}),
    (("--min-count",), {"type": int, "default": 1, "metavar": "M",
                        "help": "remove the words seen fewer than M times in the training data"}),
    (("--fixed",), {"action": NamedFiles, "metavar": "NAME=FILE", "default": None,
                    "help": "the file of fixed block NAME (see emc/io/fixed_blocks.py for the format); repeatable"}),
]
DECODE_OPTIONS = _FIELD_OPTIONS
# Online EM starts from the initial parameters as one pseudo-count per row: the first mini-batches
# then replace the random start, so every class learns from its share of them at once. With one
# per entry (a row of a 28k-word vocabulary holds 28k) the start outweighs the data for passes and
# a class that happens to get real counts first takes every document (20 Newsgroups, stepwise EM,
# m = 1000, 5 passes: 27-34% many-to-one instead of 42-53%; bench/label_20news.py).
ONLINE_START_MASS = "row"


def read(model: CheckedModel, path: str, options: dict[str, Any], vocabs: dict[str, Vocabulary]) -> Corpus:
    fmt = options.get("format") or FORMATS[0]
    if fmt not in FORMATS:
        raise DataError(path, None, f"the label structure reads formats {', '.join(FORMATS)}, not '{fmt}'")
    opts = TextOptions.from_options(options)
    docs = read_documents(path, fmt, opts)
    d = model.binding.observed["x"]
    vocab = vocabs.setdefault(f"vocab:{d}", Vocabulary())
    # Every word for now: which ones the model keeps depends on all the files (the cut-off) or on
    # whether the vocabulary is trained, which only complete_corpus is told.
    mapping = np.array([vocab.add(w) for w in docs.words.values], np.int64)
    mapping[0] = 0  # a literal `<unk>` token is no word
    ids = mapping[docs.ids]
    field = _kept_tokens(ids, docs.offsets, ids > 0, vocab)
    require_examples(path, int((field.lengths() > 0).sum()), "document")
    corpus = Corpus(path, {d: field}, docs.lines)
    if any(g is not None for g in docs.gold):
        corpus.gold["classes"] = np.array(docs.gold, dtype=object)
    if opts.supervised_field:
        corpus.labeled["classes"] = np.array(docs.supervised, dtype=object)
        corpus.labeled_mask = np.array([s is not None for s in docs.supervised])
    return corpus


def complete_corpus(model: CheckedModel, corpus: Corpus, options: dict[str, Any], vocabs: dict[str, Vocabulary],
                    frozen: dict[str, int] | None) -> Corpus:
    """The corpus with only the words the model has: with a trained vocabulary (`frozen`: its
    size by space) the words it holds, else those that pass the cut-off over the whole corpus
    (`vocabs` then holds only those). Called once, by bind, when every file is read."""
    d = model.binding.observed["x"]
    name = f"vocab:{d}"
    field = corpus.fields[d]
    vocab = field.vocab
    if frozen is not None:
        keep = np.arange(len(vocab)) < frozen[name]
    else:
        opts = TextOptions.from_options(options)
        keep = frequency_cutoff(np.bincount(field.ids, minlength=len(vocab)), opts.stop_words, opts.min_count)
    keep[0] = True
    if keep.all():
        return corpus
    kept = np.flatnonzero(keep)
    counts = np.zeros(len(vocab), np.int64)
    counts[:len(vocab.counts)] = vocab.counts  # training counts (decode) follow their words
    vocabs[name] = Vocabulary([vocab.values[i] for i in kept], counts[kept])
    mapping = np.zeros(len(vocab), np.int64)
    mapping[kept] = np.arange(len(kept))
    ids = mapping[field.ids]
    words = _kept_tokens(ids, field.offsets, ids > 0, vocabs[name])
    if not (words.lengths() > 0).any():
        why = ("of the trained vocabulary" if frozen is not None else
               f"that passes the cut-off (--stop-words {opts.stop_words}, --min-count {opts.min_count})")
        raise DataError(", ".join(corpus.files), None, f"no document has a word {why}")
    return replace(corpus, fields={**corpus.fields, d: words})


def _kept_tokens(ids: np.ndarray, offsets: np.ndarray, keep: np.ndarray, vocab: Vocabulary) -> TokenField:
    """The documents (`offsets` into `ids`) with only the tokens marked in `keep`."""
    document = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    kept_offsets = np.zeros(len(offsets), np.int64)
    np.cumsum(np.bincount(document[keep], minlength=len(offsets) - 1), out=kept_offsets[1:])
    return TokenField(ids[keep].astype(np.int32), kept_offsets, vocab)


def named_values(model: CheckedModel, options: dict[str, Any], corpus: Corpus) -> dict[str, list[str]]:
    """{"classes": the label names} when documents are labeled (--supervised-field, --labeled)."""
    field = options.get("supervised_field")
    if field and (options.get("format") or FORMATS[0]) != "jsonl":
        raise DataError(corpus.path, None, "--supervised-field needs JSON lines (--format jsonl)")
    if field and (corpus.labeled_mask is None or not corpus.labeled_mask.any()):
        raise DataError(corpus.path, None, f"--supervised-field {field}: no document has a \"{field}\" field")
    classes = labeled_classes(corpus)
    return {} if classes is None else {"classes": sorted(set(classes[corpus.labeled_mask]))}


def labeled_classes(corpus: Corpus) -> np.ndarray | None:
    """The class name of each labeled document (None elsewhere): its supervision field, or for
    the documents of `emc fit --labeled FILE` their gold label. None when nothing is labeled."""
    mask = corpus.labeled_mask
    if mask is None or not mask.any():
        return None
    given = corpus.labeled.get("classes")
    gold = corpus.gold.get("classes")
    classes = np.full(len(corpus), None, dtype=object)
    for i in np.flatnonzero(mask):
        classes[i] = given[i] if given is not None and given[i] is not None else (gold[i] if gold is not None else None)
        if classes[i] is None:
            raise DataError(*corpus.location(i), "this labeled document has no label")
    return classes


def space_sizes(model: CheckedModel, args: dict[str, Any]) -> dict[str, int]:
    return {"classes": args["classes"]}


def pack(model: CheckedModel, corpus: Corpus, args: dict[str, Any], labels: dict[str, list[str]],
         options: dict[str, Any], vocabs: dict[str, Vocabulary], frozen: dict[str, int] | None) -> dict[str, np.ndarray]:
    """The bags of words (bag_offsets, bag_token, bag_count) and, when fitting with labeled
    documents, class_of. Labels never constrain decoding (`frozen` set): a test file's labels are
    what decoding is scored against."""
    field = corpus.fields[model.binding.observed["x"]]
    n = len(corpus)
    document = np.repeat(np.arange(n, dtype=np.int64), field.lengths())
    keys, first, counts = np.unique(document * len(field.vocab) + field.ids, return_index=True, return_counts=True)
    bag_offsets = np.searchsorted(keys // len(field.vocab), np.arange(n + 1))
    arrays = {"bag_offsets": bag_offsets, "bag_token": first, "bag_count": counts, "class_of": np.zeros(0, np.int32)}
    classes = labeled_classes(corpus) if frozen is None else None
    if classes is not None:
        index = {name: k for k, name in enumerate(labels["classes"])}
        arrays["class_of"] = np.array([-1 if c is None else index[c] for c in classes], np.int32)
    return arrays


def read_fixed(problem, factor, path: str) -> np.ndarray:
    """A fixed block's table from its file (format: emc/io/fixed_blocks.py). Token values are
    words of the data's vocabulary (others are skipped); class values are ids or label names."""
    def axes(attrs: tuple[ResolvedAttr, ...], spaces: tuple[str, ...]):
        return [(_lookup(problem, attr, space), problem.sizes[space]) for attr, space in zip(attrs, spaces)]

    return read_fixed_table(path, factor.name, axes(factor.outcome, factor.outcome_spaces),
                            axes(factor.context, factor.context_spaces))


def _lookup(problem, attr: ResolvedAttr, space: str):
    if attr.attribute.tokens_of is not None:
        vocab = problem.vocabs[space]
        return lambda word: vocab.index.get(word) or None
    names = problem.labels.get("classes")
    K = problem.args["classes"]

    def class_index(value: str) -> int:
        if names and value in names:
            return names.index(value)
        if value.isdigit() and int(value) < K:
            return int(value)
        known = f"a class id 0..{K - 1}" + (f" or a label name ({', '.join(names)})" if names else "")
        raise ValueError(f"'{value}' is not a class of '{attr.text}' ({known})")

    return class_index


def decoded_length(corpus: Corpus, model: CheckedModel) -> np.ndarray:
    """One class per document."""
    return np.ones(len(corpus), np.int64)


def posterior_length(corpus: Corpus, model: CheckedModel, args: dict[str, Any]) -> np.ndarray:
    return decoded_length(corpus, model) * args["classes"]


def _class_name(k: int, labels: dict[str, list[str]]) -> str:
    names = labels.get("classes")
    return names[k] if names else str(k)


def format_decoded(corpus: Corpus, model: CheckedModel, ex: int, decoded: np.ndarray, labels: dict[str, list[str]]) -> str:
    """The document's class: its label name when classes are named, else its id."""
    return _class_name(int(decoded[0]), labels)


def format_posterior(corpus: Corpus, model: CheckedModel, ex: int, marginals: np.ndarray,
                     labels: dict[str, list[str]], args: dict[str, Any]) -> str:
    """class:probability for the classes above 1e-3, most probable first, on one line."""
    order = np.argsort(-marginals, kind="stable")
    return " ".join(f"{_class_name(k, labels)}:{marginals[k]:.3f}" for k in order if marginals[k] >= 1e-3)


def evaluate(corpus: Corpus, model: CheckedModel, decoded: list[np.ndarray], labels: dict[str, list[str]]) -> dict[str, float]:
    """Clustering accuracy against the gold classes (many-to-one, one-to-one, variation of
    information) over the documents that have one, and classification accuracy when the classes
    are label names."""
    from emc.eval.tagging import tagging_scores

    gold = corpus.gold.get("classes")
    if gold is None:
        return {}
    has_gold = np.array([g is not None for g in gold])
    if not has_gold.any():
        return {}
    predicted = np.array([int(d[0]) for d in decoded], np.int64)[has_gold]
    names, gold_ids = np.unique(gold[has_gold].astype(str), return_inverse=True)
    direct = None
    if labels.get("classes"):
        index = {name: k for k, name in enumerate(labels["classes"])}
        direct = np.array([index.get(name, -1) for name in names])[gold_ids]
    return tagging_scores(predicted, gold_ids, direct)

