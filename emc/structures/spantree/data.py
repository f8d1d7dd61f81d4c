"""Spantree data: tag sequences (one per line) or Penn Treebank trees (`--format ptb`: the tag yield
is the input, the tree is gold), packed as per-span yield, context and length ids; bracketed
output; unlabeled bracket scores against gold trees; the random-split initializer.

Spaces derived from the data, each a vocabulary saved with the model (unknown values at decode
time become `<unk>`, id 0):
- `yields`: the symbol sequences of the spans, written with single spaces (the empty yield of an
  empty span is the empty string);
- `contexts`: the symbol before and the symbol after a span, written `LEFT RIGHT`, with `<s>` and
  `</s>` beyond the sentence's ends (tokens spelled so are refused: they would be ambiguous);
- `length`: span lengths "0", "1", "2", ... in order after `<unk>`, so that length L has id L + 1
  (`numeric_values` gives weights the value back); `<unk>` is a length longer than any seen in
  training.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emc.eval.brackets import bracket_scores
from emc.io.corpus import Corpus, sentence_corpus
from emc.io.ptb import read_tree, read_tree_file
from emc.io.readers import read_lines
from emc.io.sniff import SNIFFED_LINES, refuse_other_format
from emc.io.vocab import Vocabulary
from emc.spec.errors import DataError
from emc.spec.model import CheckedModel
from emc.structures.posteriors import format_span_posteriors, nonempty_spans
from emc.structures.spantree import dp

FORMATS = ("tokens", "ptb")
LEFT_BOUNDARY, RIGHT_BOUNDARY = "<s>", "</s>"
FORMAT_HELP = {
    "tokens": "one sentence per line, tokens separated by whitespace",
    "ptb": "one Penn Treebank tree per line (spantree): the input is the tree's tag yield without -NONE- "
           "elements and punctuation (, . : `` '' -LRB- -RRB- # $), the tree is gold. Bracket scores: "
           "unlabeled precision, recall and F1 micro-averaged over the corpus with no credit for the whole "
           "sentence or single symbols, and crossing brackets per sentence",
}
FIT_OPTIONS = [
    (("--max-length",), {"type": int, "default": 0, "metavar": "N",
                         "help": "chain, deptree, spantree: sentences longer than N tokens (trees: after removing "
                                 "punctuation) are read as empty: fit leaves them out and says how many, decode "
                                 "prints an empty line (WSJ10: --format ptb --max-length 10); 0: no limit; refused "
                                 "by the structures that read other examples"}),
]
DECODE_OPTIONS = FIT_OPTIONS


def read(model: CheckedModel, path: str, options: dict[str, Any], vocabs: dict[str, Vocabulary]) -> Corpus:
    x = model.binding.observed["x"]
    vocab = vocabs.setdefault(f"vocab:{x}", Vocabulary())
    fmt = options.get("format") or "tokens"
    if fmt == "tokens":
        sentences, lines = _read_tokens(path, options.get("format") is None)
        gold = None
    elif fmt == "ptb":
        sentences, gold, lines = read_tree_file(path, lambda number, line: _tree(path, number, line), set)
    else:
        raise DataError(path, None, f"the spantree structure reads formats {', '.join(FORMATS)}, not '{fmt}'")
    corpus = sentence_corpus(path, x, sentences, vocab, lines, options.get("max_length") or 0, "symbols")
    if gold is not None:
        corpus.gold["brackets"] = gold
    return corpus


def _check_symbols(path: str, number: int, symbols: list[str]) -> None:
    for s in symbols:
        if s in (LEFT_BOUNDARY, RIGHT_BOUNDARY):
            raise DataError(path, number, f"the token '{s}' is reserved: it stands for the sentence boundary "
                                          f"in span contexts")


def _read_tokens(path: str, sniff: bool = False) -> tuple[list[list[str]], list[int]]:
    """One sentence per line; `sniff` (no --format given): refuse a file that looks like another format."""
    sentences, lines, first = [], [], []
    for number, line in read_lines(path):
        if sniff and len(first) < SNIFFED_LINES:
            first.append(line)
        symbols = line.split()
        _check_symbols(path, number, symbols)
        sentences.append(symbols)
        lines.append(number)
    if sniff:
        refuse_other_format(path, first, FORMATS)
    return sentences, lines


def _tree(path: str, number: int, line: str) -> tuple[list[str], set[tuple[int, int]]]:
    """A tree's tags and its constituent spans."""
    tree = read_tree(line)
    _check_symbols(path, number, tree.tags)
    return tree.tags, tree.spans


def space_sizes(model: CheckedModel, args: dict[str, Any]) -> dict[str, int]:
    return {"bool": 2}


def numeric_values(model: CheckedModel, space: str, args: dict[str, Any], size: int) -> np.ndarray:
    """The length with id i is i - 1 (see the module docstring); `<unk>` counts as 0."""
    return np.maximum(np.arange(size) - 1.0, 0.0)


def pack(model: CheckedModel, corpus: Corpus, args: dict[str, Any], labels: dict[str, list[str]],
         options: dict[str, Any], vocabs: dict[str, Vocabulary], frozen: dict[str, int] | None) -> dict[str, np.ndarray]:
    """Per span (in dp.span_index order, empty spans last when modelled): yield, context and
    length ids. At fit time their counts are recorded (for the `<unk>` estimate
    at decode time); at decode time ids the model was not trained on become 0."""
    if corpus.labeled_mask is not None and corpus.labeled_mask.any():
        raise DataError(corpus.path, None, "the spantree structure does not take labeled examples (--labeled) yet")
    field = corpus.fields[model.binding.observed["x"]]
    yields = vocabs.setdefault("yields", Vocabulary())
    contexts = vocabs.setdefault("contexts", Vocabulary())
    lengths = vocabs.setdefault("length", Vocabulary())
    with_empty = bool(args["empty"])
    sizes = field.lengths()
    for length in range(len(lengths) - 1, int(sizes.max(initial=0)) + 1):
        lengths.add(str(length))
    span_start = np.zeros(len(corpus) + 1, np.int64)
    np.cumsum(sizes * (sizes + 1) // 2 + (sizes + 1 if with_empty else 0), out=span_start[1:])
    yield_ids = np.empty(span_start[-1], np.int32)
    context_ids = np.empty(span_start[-1], np.int32)
    length_ids = np.empty(span_start[-1], np.int32)
    values = field.vocab.values
    for ex in range(len(corpus)):
        symbols = [values[t] for t in field.example(ex)]
        n = len(symbols)
        padded = [LEFT_BOUNDARY] + symbols + [RIGHT_BOUNDARY]
        spans = nonempty_spans(n) + ([(i, i) for i in range(n + 1)] if with_empty else [])
        s = span_start[ex]
        for q, (i, j) in enumerate(spans, start=s):
            yield_ids[q] = yields.add(" ".join(symbols[i:j]))
            context_ids[q] = contexts.add(f"{padded[i]} {padded[j + 1]}")
            length_ids[q] = j - i + 1
    if frozen is None:
        for ids, vocab in ((yield_ids, yields), (context_ids, contexts), (length_ids, lengths)):
            vocab.count(ids)
    else:
        for ids, name in ((yield_ids, "yields"), (context_ids, "contexts"), (length_ids, "length")):
            ids[ids >= frozen[name]] = 0
    return {"offsets": field.offsets.astype(np.int32), "span_start": span_start.astype(np.int32),
            "span_yield": yield_ids, "span_context": context_ids, "span_length": length_ids}


def decoded_length(corpus: Corpus, model: CheckedModel) -> np.ndarray:
    """One 0/1 flag per non-empty span (see `decode_example` in the template)."""
    n = corpus.fields[model.binding.observed["x"]].lengths()
    return n * (n + 1) // 2


def posterior_length(corpus: Corpus, model: CheckedModel, args: dict[str, Any]) -> np.ndarray:
    return decoded_length(corpus, model)


def decoded_spans(decoded: np.ndarray, n: int) -> set[tuple[int, int]]:
    return {span for span, flag in zip(nonempty_spans(n), decoded) if flag}


def bracketed(symbols: list[str], spans: set[tuple[int, int]]) -> str:
    """A binary bracketing (given by its spans; single symbols may be left out) as
    `((DT NN) (VBD (DT NN)))`: every pair of parentheses is a constituent, the outermost the
    whole sentence (`(NN)` for one symbol)."""
    n = len(symbols)

    def node(i: int, j: int) -> str:
        if j - i == 1:
            return symbols[i]
        split = max(k for k in range(i + 1, j) if k == i + 1 or (i, k) in spans)
        return f"({node(i, split)} {node(split, j)})"

    return f"({symbols[0]})" if n == 1 else node(0, n)


def format_decoded(corpus: Corpus, model: CheckedModel, ex: int, decoded: np.ndarray, labels: dict[str, list[str]]) -> str:
    symbols = corpus.fields[model.binding.observed["x"]].tokens(ex)
    return bracketed(symbols, decoded_spans(decoded, len(symbols)))


def format_posterior(corpus: Corpus, model: CheckedModel, ex: int, marginals: np.ndarray,
                     labels: dict[str, list[str]], args: dict[str, Any]) -> str:
    """`i-j:p` (fenceposts 0..n) for each span that may or may not be a constituent, with
    P(constituent) = p >= 0.001, by start then end."""
    return format_span_posteriors(int(corpus.fields[model.binding.observed["x"]].lengths()[ex]), marginals)


def evaluate(corpus: Corpus, model: CheckedModel, decoded: list[np.ndarray], labels: dict[str, list[str]]) -> dict[str, float]:
    """Unlabeled bracket precision, recall, F1 and crossing brackets against the gold trees
    (conventions in emc/eval/brackets.py)."""
    gold = corpus.gold.get("brackets")
    if gold is None:
        return {}
    lengths = corpus.fields[model.binding.observed["x"]].lengths().tolist()
    predicted = [decoded_spans(d, n) for d, n in zip(decoded, lengths)]
    return bracket_scores(predicted, gold, lengths)


def random_split_counts(problem: Any, executor: Any, rng: np.random.Generator) -> np.ndarray:
    """`--init random-split` (Klein & Manning 2002): the expected counts when each sentence's
    bracketing is drawn by splitting it at a uniformly random point, then each part likewise,
    whatever its symbols. The span marginals depend on the length alone (dp.random_split_marginals);
    the generated code scatters them into the blocks as in an E-step (no E-step: `executor` unused)."""
    counts = np.zeros(problem.layout.size)
    buffer = (counts, np.zeros(0, np.uint8), np.zeros(0, np.int64))
    scatter = problem.model.module.scatter_counts
    by_length: dict[int, np.ndarray] = {}
    for ex, n in enumerate(problem.corpus.lengths().tolist()):
        if n not in by_length:
            by_length[n] = dp.random_split_marginals(n)
        scatter(ex, problem.ints, problem.array_bounds, problem.meta, by_length[n], 1.0, buffer)
    return counts


INITIALIZERS = {"random-split": random_split_counts}
# Klein & Manning start from the random-split counts; from random parameters CCM scores about 16% F1
DEFAULT_INIT = "random-split"
