"""A model, and a model bound to a corpus (a Problem): the packed arrays, the parameter layout
and the meta values its generated code reads.
"""
from __future__ import annotations

import ctypes
import functools
import os

from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from emc.codegen.layout import CodeLayout, token_array_name
from emc.io.corpus import Corpus
from emc.io.vocab import Vocabulary
from emc.runtime.blocks.block import LogLinearBlock
from emc.runtime.compiled import load_module
from emc.runtime.params import ParamLayout
from emc.spec.check import check
from emc.spec.checks.expressions import evaluate_weight
from emc.spec.errors import DataError, EmcError
from emc.spec.model import CheckedModel, ResolvedAttr
from emc.spec.parse import parse_file, parse_text
from emc.structures.hooks import StructureData
from emc.structures.registry import data_for


@dataclass
class Model:
    """A checked spec with its compiled module and the layout of its data (built once here)."""

    checked: CheckedModel
    module: ModuleType
    code_layout: CodeLayout

    @staticmethod
    def from_file(path: str | Path, overrides: dict[str, Any] | None = None) -> "Model":
        return Model.from_checked(check(parse_file(path), overrides))

    @staticmethod
    def from_text(text: str, path: str = "<spec>", overrides: dict[str, Any] | None = None,
                  base_dir: str | None = None) -> "Model":
        return Model.from_checked(check(parse_text(text, path), overrides, base_dir))

    @staticmethod
    def from_checked(checked: CheckedModel) -> "Model":
        layout = CodeLayout.of(checked)
        return Model(checked, load_module(checked, layout), layout)

    @property
    def data(self) -> StructureData:
        return data_for(self.checked.structure.name, self.checked.binding)

    @property
    def name(self) -> str:
        return self.checked.name

    def read(self, path: str, options: dict[str, Any], vocabs: dict[str, Vocabulary]) -> Corpus:
        return self.data.read(self.checked, path, options, vocabs)


class Frozen(dict):
    """At decode time: the trained vocabulary sizes (a dict, space -> size), the entries of the
    trained sparse tables (`sparse`: table -> (rows, outcomes)), which packing must map data onto,
    and the spaces whose new values keep their ids (`growing`: a featured block scores them,
    emc/runtime/blocks/features.py) where packing would make them `<unk>`."""

    def __init__(self, sizes: dict[str, int], sparse: dict[str, tuple[np.ndarray, np.ndarray]],
                 growing: frozenset[str] = frozenset()):
        super().__init__(sizes)
        self.sparse = sparse
        self.growing = growing


@dataclass
class Problem:
    """A model bound to the examples EM runs on."""

    model: Model
    corpus: Corpus
    args: dict[str, Any]
    vocabs: dict[str, Vocabulary]
    labels: dict[str, list[str]]
    sizes: dict[str, int]
    layout: ParamLayout
    meta: np.ndarray
    ints: np.ndarray
    array_bounds: np.ndarray
    fixed_theta: np.ndarray = field(repr=False)
    kept: np.ndarray = field(repr=False, default=None)  # indices of the examples kept (empty ones are not)
    read: int = 0  # examples read, empty ones included
    options: dict[str, Any] = field(default_factory=dict)  # the data options it was packed with

    @property
    def skipped(self) -> int:
        return self.read - self.n_examples

    @property
    def n_examples(self) -> int:
        return len(self.corpus)

    def hapax(self) -> dict[str, np.ndarray]:
        """Ids of the values seen exactly once in training, per vocabulary."""
        return {name: np.flatnonzero(v.counts == 1) for name, v in self.vocabs.items()}


def bind(model: Model, corpus: Corpus, vocabs: dict[str, Vocabulary], options: dict[str, Any],
         trained: dict[str, Any] | None = None, trained_vocabs: dict[str, int] | None = None) -> Problem:
    """Pack a corpus for a model; empty examples are left out (`kept` says which remain). The
    structure's `pack` returns its arrays, or (arrays, {table: (rows, outcomes)}) for the sparse
    tables it wants. At fit time (`trained` None) vocabularies are counted and the
    structure's arguments may be set from the data (a chain's states from a tag dictionary); at
    decode time `trained` holds the fitted run's args, labels and vocabulary sizes, and every id
    the model was not trained on becomes `<unk>` (0). A structure with `complete_corpus` gets the
    whole corpus first (e.g. for a frequency cut-off over every file), told the trained
    vocabulary sizes if any: at decode time the run's, at fit time `trained_vocabs` (those of
    --init RUN)."""
    checked = model.checked
    data = model.data
    if data.complete_corpus is not None:
        frozen_sizes = trained["vocab_sizes"] if trained is not None else trained_vocabs
        corpus = data.complete_corpus(checked, corpus, options, vocabs, frozen_sizes)
    original = len(corpus)
    kept = corpus.nonempty()
    if len(kept) < original:
        corpus = corpus.subset(kept)
    tokens = model.code_layout.tokens
    views = _views(tokens, corpus, vocabs)
    if trained is None:
        args = dict(checked.binding.args)
        labels = data.named_values(checked, options, corpus) if data.named_values is not None else {}
        for arg, names in labels.items():
            args[arg] = len(names)
        for name, ids in _vocab_ids(tokens, views).items():
            vocabs[name].count(ids)
    else:
        args, labels, vocab_sizes = trained["args"], trained["labels"], trained["vocab_sizes"]
        _freeze(tokens, views, vocab_sizes)
    frozen = None if trained is None else Frozen(vocab_sizes, trained.get("sparse", {}),
                                                 trained.get("growing", frozenset()))
    packed = data.pack(checked, corpus, args, labels, options, vocabs, frozen)
    structural, sparse = packed if isinstance(packed, tuple) else (packed, {})
    if trained is None:
        vocab_sizes = {name: len(v) for name, v in vocabs.items()}
    else:  # a space packing may grow (a segmentation's substrings) keeps the values it added
        vocab_sizes = {**vocab_sizes, **{space: len(vocabs[space]) for space in frozen.growing}}
    sizes = dict(vocab_sizes)
    sizes.update(data.space_sizes(checked, args))
    layout = ParamLayout.build(checked, sizes, sparse)
    check_fits_in_memory(layout)
    attach_features(checked, layout, vocabs)
    arrays = dict(structural)
    for attr in tokens:
        arrays[token_array_name(attr)] = views[token_array_name(attr)]
    ints, bounds = _concatenate([arrays[name] for name in model.code_layout.arrays])
    meta = layout.meta(model.code_layout, args, sizes)
    problem = Problem(model, corpus, args, vocabs, labels, sizes, layout, meta, ints, bounds, np.zeros(layout.size),
                      kept, original, dict(options))
    problem.fixed_theta = fixed_tables(problem, options)
    return_freed_memory()  # packing's temporaries, freed, are still resident on the heap
    return problem


# A fit holds about a dozen parameter-sized float64 arrays at its peak (theta, counts, the M-step's
# rows, the fixed tables, the saved copy): `emc fit` of a 4M-parameter chain peaked at 97 bytes per
# parameter above the interpreter's own memory.
BYTES_PER_PARAMETER = 96


def available_memory() -> int | None:
    """Bytes the machine can still give (MemAvailable), or None where it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def return_freed_memory() -> None:
    """Give the heap's free pages back to the system where the C library can (glibc's
    malloc_trim; nothing elsewhere). glibc serves a block below its mmap threshold from the heap
    and raises that threshold (up to 32 MiB) whenever a larger block it mapped is freed, so
    packing's temporaries of a few MB land on the heap, and once freed they stay resident below
    the arrays allocated after them, past which the heap cannot shrink: 56 MiB of IBM 1's peak
    at 100k pairs (bench/alignment_speed.py, 607 -> 551 MiB)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):  # not glibc (macOS: no such function; Windows: no CDLL(None))
        return None


def check_fits_in_memory(layout: ParamLayout, available: int | None = None) -> None:
    """Refuse, before allocating, a model whose tables cannot fit in memory, saying which tables
    make it that big (a chain's states=100000 asks for 10^10 transition entries)."""
    need = layout.size * BYTES_PER_PARAMETER
    available = available_memory() if available is None else available
    if available is None or need <= available:
        return
    gib = 2 ** 30
    largest = sorted(layout.tables, key=lambda t: -t.size)[:3]
    parts = "; ".join(f"{t.name}: {t.rows:,} rows x {t.outcomes:,} outcomes = {t.size:,} entries" for t in largest)
    raise EmcError(f"the model has {layout.size:,} parameters and a fit would need about {need / gib:.1f} GiB, "
                   f"but this machine has {available / gib:.1f} GiB available ({parts}); lower the structure's "
                   f"size arguments (e.g. --states) or the vocabulary (a frequency cut-off)")


def attach_features(checked: CheckedModel, layout: ParamLayout, vocabs: dict[str, Vocabulary]) -> None:
    """Build each featured table's (outcome x feature) matrix from its outcome vocabulary, once
    (for a sparse table over word pairs, its (entry x feature) matrix: pair_features.py)."""
    for factor in checked.tables():
        if not factor.features:
            continue
        # imported here: pair_features imports scipy.sparse, 0.12 s of every warm start otherwise
        from emc.runtime.blocks.features import build
        from emc.runtime.blocks.pair_features import featured_sparse_table
        t = layout.table(factor.table)
        vocab = vocabs.get(t.outcome_spaces[0]) if len(t.outcome_spaces) == 1 else None
        if vocab is None:
            raise EmcError(f"block '{factor.name}': features apply to a table over a vocabulary of "
                           f"observed values; this {checked.structure.name} block's table is not one")
        if t.sparse:
            t.block = LogLinearBlock(t.prior, featured_sparse_table(factor, t, vocabs))
            continue
        if factor.pair_features:
            raise EmcError(f"block '{factor.name}': pair features apply to a sparse table over word pairs; "
                           f"this {checked.structure.name} block's table is dense")
        seen = np.zeros(t.outcomes, bool)
        seen[:len(vocab.counts)] = vocab.counts[:t.outcomes] > 0
        t.block = LogLinearBlock(t.prior, build(factor.table, t.rows, factor.l2, factor.features,
                                                vocab.values[:t.outcomes], seen))


def _views(tokens: tuple[ResolvedAttr, ...], corpus: Corpus, vocabs: dict[str, Vocabulary]) -> dict[str, np.ndarray]:
    """Token id arrays for every token space the factors read (views computed per type, once)."""
    out = {}
    for attr in tokens:
        base = corpus.fields[attr.attribute.tokens_of]
        if attr.views:
            vocab = vocabs.setdefault(attr.space, Vocabulary())
            out[token_array_name(attr)] = base.view(attr.views, vocab).ids
        else:
            vocabs.setdefault(attr.space, base.vocab)
            out[token_array_name(attr)] = base.ids
    return out


def _vocab_ids(tokens: tuple[ResolvedAttr, ...], views: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {attr.space: views[token_array_name(attr)] for attr in tokens}


def _freeze(tokens: tuple[ResolvedAttr, ...], views: dict[str, np.ndarray], vocab_sizes: dict[str, int]) -> None:
    for attr in tokens:
        ids = views[token_array_name(attr)]
        size = vocab_sizes.get(attr.space, 0)
        views[token_array_name(attr)] = np.where(ids < size, ids, 0).astype(np.int32)


def _concatenate(arrays: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    bounds = np.zeros(len(arrays) + 1, np.int64)
    np.cumsum([len(a) for a in arrays], out=bounds[1:])
    if bounds[-1] >= 2**31:
        raise EmcError("the corpus is too large to pack into 32-bit arrays; split it")
    ints = np.empty(bounds[-1], np.int32)
    for a, lo, hi in zip(arrays, bounds[:-1], bounds[1:]):
        if len(a) and (a.max() >= 2**31 or a.min() < -2**31):
            raise EmcError("a packed value does not fit 32 bits")
        ints[lo:hi] = a
    return ints, bounds


def fixed_tables(problem: Problem, options: dict[str, Any]) -> np.ndarray:
    """theta with the fixed tables filled in: weights evaluated over their attribute domains,
    fixed blocks read from their files (spec path or --fixed NAME=FILE). Learned tables are 0."""
    theta = np.zeros(problem.layout.size)
    checked = problem.model.checked
    data = problem.model.data
    for factor in checked.tables():
        table = problem.layout.table(factor.table)
        if factor.kind == "weight":
            domains = [(a.text, _numeric_values(data, checked, a.space, problem.args, problem.sizes[a.space]))
                       for a in factor.outcome]
            grid = np.indices([len(v) for _, v in domains]).reshape(len(domains), -1).T
            values = [evaluate_weight(factor.expr, {name: float(dom[i]) for (name, dom), i in zip(domains, idx)})
                      for idx in grid]
            theta[table.entries] = values
        elif factor.kind == "fixed":
            theta[table.entries] = _read_fixed(problem, factor, options)
        elif factor.kind == "constraint":
            theta[table.entries] = 1.0  # no shift: the projection sets exp(-lambda * feature) in its E-steps
    return theta


def _numeric_values(data: StructureData, checked: CheckedModel, space: str, args: dict, size: int) -> np.ndarray:
    """The numeric value of each index of a numeric space (index = value unless the structure
    says otherwise, e.g. jumps offset to be non-negative)."""
    if data.numeric_values is not None:
        return data.numeric_values(checked, space, args, size)
    return np.arange(size, dtype=np.float64)


def _read_fixed(problem: Problem, factor, options: dict[str, Any]) -> np.ndarray:
    path = (options.get("fixed") or {}).get(factor.name) or factor.fixed_path
    if path is None:
        raise EmcError(f"block '{factor.name}' is fixed: give its file with --fixed {factor.name}=FILE")
    if problem.model.data.read_fixed is None:
        raise DataError(path, None, f"the {problem.model.checked.structure.name} structure has no reader for fixed blocks")
    return problem.model.data.read_fixed(problem, factor, path)
