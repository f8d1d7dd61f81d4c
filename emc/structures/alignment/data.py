"""Alignment data: reading bitext, packing it with each link block's sparse index, and printing
alignments as Pharaoh links.

The model `alignment(f from e)` generates the target side f from the source side e. In a bitext
`source ||| target` (or --source F --target F) the left side is e and the right side f; option
`reverse` (set by the two-direction fits, see emc/runtime/modes/alignment.py) reads the right side as e, so the same
spec trains the other direction.

NULL: with null=yes every source-side space of a link block gets one more value, NULL, after the
vocabulary (space `vocab:e+null`, a vocabulary of its own so that its size is saved with the run).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emc.io.bitext import pharaoh, read_bitext, read_gold, read_parallel, swap_links
from emc.io.corpus import Corpus
from emc.io.vocab import Vocabulary
from emc.spec.errors import DataError, EmcError
from emc.spec.model import CheckedModel, Factor, ResolvedAttr
from emc.structures.alignment import LINK
from emc.structures.alignment.dp import NO_LINK, jump_buckets
from emc.structures.alignment.index import NARROW_LIMIT, NONE, SOURCE, TARGET, assign_ranks, build_entries, postings
from emc.structures.alignment.symmetrize import HEURISTICS

FORMATS = ("bitext",)
FORMAT_HELP = {"bitext": "one sentence pair per line, `source ||| target` (or two files: --source F --target F)"}
NULL_WORD = "<null>"

_INPUT = [
    (("--source",), {"metavar": "FILE", "help": "alignment: the source side, one sentence per line (with --target, "
                                                "instead of a `source ||| target` file)"}),
    (("--target",), {"metavar": "FILE", "help": "alignment: the target side, line k the translation of line k of --source"}),
    (("--gold",), {"metavar": "FILE", "help": "alignment: gold links to score against (AER, precision, recall)"}),
    (("--gold-format",), {"choices": ("naacl", "pharaoh"), "default": "naacl",
                          "help": "alignment: naacl (`SENT I J [S|P]`, 1-based, source position first) or pharaoh "
                                  "(`i-j` sure, `i?j` possible, 0-based, one line per pair)"}),
]
FIT_OPTIONS = _INPUT + [
    (("--agree",), {"action": "store_true",
                    "help": "alignment: train e->f and f->e jointly, each E-step using the product of their link "
                            "posteriors (Liang, Taskar & Klein 2006); decoding prints the links whose combined "
                            "posterior passes --threshold"}),
    (("--forward-only",), {"action": "store_true",
                           "help": "alignment: train only source->target (by default the reverse direction is "
                                   "trained too, into RUN/reverse, for --symmetrize and --direction reverse)"}),
]
DECODE_OPTIONS = _INPUT + [
    (("--threshold",), {"type": float, "default": None,
                        "help": "alignment: posterior decoding, the links whose posterior is at least this (default "
                                "0.5 for an --agree run, Viterbi links otherwise)"}),
    (("--symmetrize",), {"choices": HEURISTICS, "help": "alignment: combine the two directions' links"}),
    (("--direction",), {"choices": ("forward", "reverse"), "default": None,
                        "help": "alignment: print one direction's links (source->target or target->source)"}),
]
# Options naming the input files: decoding new data never inherits them from the training run.
INPUT_OPTIONS = ("source", "target", "gold", "gold_format")
DATA_FROM_OPTIONS = True  # the bitext may come as --source/--target instead of DATA


def read(model: CheckedModel, path: str | None, options: dict[str, Any], vocabs: dict[str, Vocabulary]) -> Corpus:
    e, f = model.binding.observed["source"], model.binding.observed["target"]
    fmt = options.get("format") or "bitext"
    if fmt != "bitext":
        raise DataError(path or "", None, f"the alignment structure reads format bitext, not '{fmt}'")
    reverse = bool(options.get("reverse"))
    vocab_e = vocabs.setdefault(f"vocab:{e}", Vocabulary())
    vocab_f = vocabs.setdefault(f"vocab:{f}", Vocabulary())
    left_vocab, right_vocab = (vocab_f, vocab_e) if reverse else (vocab_e, vocab_f)
    files = options.get("source"), options.get("target")
    if any(files):
        if not all(files):
            raise EmcError("give both sides: --source FILE --target FILE")
        if path:
            raise EmcError(f"give the bitext either as {path} or as --source/--target, not both")
        left, right, lines = read_parallel(files[0], files[1], left_vocab, right_vocab)
        where = files[0]
    elif path:
        left, right, lines = read_bitext(path, left_vocab, right_vocab)
        where = path
    else:
        raise EmcError("give the bitext: a `source ||| target` file, or --source FILE --target FILE")
    source, target = (right, left) if reverse else (left, right)
    corpus = Corpus(where, {e: source, f: target}, lines)
    if options.get("gold"):
        gold = read_gold(options["gold"], options.get("gold_format") or "naacl", (left.lengths(), right.lengths()))
        corpus.gold["links"] = [(swap_links(s), swap_links(p)) for s, p in gold] if reverse else gold
    return corpus


def space_sizes(model: CheckedModel, args: dict[str, Any]) -> dict[str, int]:
    return {"jump": jump_buckets(args["maxjump"], int(args["null"]))}


def numeric_values(model: CheckedModel, space: str, args: dict[str, Any], size: int) -> np.ndarray:
    """A jump bucket's value for weight expressions: -maxjump..maxjump, and 0 for NULL (the
    position does not move)."""
    values = np.zeros(size)
    values[:2 * args["maxjump"] + 1] = np.arange(-args["maxjump"], args["maxjump"] + 1)
    return values


# --- packing ----------------------------------------------------------------------------------

def link_factors(model: CheckedModel) -> list[Factor]:
    """The link-slot factors, in the order the generated glue numbers its link blocks."""
    return [factor for factor in model.factors if factor.slot == LINK]


def pack(model: CheckedModel, corpus: Corpus, args: dict[str, Any], labels: dict[str, list[str]],
         options: dict[str, Any], vocabs: dict[str, Vocabulary], frozen) -> tuple[dict[str, np.ndarray], dict]:
    """Pair offsets, and each link block's sparse index (index.py): the co-occurring entries of
    its table at fit time, the trained ones (`frozen.sparse`) at decode time, and every link's
    rank in its row."""
    if corpus.labeled_mask is not None and corpus.labeled_mask.any():
        raise EmcError("the alignment structure does not take labeled examples (--labeled) yet")
    b = model.binding
    null = int(args["null"])
    source, target = corpus.fields[b.observed["source"]], corpus.fields[b.observed["target"]]
    geometry = _Geometry(source.lengths(), target.lengths(), null)
    factors = link_factors(model)
    tables = [f.table for f in factors]
    if len(set(tables)) < len(tables):
        raise EmcError("alignment: link blocks cannot share a table (`shares`) yet")
    if frozen is None:
        _add_null_vocabularies(factors, vocabs)
    sizes = frozen if frozen is not None else {name: len(v) for name, v in vocabs.items()}
    blocks = [_Block(model, f, corpus, geometry, vocabs, sizes, frozen) for f in factors]
    if frozen is None:
        for block in blocks:
            block.row_start, block.outcomes = build_entries(block.order, block.start, block.row_pair,
                                                            block.outcome_values, block.outcome_offsets, block.rows,
                                                            block.n_outcomes)
    else:
        for block in blocks:
            block.use_trained(frozen.sparse.get(block.factor.table))
    narrow = all(int(np.diff(block.row_start).max(initial=0)) <= NARROW_LIMIT for block in blocks)
    ranks, pair_ranks = _ranks(blocks, geometry, narrow)
    arrays = {
        "source_offsets": source.offsets.astype(np.int32),
        "target_offsets": target.offsets.astype(np.int32),
        "link_ranks": ranks,
        "rank_format": np.array([int(narrow)], np.int32),
        **_rows(blocks, geometry),
    }
    arrays["pair_ranks"] = pair_ranks
    sparse = {block.factor.table: block.entries() for block in blocks}
    return arrays, sparse


class _Geometry:
    """Each pair's source length l, target length m and link-matrix width l + null."""

    def __init__(self, l: np.ndarray, m: np.ndarray, null: int):
        self.l, self.m, self.null = l.astype(np.int64), m.astype(np.int64), null
        self.width = self.l + null
        self.pairs = len(l)

    def positions(self, side: int) -> np.ndarray:
        """Positions per pair on one side: source (with NULL), target, or one (NONE)."""
        return {SOURCE: self.width, TARGET: self.m, NONE: np.ones(self.pairs, np.int64)}[side]


class _Block:
    """One link block: its context side, and its row and outcome value at every position."""

    def __init__(self, model: CheckedModel, factor: Factor, corpus: Corpus, geometry: _Geometry,
                 vocabs: dict[str, Vocabulary], sizes: dict[str, int], frozen):
        self.factor = factor
        source_name = f"{model.binding.latent}.source"
        side_of = {True: SOURCE, False: TARGET}
        self.side = side_of[factor.context[0].attribute.path == source_name] if factor.context else NONE
        outcome_side = side_of[factor.outcome[0].attribute.path == source_name]
        self.rows = _product([sizes[s] for s in factor.context_spaces])
        self.n_outcomes = _product([sizes[s] for s in factor.outcome_spaces])
        self.row_values = _values(factor.context, factor.context_spaces, self.side, corpus, geometry, vocabs, sizes, frozen)
        # the context-side positions grouped by row, once for both the entries and the ranks
        self.order, self.start = postings(self.row_values, self.rows)
        self.outcome_values = _values(factor.outcome, factor.outcome_spaces, outcome_side, corpus, geometry, vocabs,
                                      sizes, frozen)
        counts = geometry.positions(self.side)
        self.row_pair = np.repeat(np.arange(geometry.pairs, dtype=np.int32), counts)
        starts = np.concatenate([[0], np.cumsum(counts)])
        self.row_position = (np.arange(starts[-1]) - np.repeat(starts[:-1], counts)).astype(np.int32)
        self.outcome_offsets = np.concatenate([[0], np.cumsum(geometry.positions(outcome_side))]).astype(np.int64)
        self.row_start = self.outcomes = None

    def use_trained(self, entries) -> None:
        """The trained entries (stored row by row) as a CSR index."""
        if entries is None:
            raise EmcError(f"the saved run has no entries for block '{self.factor.table}'")
        rows, outcomes = (np.asarray(a, np.int64) for a in entries)
        if np.any(np.diff(rows) < 0):
            raise EmcError(f"the saved entries of block '{self.factor.table}' are not in row order")
        self.row_start = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=self.rows))]).astype(np.int64)
        self.outcomes = outcomes.astype(np.int32)

    def entries(self) -> tuple[np.ndarray, np.ndarray]:
        """(row, outcome) of every entry, in the smallest integer types that hold them."""
        rows = np.repeat(np.arange(self.rows, dtype=_index_type(self.rows)), np.diff(self.row_start))
        return rows, self.outcomes.astype(_index_type(self.n_outcomes))


def _index_type(n: int) -> type:
    return np.uint16 if n <= 2**16 else np.int32


def _product(sizes: list[int]) -> int:
    out = 1
    for s in sizes:
        out *= int(s)
    if out >= 2**31:
        raise EmcError(f"a link block's table has {out} rows or outcomes, more than 2^31: use fewer or smaller views")
    return out


def _add_null_vocabularies(factors: list[Factor], vocabs: dict[str, Vocabulary]) -> None:
    """vocab:e+null (and its views): the source vocabulary followed by NULL."""
    for factor in factors:
        for space in factor.context_spaces + factor.outcome_spaces:
            if "+null" in space:
                base = vocabs[space.replace("+null", "", 1)]
                vocabs[space] = Vocabulary(base.values + [NULL_WORD])


def _values(attrs: tuple[ResolvedAttr, ...], spaces: tuple[str, ...], side: int, corpus: Corpus, geometry: _Geometry,
            vocabs: dict[str, Vocabulary], sizes: dict[str, int], frozen) -> np.ndarray:
    """The mixed-radix value of `attrs` at every position of `side` (NULL: each source
    attribute's last value), as the generated code numbers a row or outcome."""
    if side == NONE:
        return np.zeros(geometry.pairs, np.int32)
    total = np.zeros(int(geometry.positions(side).sum()), np.int64)
    for attr, space in zip(attrs, spaces):
        field = corpus.fields[attr.attribute.tokens_of]
        ids = field.view(attr.views, vocabs[attr.space]).ids if attr.views else field.ids
        if frozen is not None:  # ids the model was not trained on are <unk>
            ids = np.where(ids < frozen[attr.space], ids, 0)
        if side == SOURCE and geometry.null:
            ids = np.insert(ids, field.offsets[1:], sizes[space] - 1)
        total = total * sizes[space] + ids
    return total.astype(np.int32)


def _ranks(blocks: list[_Block], geometry: _Geometry, narrow: bool) -> tuple[np.ndarray, np.ndarray]:
    """Every link's rank, pair by pair and within a pair block by block: (the packed int32
    array, where each pair's ranks start in it)."""
    links = geometry.width * geometry.m
    words = (links + 1) // 2 if narrow else links
    per_pair = words * len(blocks)
    pair_ranks = np.concatenate([[0], np.cumsum(per_pair)])
    if pair_ranks[-1] >= 2**31:
        raise EmcError("the corpus has too many links to pack into 32-bit arrays; split it")
    packed = np.zeros(int(pair_ranks[-1]), np.int32)
    view = packed.view(np.uint16) if narrow else packed
    if narrow and np.little_endian is False:
        raise EmcError("16-bit link ranks assume a little-endian machine")
    for k, block in enumerate(blocks):
        start = (pair_ranks[:-1] + k * words) * (2 if narrow else 1)
        assign_ranks(block.side, block.order, block.start, block.row_pair, block.row_position, block.outcome_values,
                     block.outcome_offsets, block.row_start, block.outcomes, block.rows, block.n_outcomes,
                     geometry.width, geometry.m, start, narrow, view)
    return packed, pair_ranks.astype(np.int32)


def _rows(blocks: list[_Block], geometry: _Geometry) -> dict[str, np.ndarray]:
    """link_rows (per pair, per block, the row of each context-side position), pair_rows (where
    each pair's start), row_starts and blocks."""
    counts = [geometry.positions(block.side) for block in blocks]
    per_pair = np.sum(counts, axis=0) if blocks else np.zeros(geometry.pairs, np.int64)
    pair_rows = np.concatenate([[0], np.cumsum(per_pair)])
    link_rows = np.empty(int(pair_rows[-1]), np.int32)
    before = np.zeros(geometry.pairs, np.int64)
    info, row_starts = [], []
    offset = 0
    for block, count in zip(blocks, counts):
        link_rows[pair_rows[block.row_pair] + before[block.row_pair] + block.row_position] = block.row_values
        before += count
        info += [block.side, offset]
        row_starts.append(block.row_start)
        offset += len(block.row_start)
    return {
        "link_rows": link_rows,
        "pair_rows": pair_rows.astype(np.int32),
        "row_starts": np.concatenate(row_starts).astype(np.int32) if row_starts else np.zeros(0, np.int32),
        "blocks": np.array(info, np.int32),
    }


# --- output -------------------------------------------------------------------------------------

def decoded_length(corpus: Corpus, model: CheckedModel) -> np.ndarray:
    """One source position (or -1 for NULL) per target word."""
    return corpus.fields[model.binding.observed["target"]].lengths()


def posterior_length(corpus: Corpus, model: CheckedModel, args: dict[str, Any]) -> np.ndarray:
    """P(a_j = i) for every target word j and source position i (NULL last)."""
    width = corpus.fields[model.binding.observed["source"]].lengths() + int(args["null"])
    return decoded_length(corpus, model) * width


def decoded_links(decoded: np.ndarray) -> list[tuple[int, int]]:
    """(source position, target position) of each target word not linked to NULL."""
    return [(int(i), j) for j, i in enumerate(decoded) if i != NO_LINK]


def format_decoded(corpus: Corpus, model: CheckedModel, ex: int, decoded: np.ndarray, labels: dict[str, list[str]]) -> str:
    """Pharaoh links `i-j`, source position first, 0-based."""
    return pharaoh(decoded_links(decoded))


def format_posterior(corpus: Corpus, model: CheckedModel, ex: int, marginals: np.ndarray,
                     labels: dict[str, list[str]], args: dict[str, Any]) -> str:
    """`i-j:p` for every link whose posterior p is at least 0.001 (NULL gets the rest)."""
    m = corpus.fields[model.binding.observed["target"]].lengths()[ex]
    matrix = marginals.reshape(m, -1)[:, :marginals.size // m - int(args["null"])]  # target x source words
    return " ".join(f"{i}-{j}:{matrix[j, i]:.3f}" for i, j in sorted(zip(*np.nonzero(matrix.T >= 1e-3))))


def evaluate(corpus: Corpus, model: CheckedModel, decoded: list[np.ndarray], labels: dict[str, list[str]]) -> dict[str, float]:
    from emc.eval.alignment import alignment_scores

    gold = corpus.gold.get("links")
    if gold is None:
        return {}
    return alignment_scores([decoded_links(d) for d in decoded], gold)
