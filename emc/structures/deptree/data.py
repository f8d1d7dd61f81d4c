"""Deptree data: tag sequences (one per line), Penn Treebank trees (`--format ptb`: the stripped tag
yield, gold dependencies by Collins' head rules), CoNLL (`--format conll`: a token column and a
head column) or CoNLL-U (`--format conllu`: UPOS, XPOS or FORM as the sentence, HEAD as gold);
packed as one token id per word; decoded trees printed as `word/HEAD` (CoNLL head numbers, 0 the
root) or written back into CoNLL-U; directed and undirected attachment accuracy against gold;
Klein & Manning's harmonic initializer, the default start.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emc.eval.dependencies import attachment_scores
from emc.io.conllu import OUTPUT_OPTION, read_conllu
from emc.io.corpus import Corpus, sentence_corpus
from emc.io.heads import cycle_message, head_cycle, read_dependencies
from emc.io.ptb import read_tree_file
from emc.io.readers import read_lines
from emc.io.sniff import SNIFFED_LINES, refuse_other_format
from emc.structures.posteriors import format_token_posteriors
from emc.io.vocab import Vocabulary
from emc.spec.errors import DataError
from emc.spec.model import CheckedModel
from emc.structures.deptree import dp

FORMATS = ("tokens", "ptb", "conll", "conllu")
CONLL_TOKEN_COLUMN, CONLL_HEAD_COLUMN = 4, 7  # CoNLL-X: CPOSTAG and HEAD
FORMAT_HELP = {
    "conll": "one token per line in whitespace-separated columns (chain: --word-column, --gold-column; deptree: "
             f"the tag column --word-column, default {CONLL_TOKEN_COLUMN}, and --head-column, default "
             f"{CONLL_HEAD_COLUMN}, as in CoNLL-X), sentences separated by blank lines; gzip read transparently",
}
FIT_OPTIONS = [
    (("--head-column",), {"type": int, "default": None, "metavar": "N",
                          "help": f"conll, deptree: the column holding each word's head (1-based; default "
                                  f"{CONLL_HEAD_COLUMN}): a number of a word of the sentence, 0 for the root, "
                                  f"_ for none"}),
    (("--token-column",), {"choices": ("upos", "xpos", "form"), "default": None,
                           "help": "conllu, deptree: the column read as the sentence (default upos)"}),
]
DECODE_OPTIONS = FIT_OPTIONS + [OUTPUT_OPTION]


def read(model: CheckedModel, path: str, options: dict[str, Any], vocabs: dict[str, Vocabulary]) -> Corpus:
    x = model.binding.observed["x"]
    vocab = vocabs.setdefault(f"vocab:{x}", Vocabulary())
    fmt = options.get("format") or "tokens"
    written_back = None
    if fmt == "tokens":
        lines = list(read_lines(path))
        if options.get("format") is None:
            refuse_other_format(path, [line for _, line in lines[:SNIFFED_LINES]], FORMATS)
        sentences, gold, numbers = [line.split() for _, line in lines], None, [n for n, _ in lines]
    elif fmt == "ptb":
        sentences, gold, numbers = read_tree_file(path, lambda number, line: read_dependencies(line), list)
    elif fmt == "conll":
        sentences, gold, numbers = _read_conll(path, options.get("word_column") or CONLL_TOKEN_COLUMN,
                                               options.get("head_column") or CONLL_HEAD_COLUMN)
    elif fmt == "conllu":
        written_back = read_conllu(path)
        column = options.get("token_column") or "upos"
        sentences = [s.column(column) for s in written_back]
        gold = [s.heads() for s in written_back]
        numbers = [s.line for s in written_back]
        for s in written_back:
            s.target = "head"
    else:
        raise DataError(path, None, f"the deptree structure reads formats {', '.join(FORMATS)}, not '{fmt}'")
    corpus = sentence_corpus(path, x, sentences, vocab, numbers, options.get("max_length") or 0)
    if gold is not None:
        corpus.gold["heads"] = gold
    if options.get("output") == "conllu":
        if written_back is None:
            raise DataError(path, None, "--output conllu writes the input back: read it with --format conllu")
        corpus.gold["conllu"] = written_back
    return corpus


def _read_conll(path: str, token_column: int, head_column: int):
    """Blank-line separated sentences, one word per line; a sentence whose heads include `_` has
    no gold tree (None)."""
    sentences, gold, numbers = [], [], []
    words: list[str] = []
    heads: list[str] = []
    lines: list[int] = []
    need = max(token_column, head_column)

    def finish() -> None:
        if "_" in heads:
            gold.append(None)
        else:
            for value, number in zip(heads, lines):
                if not value.isdigit() or int(value) > len(words):
                    raise DataError(path, number, f"head '{value}' is not 0 (the root), _ or a word of this "
                                                  f"sentence (1..{len(words)}) (--head-column {head_column})")
            tree = [int(v) for v in heads]
            cycle = head_cycle(tree)
            if cycle is not None:
                raise DataError(path, lines[cycle[0] - 1], f"{cycle_message(cycle)} (--head-column {head_column})")
            gold.append(tree)
        sentences.append(list(words))
        numbers.append(lines[0])
        words.clear(), heads.clear(), lines.clear()

    for number, line in read_lines(path):
        cols = line.split()
        if not cols:
            if words:
                finish()
            continue
        if len(cols) < need:
            raise DataError(path, number, f"has {len(cols)} column(s), but the token column ({token_column}) and "
                                          f"--head-column ({head_column}) need {need}")
        words.append(cols[token_column - 1])
        heads.append(cols[head_column - 1])
        lines.append(number)
    if words:
        finish()
    return sentences, gold, numbers


def space_sizes(model: CheckedModel, args: dict[str, Any]) -> dict[str, int]:
    return {"bool": 2, "direction": 2}


def pack(model: CheckedModel, corpus: Corpus, args: dict[str, Any], labels: dict[str, list[str]],
         options: dict[str, Any], vocabs: dict[str, Vocabulary], frozen: dict[str, int] | None) -> dict[str, np.ndarray]:
    """offsets and every word's token id; at fit time the ids are counted (for the `<unk>`
    estimate), at decode time ids the model was not trained on become 0 (`<unk>`). The labeled
    examples' trees (--labeled, read with their gold heads) as `constrained` and `gold_head`."""
    x = model.binding.observed["x"]
    field = corpus.fields[x]
    tags = field.ids.astype(np.int32)
    if frozen is None:
        field.vocab.count(tags)
    else:
        tags = np.where(tags < frozen[f"vocab:{x}"], tags, 0).astype(np.int32)
    arrays = {"offsets": field.offsets.astype(np.int32), "tags": tags,
              "constrained": np.zeros(0, np.int32), "gold_head": np.zeros(0, np.int32)}
    labeled = corpus.labeled_mask
    if labeled is not None and labeled.any():
        gold = corpus.gold.get("heads")
        constrained = labeled.astype(np.int32)
        gold_head = np.zeros(len(tags), np.int32)
        for ex in np.flatnonzero(labeled):
            heads = gold[ex] if gold is not None else None
            if heads is None:
                path, line = corpus.location(ex)
                raise DataError(path, line, "a labeled sentence needs its tree: give --labeled data in a format with "
                                            "heads (ptb, conll, conllu) and no `_` head")
            gold_head[field.offsets[ex]:field.offsets[ex + 1]] = heads
        arrays.update(constrained=constrained, gold_head=gold_head)
    return arrays


def decoded_length(corpus: Corpus, model: CheckedModel) -> np.ndarray:
    """One head per word."""
    return corpus.fields[model.binding.observed["x"]].lengths()


def posterior_length(corpus: Corpus, model: CheckedModel, args: dict[str, Any]) -> np.ndarray:
    """Per word, the probability of each head: the root, then every word."""
    n = decoded_length(corpus, model)
    return n * (n + 1)


def format_decoded(corpus: Corpus, model: CheckedModel, ex: int, decoded: np.ndarray, labels: dict[str, list[str]]) -> str:
    """`word/HEAD` per word, HEAD the head's number from 1 (0: the root), as CoNLL numbers them;
    with --output conllu the CoNLL-U sentence as read with HEAD and DEPREL (root or dep) replaced."""
    heads = [int(h) for h in decoded]
    if "conllu" in corpus.gold:
        return corpus.gold["conllu"][ex].with_column({"head": [str(h) for h in heads],
                                                      "deprel": ["root" if h == 0 else "dep" for h in heads]})
    words = corpus.fields[model.binding.observed["x"]].tokens(ex)
    return " ".join(f"{w}/{h}" for w, h in zip(words, heads))


def format_posterior(corpus: Corpus, model: CheckedModel, ex: int, marginals: np.ndarray,
                     labels: dict[str, list[str]], args: dict[str, Any]) -> str:
    """Per word: the word, then HEAD:probability for the heads above 1e-3, most probable first."""
    return format_token_posteriors(corpus.fields[model.binding.observed["x"]].tokens(ex), marginals)


def evaluate(corpus: Corpus, model: CheckedModel, decoded: list[np.ndarray], labels: dict[str, list[str]]) -> dict[str, float]:
    """Directed and undirected attachment accuracy against the gold heads (emc/eval/dependencies.py)."""
    gold = corpus.gold.get("heads")
    if gold is None:
        return {}
    return attachment_scores([d.tolist() for d in decoded], gold)


def harmonic_counts(problem: Any, executor: Any, rng: np.random.Generator) -> np.ndarray:
    """`--init harmonic` (Klein & Manning 2004), the default: each word is the root with
    probability 1 / n, else attaches to a head in inverse proportion to their distance; stop
    decisions as expected under trees weighted so (dp.harmonic_counts: the counts depend on the
    length alone), scattered into the blocks by the generated code as in an E-step (no E-step:
    `executor` and `rng` unused). On WSJ10 it reaches 49% directed accuracy where the 1 /
    distance tree distribution alone (every count from it) reaches 33% (bench/dmv_wsj10.py)."""
    counts = np.zeros(problem.layout.size)
    buffer = (counts, np.zeros(0, np.uint8), np.zeros(0, np.int64))
    scatter = problem.model.module.scatter_counts
    by_length: dict[int, tuple] = {}
    for ex, n in enumerate(problem.corpus.lengths().tolist()):
        if n not in by_length:
            by_length[n] = dp.harmonic_counts(n)
        scatter(ex, problem.ints, problem.array_bounds, problem.meta, *by_length[n], 1.0, buffer)
    return counts


INITIALIZERS = {"harmonic": harmonic_counts}
DEFAULT_INIT = "harmonic"
