"""Segmentation data: reading symbol corpora, the substring vocabulary, segmented-text output and
token / boundary scores.

Input (format `symbols`): one utterance per line; every non-space character is one symbol, and
whitespace is removed before training. The original spacing is the gold segmentation when
`--gold-spaces` is given; `--gold FILE` reads it from another file with the same utterances.
Decoding prints each utterance with its words separated by single spaces.

The words a segment can be are every run of at most `maxlen` symbols inside an utterance (the
`substrings` vocabulary, id 0 `<unk>`); decoding new data maps runs never seen in training to
`<unk>`, whose probability is that of the runs seen once in training (emc/io/vocab.py), unless the
word block is featured: a new run then keeps its own id and is scored from its features
(emc/runtime/blocks/features.py, growing_spaces).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emc.eval.segmentation import segmentation_scores
from emc.io.corpus import Corpus, TokenField
from emc.io.readers import read_lines, require_examples
from emc.io.vocab import Vocabulary
from emc.spec.errors import DataError, EmcError
from emc.spec.model import CheckedModel
from emc.structures.segmentation.substrings import NO_RUN, word_ids

SUBSTRINGS = "substrings"
FORMATS = ("symbols",)
FORMAT_HELP = {"symbols": "one utterance per line, every non-space character a symbol (spaces are ignored "
                          "for training and are the gold segmentation with --gold-spaces)"}
_GOLD_SPACES = (("--gold-spaces",), {"action": "store_true",
                                     "help": "segmentation: the data's own spaces are the gold words (to score "
                                             "token and boundary F1; training ignores them)"})
FIT_OPTIONS = [
    _GOLD_SPACES,
    (("--gold",), {"metavar": "FILE", "help": "segmentation: the gold words, in a file with the same utterances "
                                              "line for line and spaces between words"}),
]
# Online EM (stepwise, incremental) starts from statistics worth one pseudo-count per row: the word
# row has an outcome for every substring of the corpus (175,000 on br-phono), and one pseudo-count
# for each would outweigh five passes of data (m = 1000: 69% token F1 after 2 passes, not 83%, the
# reference figure). `--start-mass entry` restores the other choice, better for m <= 100.
ONLINE_START_MASS = "row"
# At decode time `--gold` defaults to "" rather than None, so a training run's gold file (which
# describes other utterances) is never applied to the file being decoded.
DECODE_OPTIONS = [
    _GOLD_SPACES,
    (("--gold",), {"metavar": "FILE", "default": "", "help": FIT_OPTIONS[1][1]["help"]}),
]


def read(model: CheckedModel, path: str, options: dict[str, Any], vocabs: dict[str, Vocabulary]) -> Corpus:
    return read_field(model.binding.observed["x"], path, options, vocabs)


def read_field(x: str, path: str, options: dict[str, Any], vocabs: dict[str, Vocabulary]) -> Corpus:
    """Symbol corpora as the observed variable x, the gold word starts (when given) in
    corpus.gold["words"]; structures written as rules over symbols read them here too."""
    vocab = vocabs.setdefault(f"vocab:{x}", Vocabulary())
    fmt = options.get("format") or "symbols"
    if fmt not in FORMATS:
        raise DataError(path, None, f"the segmentation structure reads format {', '.join(FORMATS)}, not '{fmt}'")
    if options.get("gold") and options.get("gold_spaces"):
        raise EmcError("give the gold segmentation either with --gold FILE or with --gold-spaces, not both")
    utterances, spaced, lines = [], [], []
    for number, line in read_lines(path):
        words = line.split()
        utterances.append("".join(words))
        spaced.append(words)
        lines.append(number)
    require_examples(path, sum(1 for u in utterances if u), "utterance")
    field = TokenField.from_lists([vocab.encode(list(u)) for u in utterances], vocab)
    corpus = Corpus(path, {x: field}, np.array(lines))
    if options.get("gold"):
        corpus.gold["words"] = _read_gold(options["gold"], path, utterances)
    elif options.get("gold_spaces"):
        corpus.gold["words"] = [_word_starts(words) for words in spaced]
    return corpus


def _word_starts(words: list[str]) -> np.ndarray:
    """Word-start flags over the symbols of an utterance written as its words."""
    flags = np.zeros(sum(len(w) for w in words), np.int8)
    flags[np.cumsum([0] + [len(w) for w in words[:-1]])[:len(words)]] = 1
    return flags


def _read_gold(gold_path: str, path: str, utterances: list[str]) -> list[np.ndarray]:
    gold = [(number, line.split()) for number, line in read_lines(gold_path)]
    if len(gold) != len(utterances):
        raise DataError(gold_path, None, f"has {len(gold)} lines but {path} has {len(utterances)}: a gold file "
                                         f"holds the same utterances, line for line")
    out = []
    for (number, words), utterance in zip(gold, utterances):
        if "".join(words) != utterance:
            raise DataError(gold_path, number, f"the symbols '{''.join(words)}' differ from those on line {number} "
                                               f"of {path} ('{utterance}')")
        out.append(_word_starts(words))
    return out


def space_sizes(model: CheckedModel, args: dict[str, Any]) -> dict[str, int]:
    """`length` is indexed by the length itself (index 0 is never a segment)."""
    return {"length": args["maxlen"] + 1}


def pack(model: CheckedModel, corpus: Corpus, args: dict[str, Any], labels: dict[str, list[str]],
         options: dict[str, Any], vocabs: dict[str, Vocabulary], frozen: dict[str, int] | None) -> dict[str, np.ndarray]:
    """offsets, and the word id of every (position, length) segment (see codegen.arrays). The
    substring vocabulary grows with the corpus's runs; at fit time its counts are the runs'
    occurrences (for the hapax estimate of `<unk>`), at decode time runs the trained model has not
    seen become `<unk>`, unless a featured word block scores them (Frozen.growing)."""
    if corpus.labeled_mask is not None and corpus.labeled_mask.any():
        raise DataError(corpus.path, None, "the segmentation structure does not take labeled examples (--labeled) "
                                           "yet: give the data alone, with --gold-spaces or --gold to score it")
    field = corpus.fields[model.binding.observed["x"]]
    vocab = vocabs.setdefault(SUBSTRINGS, Vocabulary())
    words = word_ids(field.ids, field.offsets, field.vocab.values, args["maxlen"], vocab)
    if frozen is None:
        vocab.count(words[words != NO_RUN])
    elif SUBSTRINGS not in frozen.growing:  # a featured word block scores new runs instead
        words[words >= frozen.get(SUBSTRINGS, 0)] = 0
    return {"offsets": field.offsets.astype(np.int32), "words": words}


def decoded_length(corpus: Corpus, model: CheckedModel) -> np.ndarray:
    """One entry per symbol: the length of the word starting there, 0 inside a word."""
    return corpus.fields[model.binding.observed["x"]].lengths()


def posterior_length(corpus: Corpus, model: CheckedModel, args: dict[str, Any]) -> np.ndarray:
    return decoded_length(corpus, model) * args["maxlen"]


def format_decoded(corpus: Corpus, model: CheckedModel, ex: int, decoded: np.ndarray, labels: dict[str, list[str]]) -> str:
    """The utterance's symbols with a space before every word but the first."""
    symbols = corpus.fields[model.binding.observed["x"]].tokens(ex)
    return "".join((" " + s) if starts and i else s for i, (s, starts) in enumerate(zip(symbols, decoded)))


def format_posterior(corpus: Corpus, model: CheckedModel, ex: int, marginals: np.ndarray,
                     labels: dict[str, list[str]], args: dict[str, Any]) -> str:
    """One line per segment with posterior probability >= 1e-3: its start (0-based symbol
    position), the word, and the probability; a blank line ends the utterance."""
    symbols = corpus.fields[model.binding.observed["x"]].tokens(ex)
    m = marginals.reshape(len(symbols), args["maxlen"])
    out = []
    for i, l in zip(*np.nonzero(m >= 1e-3)):
        out.append(f"{i}\t{''.join(symbols[i:i + l + 1])}\t{m[i, l]:.3f}")
    return "\n".join(out) + "\n"


def evaluate(corpus: Corpus, model: CheckedModel, decoded: list[np.ndarray], labels: dict[str, list[str]]) -> dict[str, float]:
    """Token precision / recall / F1 and boundary precision / recall / F1 against the gold words."""
    gold = corpus.gold.get("words")
    if gold is None:
        return {}
    offsets = corpus.fields[model.binding.observed["x"]].offsets
    predicted = np.concatenate(decoded) if decoded else np.zeros(0, np.int32)
    return segmentation_scores(predicted, np.concatenate(gold), offsets)
