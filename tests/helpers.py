"""Building problems from in-memory data, and checking a generated E-step against brute force."""
from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from emc.runtime.executor import LocalExecutor
from emc.runtime.params import ParamState, normalize_rows
from emc.runtime.problem import Model, Problem, bind
from emc.spec.check import check
from emc.spec.parse import parse_text
from emc.structures.semiring import MAX, SUM
from reference import decoded_form

# Tiny data in each structure's default input format.
TINY = {
    "chain": ["a b c", "b c a a", "c a", "a b", "b b c a"],
    "segmentation": ["abcab", "cabab", "abc", "bca", "aabcc"],
    "alignment": ["a b ||| x y", "b c ||| y z z", "a ||| x", "c a ||| z x"],
    "spantree": ["D N V", "D N V D N", "N V", "D A N V"],
    "label": ["a b c a", "b c c", "a a b", "c b", "a c b b"],
    # label(v, n, ...): as many of the fields as the spec names
    "tuples": ["eat ||| apple ||| he ||| now", "eat ||| bread ||| she ||| now", "drive ||| car ||| he ||| then",
               "park ||| car ||| they ||| now", "eat ||| apple pie ||| she ||| then"],
    "deptree": ["D N V", "D N V D N", "N V", "D A N V"],
}


def write_lines(path: Path, lines: Iterable[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def problem_from_lines(tmp_path: Path, spec: str, lines: list[str], options: dict | None = None,
                       overrides: dict | None = None) -> Problem:
    """A problem over the given data lines (in the structure's default format)."""
    model = Model.from_text(spec, "test.em", overrides)
    data = write_lines(tmp_path / "data.txt", lines)
    options = options or {}
    vocabs: dict = {}
    corpus = model.read(str(data), options, vocabs)
    return bind(model, corpus, vocabs, options)


def tiny_problem(tmp_path: Path, spec: Path | str, options: dict | None = None) -> Problem:
    """A problem over the structure's TINY data, for a spec file (a Path) or spec text; a chain
    gets 2 states and a label 2 classes, whatever the spec says, to keep it small."""
    text = spec.read_text() if isinstance(spec, Path) else spec
    checked = check(parse_text(text, "test.em"))
    structure = checked.structure.name
    if getattr(checked.structure, "program", None) is not None:  # written as rules: small arguments
        kind = checked.observed[next(iter(checked.binding.observed.values()))]
        overrides = {name: min(value, 2) for name, value in checked.binding.args.items()}
        return problem_from_lines(tmp_path, text, TINY["segmentation" if kind == "symbols" else "chain"], options,
                                  overrides)
    overrides = {"states": 2} if structure == "chain" else {"classes": 2} if structure == "label" else {}
    fields = len(checked.binding.observed)
    data = ([" ||| ".join(line.split(" ||| ")[:fields]) for line in TINY["tuples"]]
            if structure == "label" and fields > 1 else TINY[structure])
    return problem_from_lines(tmp_path, text, data, options, overrides)


def random_params(problem: Problem, rng: np.random.Generator, zeros: float = 0.0) -> ParamState:
    """Random learned tables (rows normalised), optionally with some entries exactly 0; a featured
    table's probabilities come from random feature weights."""
    layout = problem.layout
    theta = problem.fixed_theta.copy()
    for t in layout.learned():
        values = rng.gamma(0.7, size=t.size) + 1e-3
        if zeros:
            values[rng.random(t.size) < zeros] = 0.0
        theta[t.entries] = values
    theta = normalize_rows(theta, layout, layout.learned())
    features = {t.name: rng.normal(size=t.featured.weight_shape) for t in layout.featured()}
    for t in layout.featured():
        t.values(theta)[:] = np.exp(t.featured.log_probabilities(features[t.name]))
    return ParamState.plain(theta, layout, features)


Firing = tuple[str, int, int] | float  # (table name, row, outcome), or a constant the structure applies


class Entries:
    """Flat parameter indices of factor firings (sparse tables included)."""

    def __init__(self, problem: Problem):
        self.layout = problem.layout
        self.sparse_index = {t.name: {(int(r), int(o)): t.offset + i for i, (r, o) in
                                      enumerate(zip(t.entry_rows, t.entry_outcomes))}
                             for t in self.layout.tables if t.sparse}

    def __call__(self, table: str, row: int, outcome: int) -> int:
        t = self.layout.table(table)
        if t.sparse:
            return self.sparse_index[table][(row, outcome)]
        return t.offset + outcome * t.rows + row

    def of(self, firings: list[Firing]) -> list[int]:
        return [self(*f) for f in firings if not isinstance(f, float)]


def structure_scores(problem: Problem, params: ParamState, structures: list) -> np.ndarray:
    """The unnormalised score of every enumerated (firings, form) structure under `params`."""
    weights = params.weights(problem.layout)
    entries = Entries(problem)
    return np.array([math.prod(f if isinstance(f, float) else weights[entries(*f)] for f in firings)
                     for firings, _ in structures])


def check_against_enumeration(problem: Problem, params: ParamState, example: int,
                              structures: Iterable[tuple[list[Firing], object]],
                              decoded_of: Callable[[np.ndarray], object] | None = None, tol: float = 1e-9) -> None:
    """The generated E-step (log Z and every expected count), posterior-derived counts under
    max (hard EM) and the decoder must equal brute force over the latent structures.

    `structures` lists every latent structure of the example as (the factor firings it consists
    of, its decoded form), as tests/reference.py's enumerators give them; `decoded_of` turns the
    decoder's output into that form (by default reference.decoded_form). A firing that is a plain
    number is a constant factor of the structure's own (no table entry, no count)."""
    structures = list(structures)
    if decoded_of is None:
        decoded_of = lambda decoded: decoded_form(problem, example, decoded)  # noqa: E731
    layout = problem.layout
    entries = Entries(problem)
    scores = structure_scores(problem, params, structures)
    total = scores.sum()
    executor = LocalExecutor(problem, threads=1)
    ex = np.array([example])
    result = executor.estep(params, ex, SUM, np.ones(1))
    if total == 0:
        assert result.log_z[0] == -np.inf
        return
    assert math.isclose(result.log_z[0], math.log(total), rel_tol=tol, abs_tol=tol), (result.log_z[0], math.log(total))
    expected = np.zeros(layout.size)
    learned = layout.learned_mask()
    for (firings, _), score in zip(structures, scores):
        for i in entries.of(firings):
            expected[i] += score / total
    expected[~learned] = 0.0
    np.testing.assert_allclose(result.counts, expected, rtol=1e-7, atol=1e-10)

    best = int(np.argmax(scores))
    decoded, log_best = executor.decode(params, ex)
    assert math.isclose(log_best[0], math.log(scores[best]), rel_tol=tol, abs_tol=tol)
    # ties aside, the decoder returns the argmax structure
    ties = np.flatnonzero(np.isclose(scores, scores[best], rtol=1e-12))
    assert decoded_of(decoded[0]) in [structures[i][1] for i in ties]

    hard = executor.estep(params, ex, MAX, np.ones(1))
    assert math.isclose(hard.log_z[0], math.log(scores[best]), rel_tol=tol, abs_tol=tol)
    if len(ties) == 1:
        viterbi_counts = np.zeros(layout.size)
        for i in entries.of(structures[best][0]):
            viterbi_counts[i] += 1.0
        viterbi_counts[~learned] = 0.0
        np.testing.assert_allclose(hard.counts, viterbi_counts, atol=1e-12)


def product(values: Iterable, repeat: int):
    return itertools.product(values, repeat=repeat)
