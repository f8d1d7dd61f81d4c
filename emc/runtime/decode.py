"""Decoding new data with a fitted model: the best structure (or posteriors, or posterior samples)
per input example.

A structure may decode some runs its own way (alignment: two directions, symmetrised; see
emc/runtime/modes/dispatch.py, which the CLI and the Python API call): such a decoder returns (the
output lines in input order, the scores against the input's gold annotations, {} without them);
`bind_saved` and `in_input_order` are its building blocks. Either way the caller gets the lines
and the metrics in a `Decoded`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from emc.io.readers import Lines
from emc.runtime.example_constraints import attach_saved
from emc.runtime.executor import LocalExecutor
from emc.runtime.blocks.features import decoding_theta, growing_spaces
from emc.runtime.state import check_log_z
from emc.runtime.model_dir import SavedRun
from emc.runtime.params import ParamState
from emc.runtime.problem import Problem, available_memory, bind
from emc.runtime.unseen import unseen_outcomes
from emc.spec.errors import EmcError


def input_options(structure) -> set[str]:
    """The options that describe the file being decoded: --format, the structure's own decode
    options (DECODE_OPTIONS, e.g. --gold-column) and any other input it names (INPUT_OPTIONS, e.g.
    a second file); every other option of the training run (a tag dictionary, say) applies at
    decode time too."""
    flags = [flag for names, _ in structure.DECODE_OPTIONS for flag in names]
    return ({"format"} | {flag.lstrip("-").replace("-", "_") for flag in flags}
            | set(structure.INPUT_OPTIONS))


@dataclass
class Decoded:
    lines: list[str]  # one per input example, in input order; "" for an empty example
    metrics: dict[str, float]  # against the input's gold annotations, when it has some


def bind_saved(saved: SavedRun, data: str | Lines | None, options: dict[str, Any]) -> tuple[Problem, ParamState]:
    """New data packed for a saved model, and the model's parameters as decoding reads them
    (emc/runtime/unseen.py: new values, and values never seen with a row): the training run's
    options apply, except those naming its input."""
    model = saved.model
    structure = model.data
    if data is None and not structure.DATA_FROM_OPTIONS:
        raise EmcError("emc decode: give the file to decode: emc decode RUN FILE")
    merged = {k: v for k, v in saved.info["options"].items() if k not in input_options(structure)}
    merged.update({k: v for k, v in options.items() if v is not None})
    vocabs = {k: v.copy() for k, v in saved.vocabs.items()}
    corpus = model.read(data, merged, vocabs)
    # featured blocks score values never seen in training from their features: words read now keep
    # their ids, and so do a segmentation's new substrings when the data is packed (bind)
    growing = growing_spaces(model.checked, vocabs, frozenset(saved.sparse))
    trained_sizes = saved.info["vocab_sizes"]
    read_sizes = {space: len(vocabs[space]) for space in growing if len(vocabs[space]) > trained_sizes.get(space, 0)}
    trained = dict(saved.trained, vocab_sizes={**saved.trained["vocab_sizes"], **read_sizes}, growing=growing)
    problem = bind(model, corpus, vocabs, merged, trained=trained)
    if any(problem.sizes[space] > trained_sizes.get(space, 0) for space in growing):
        return problem, ParamState.plain(decoding_theta(saved, problem), problem.layout, saved.features)
    theta = unseen_outcomes(saved.theta, problem.layout, saved.vocabs, frozenset(saved.features))
    return problem, ParamState.plain(theta, problem.layout)


def in_input_order(problem: Problem, lines: list[str]) -> list[str]:
    """The kept examples' lines, with an empty line for each empty example left out."""
    by_example = dict(zip(problem.kept.tolist(), lines))
    return [by_example.get(i, "") for i in range(problem.read)]


def decode(saved: SavedRun, data: str | Lines | None, options: dict[str, Any], posteriors: bool = False) -> Decoded:
    """The best structure of each example; with `posteriors`, its part marginals."""
    structure = saved.model.data
    problem, params = bind_saved(saved, data, options)
    corpus = problem.corpus
    executor = LocalExecutor(problem)
    attach_saved(executor, problem, saved)  # a spec's per-example constraint projects decoding too
    examples = np.arange(len(corpus))
    checked = saved.model.checked
    metrics: dict[str, float] = {}
    if posteriors:
        marginals, log_z = executor.posterior(params, examples)
        check_log_z(problem, examples, log_z)
        lines = [structure.format_posterior(corpus, checked, q, marginals[q], problem.labels, problem.args)
                 for q in examples]
    else:
        decoded, scores = executor.decode(params, examples)
        check_log_z(problem, examples, scores)
        lines = [structure.format_decoded(corpus, checked, q, decoded[q], problem.labels) for q in examples]
        if corpus.gold and structure.evaluate is not None:
            metrics = structure.evaluate(corpus, checked, decoded, problem.labels)
    return Decoded(in_input_order(problem, lines), metrics)


# What --sample N holds per draw before printing: the drawn structure (an int64 array), its printed
# line and the request's indices: about 100 bytes a token and 300 a draw (a generous estimate).
BYTES_PER_SAMPLED_TOKEN = 100
BYTES_PER_DRAW = 300


def check_samples_fit(samples: int, examples: int, tokens: int, available: int | None = None) -> None:
    """Refuses, with the estimate, a --sample N whose draws cannot fit in memory."""
    need = samples * (tokens * BYTES_PER_SAMPLED_TOKEN + examples * BYTES_PER_DRAW)
    available = available_memory() if available is None else available
    if available is not None and need > available:
        raise EmcError(f"emc decode --sample {samples}: {samples:,} draws of each of {examples:,} examples "
                       f"({tokens:,} tokens) would need about {need / 2 ** 30:,.1f} GiB, but this machine has "
                       f"{available / 2 ** 30:.1f} GiB available; draw fewer, or decode the file in parts")


def sample(saved: SavedRun, data: str | Lines | None, options: dict[str, Any], samples: int, seed: int) -> Decoded:
    """`samples` structures per example drawn from the posterior, each formatted as decoding
    formats the best one: the lines of example 1's draws, then example 2's, and so on (an empty
    example gives `samples` empty lines). Draw d of every example is seeded from (seed, d) and the
    example's index (emc/structures/sampling.py): the same command prints the same lines."""
    from emc.structures.sampling import SEED_SPACE, require_sampler

    if samples < 1:
        raise EmcError(f"emc decode --sample {samples}: give the number of samples per example (at least 1)")
    if seed < 0:
        raise EmcError(f"emc decode --seed {seed}: give a whole number of at least 0")
    require_sampler(saved.model.module, "emc decode --sample")
    structure = saved.model.data
    problem, params = bind_saved(saved, data, options)
    corpus = problem.corpus
    executor = LocalExecutor(problem)
    n = len(corpus)
    check_samples_fit(samples, n, int(executor.lengths.sum()))
    bases = np.random.default_rng(seed).integers(SEED_SPACE, size=samples)
    drawn, log_z = executor.sample(params, np.repeat(np.arange(n), samples), np.tile(bases, n))
    check_log_z(problem, np.repeat(np.arange(n), samples), log_z)
    lines = ["\n".join(structure.format_decoded(corpus, saved.model.checked, q, drawn[q * samples + d], problem.labels)
                       for d in range(samples)) for q in range(n)]
    return Decoded(["\n".join([line] * samples) if line == "" else line for line in in_input_order(problem, lines)], {})
