"""Chain data: reading token corpora (plain or CoNLL), packing them for the generated code,
tag dictionaries and tagged examples as per-position state constraints, and word/TAG output.

State names: when tags are known (a tag dictionary, or labeled examples), the states are the tags
(K = the number of distinct tags, overriding the spec's `states`) and decoding prints tag names;
otherwise states are numbered 0..K-1.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emc.io.conllu import OUTPUT_OPTION, gold_column_name, read_conllu
from emc.io.corpus import Corpus, TokenField, sentence_corpus
from emc.io.readers import read_lines
from emc.io.sniff import SNIFFED_LINES, refuse_other_format, refuse_plain_text_as_conll
from emc.io.vocab import Vocabulary
from emc.spec.errors import DataError, EmcError
from emc.spec.model import CheckedModel

# Stepwise/incremental EM start from rows ~ 1 + 5 U(0, 1) weighing one pseudo-count each (see
# emc/runtime/initialize.py init_noise): on CoNLL-2000, alpha 0.7, m = 1, 2 passes, many-to-one
# 63.4% (mean of 3 seeds) against 60.9% from 1 + U(0, 1) at one pseudo-count per entry, and
# incremental EM 35.8% against 23.7% after 3 passes.
ONLINE_START_MASS = "row"
ONLINE_INIT_NOISE = 5.0

FORMATS = ("tokens", "conll", "conllu")
FIT_OPTIONS = [
    (("--word-column",), {"type": int, "default": None,
                          "help": "conll: the column holding the word (1-based; chain: default 1; deptree: the "
                                  "tag column, default 4, CoNLL-X's CPOSTAG)"}),
    (("--gold-column",), {"default": None, "metavar": "N|upos|xpos",
                          "help": "conll: the column holding gold tags (1-based), for evaluation; conllu: upos "
                                  "(the default) or xpos"}),
    (("--dictionary",), {"metavar": "FILE", "help": "a tag dictionary (WORD TAG [TAG ...] per line): the states "
                         "become its tags and each listed word may take only its tags (`emc dictionary` writes one)"}),
]
DECODE_OPTIONS = FIT_OPTIONS[:2] + [OUTPUT_OPTION]
FORMAT_HELP = {
    "tokens": "one sentence per line, tokens separated by whitespace",
    "conll": "one token per line in whitespace-separated columns (--word-column, --gold-column), "
             "sentences separated by blank lines; gzip read transparently",
    "conllu": "Universal Dependencies CoNLL-U: FORM is the word (chain) and UPOS or XPOS gold "
              "(--gold-column upos|xpos); a deptree reads the tag column (--token-column) and HEAD as gold; "
              "comments, multiword tokens (1-2) and empty nodes (1.1) are kept out of the sentence",
}


def read(model: CheckedModel, path: str, options: dict[str, Any], vocabs: dict[str, Vocabulary]) -> Corpus:
    return read_field(model.binding.observed["x"], path, options, vocabs)


def read_field(x: str, path: str, options: dict[str, Any], vocabs: dict[str, Vocabulary]) -> Corpus:
    """A token corpus in the chain's formats, as the observed variable x (gold tags, when given,
    in corpus.gold["tags"]); structures written as rules read their tokens here too."""
    vocab = vocabs.setdefault(f"vocab:{x}", Vocabulary())
    fmt = options.get("format") or "tokens"
    if fmt == "tokens":
        sentences, tags, lines = _read_tokens(path, options.get("format") is None)
    elif fmt == "conll":
        sentences, tags, lines = _read_conll(path, options.get("word_column") or 1,
                                             _column_number(options.get("gold_column")))
    elif fmt == "conllu":
        read_back = read_conllu(path)
        column = gold_column_name(options.get("gold_column"))
        sentences = [s.column("form") for s in read_back]
        tags = [s.column(column) for s in read_back]
        lines = [s.line for s in read_back]
        for s in read_back:
            s.target = column
    else:
        raise DataError(path, None, f"this structure reads formats {', '.join(FORMATS)}, not '{fmt}'")
    corpus = sentence_corpus(path, x, sentences, vocab, lines, options.get("max_length") or 0)
    if tags is not None:
        tag_vocab = vocabs.setdefault("gold:tags", Vocabulary())
        corpus.gold["tags"] = TokenField.from_lists([tag_vocab.encode(t) for t in tags], tag_vocab)
    if options.get("output") == "conllu":
        if fmt != "conllu":
            raise DataError(path, None, "--output conllu writes the input back: read it with --format conllu")
        corpus.gold["conllu"] = read_back
    return corpus


def _column_number(value: Any) -> int | None:
    """--gold-column for the conll format: a 1-based column number."""
    if value is None:
        return None
    if not str(value).isdigit() or int(value) < 1:
        raise EmcError(f"--gold-column {value}: with --format conll give the column's number (1-based)")
    return int(value)


def _read_tokens(path: str, sniff: bool = False):
    """One sentence per line; `sniff` (no --format given): refuse a file that looks like another format."""
    sentences, lines, first = [], [], []
    for number, line in read_lines(path):
        sentences.append(line.split())
        lines.append(number)
        if sniff and len(first) < SNIFFED_LINES:
            first.append(line)
    if sniff:
        refuse_other_format(path, first, FORMATS)
    return sentences, None, lines


def _read_conll(path: str, word_column: int, gold_column: int | None):
    sentences, tags, lines = [], [], []
    words: list[str] = []
    gold: list[str] = []
    start = 0
    need = max(word_column, gold_column or 0)
    blank_lines, widths = 0, set()
    for number, line in read_lines(path):
        cols = line.split()
        if not cols:
            blank_lines += 1
            if words:
                sentences.append(words), tags.append(gold), lines.append(start)
                words, gold = [], []
            continue
        widths.add(len(cols))
        if len(cols) < need:
            raise DataError(path, number, f"has {len(cols)} column(s), but --word-column/--gold-column need {need}")
        if not words:
            start = number
        words.append(cols[word_column - 1])
        if gold_column:
            gold.append(cols[gold_column - 1])
    if words:
        sentences.append(words), tags.append(gold), lines.append(start)
    refuse_plain_text_as_conll(path, blank_lines, widths)
    return sentences, (tags if gold_column else None), lines


def read_dictionary(path: str) -> dict[str, list[str]]:
    """A tag dictionary: one word per line followed by its allowed tags."""
    entries: dict[str, list[str]] = {}
    for number, line in read_lines(path):
        cols = line.split()
        if not cols:
            continue
        if len(cols) < 2:
            raise DataError(path, number, f"the word '{cols[0]}' has no tags (write: WORD TAG [TAG ...])")
        entries.setdefault(cols[0], [])
        entries[cols[0]] += [t for t in cols[1:] if t not in entries[cols[0]]]
    if not entries:
        raise DataError(path, None, "the tag dictionary is empty")
    return entries


def dictionary_lines(corpora: list[Corpus], model: CheckedModel) -> list[str]:
    """The tag dictionary of gold-tagged corpora: every tag each word was seen with."""
    x = model.binding.observed["x"]
    seen: dict[str, list[str]] = {}
    for corpus in corpora:
        words, tags = corpus.fields[x], corpus.gold["tags"]
        for w, t in zip(words.ids, tags.ids):
            word, tag = words.vocab.values[w], tags.vocab.values[t]
            allowed = seen.setdefault(word, [])
            if tag not in allowed:
                allowed.append(tag)
    return [f"{w} {' '.join(ts)}" for w, ts in seen.items()]


def named_values(model: CheckedModel, options: dict[str, Any], corpus: Corpus) -> dict[str, list[str]]:
    """{"states": the tag names} when tags are known (a tag dictionary, or labeled examples): the
    states become the tags, and `states` their number."""
    names: list[str] = []
    if options.get("dictionary"):
        for tags in read_dictionary(options["dictionary"]).values():
            names += [t for t in tags if t not in names]
    if corpus.labeled_mask is not None and corpus.labeled_mask.any():
        tags = corpus.gold["tags"]
        for i in np.flatnonzero(corpus.labeled_mask):
            names += [t for t in tags.tokens(i) if t not in names]
    return {"states": sorted(names)} if names else {}


def space_sizes(model: CheckedModel, args: dict[str, Any]) -> dict[str, int]:
    K = args["states"]
    return {"states": K, "states+start": K + 1, "states+stop": K + 1}


def pack(model: CheckedModel, corpus: Corpus, args: dict[str, Any], labels: dict[str, list[str]],
         options: dict[str, Any], vocabs: dict[str, Vocabulary], frozen: dict[str, int] | None) -> dict[str, np.ndarray]:
    """offsets, and the allowed-state lists of constrained sentences: words in the tag dictionary
    may take only their tags; the tokens of a labeled sentence only their gold tag. (A chain
    derives no vocabulary of its own, so `vocabs` and `frozen` are not needed here.)"""
    x = model.binding.observed["x"]
    field = corpus.fields[x]
    arrays = {"offsets": field.offsets.astype(np.int32)}
    names = labels.get("states")
    state_of = {t: i for i, t in enumerate(names)} if names else {}
    allowed_by_word: dict[int, list[int]] = {}
    if options.get("dictionary"):
        for word, tags in read_dictionary(options["dictionary"]).items():
            i = field.vocab.index.get(word)
            if i is not None:
                allowed_by_word[i] = [state_of[t] for t in tags]
    labeled = corpus.labeled_mask if corpus.labeled_mask is not None else np.zeros(len(corpus), bool)
    if not allowed_by_word and not labeled.any():
        for name in ("constrained", "allowed_start", "allowed_states"):
            arrays[name] = np.zeros(0, np.int32)
        return arrays
    K = args["states"]
    everything = list(range(K))
    start = np.zeros(len(field.ids) + 1, np.int64)
    states: list[int] = []
    constrained = np.zeros(len(corpus), np.int32)
    gold = corpus.gold.get("tags")
    for ex in range(len(corpus)):
        lo, hi = field.offsets[ex], field.offsets[ex + 1]
        if labeled[ex]:
            tags = gold.tokens(ex)
            lists = [[state_of[t]] for t in tags]
        else:
            lists = [allowed_by_word.get(w, everything) for w in field.ids[lo:hi]]
        constrained[ex] = int(labeled[ex] or any(len(a) < K for a in lists))
        for t, allowed in enumerate(lists):
            states.extend(allowed)
            start[lo + t + 1] = len(states)
    if len(states) >= 2**31:
        raise DataError(corpus.path, None, "too many allowed states to pack (over 2^31)")
    arrays["constrained"] = constrained
    arrays["allowed_start"] = start.astype(np.int32)
    arrays["allowed_states"] = np.array(states, np.int32)
    return arrays


def decoded_length(corpus: Corpus, model: CheckedModel) -> np.ndarray:
    """Size of each example's decoded structure (one state per token)."""
    return corpus.fields[model.binding.observed["x"]].lengths()


def posterior_length(corpus: Corpus, model: CheckedModel, args: dict[str, Any]) -> np.ndarray:
    return decoded_length(corpus, model) * args["states"]


def format_decoded(corpus: Corpus, model: CheckedModel, ex: int, decoded: np.ndarray, labels: dict[str, list[str]]) -> str:
    """`word/TAG` tokens; TAG is the state's name when states are tags, else its id. With
    --output conllu, the CoNLL-U sentence as read with the tags in its gold column."""
    names = labels.get("states")
    if "conllu" in corpus.gold:
        sentence = corpus.gold["conllu"][ex]
        return sentence.with_column({sentence.target: [str(names[s] if names else s) for s in decoded]})
    words = corpus.fields[model.binding.observed["x"]].tokens(ex)
    return " ".join(f"{w}/{names[s] if names else s}" for w, s in zip(words, decoded))


def format_posterior(corpus: Corpus, model: CheckedModel, ex: int, marginals: np.ndarray,
                     labels: dict[str, list[str]], args: dict[str, Any]) -> str:
    """Per token: word, then state:probability for the states above 1e-3, most probable first."""
    names = labels.get("states")
    words = corpus.fields[model.binding.observed["x"]].tokens(ex)
    m = marginals.reshape(len(words), args["states"])
    out = []
    for w, row in zip(words, m):
        order = np.argsort(-row)
        probs = " ".join(f"{names[k] if names else k}:{row[k]:.3f}" for k in order if row[k] >= 1e-3)
        out.append(f"{w}\t{probs}")
    return "\n".join(out) + "\n"


def evaluate(corpus: Corpus, model: CheckedModel, decoded: list[np.ndarray], labels: dict[str, list[str]]) -> dict[str, float]:
    """Tagging accuracy against gold tags: many-to-one, one-to-one and variation of information,
    and plain accuracy when the states are tags."""
    from emc.eval.tagging import tagging_scores

    gold = corpus.gold.get("tags")
    if gold is None:
        return {}
    predicted = np.concatenate(decoded) if decoded else np.zeros(0, np.int64)
    names = labels.get("states")
    direct = None
    if names:
        index = {t: i for i, t in enumerate(names)}
        direct = np.array([index.get(v, -1) for v in gold.vocab.values])[gold.ids]
    return tagging_scores(predicted, gold.ids, direct)
