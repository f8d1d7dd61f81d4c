"""Decoding new data with a saved model: the best structure (or posteriors) per input example."""
from __future__ import annotations

import sys
from typing import Any, Iterator

import numpy as np

from emc.eval import format_metrics
from emc.runtime.executor import LocalExecutor
from emc.runtime.fit import check_log_z
from emc.runtime.model_dir import SavedRun, load_run
from emc.runtime.params import ParamState, unknown_outcomes
from emc.runtime.problem import Problem, bind
from emc.spec.errors import EmcError

# Options that describe the input file; every other option of the training run (a tag dictionary,
# say) applies at decode time too. A structure adds its own in its data module's INPUT_OPTIONS.
INPUT_OPTIONS = ("format", "word_column", "gold_column")


def decode_file(run: str, path: str | None, options: dict[str, Any], posteriors: bool = False) -> Iterator[str]:
    """One output line per input example, in input order; an empty line for an empty example. A
    structure may decode some runs or options its own way: its data module's
    `decode_mode(saved, options, posteriors)` returns a function of (saved, path, options) giving
    the lines, or None for the ordinary decoding below."""
    saved = load_run(run)
    data = saved.model.data
    decode_mode = getattr(data, "decode_mode", None)
    runner = decode_mode(saved, options, posteriors) if decode_mode else None
    if runner is not None:
        yield from runner(saved, path, options)
        return
    problem, params = bind_saved(saved, path, options)
    sub = problem.corpus
    executor = LocalExecutor(problem)
    examples = np.arange(len(sub))
    checked = saved.model.checked
    if posteriors:
        marginals, log_z = executor.posterior(params, examples)
        check_log_z(problem, examples, log_z)
        lines = [data.format_posterior(sub, checked, q, marginals[q], problem.labels, problem.args) for q in examples]
    else:
        decoded, scores = executor.decode(params, examples)
        check_log_z(problem, examples, scores)
        lines = [data.format_decoded(sub, checked, q, decoded[q], problem.labels) for q in examples]
        if sub.gold and hasattr(data, "evaluate"):
            metrics = data.evaluate(sub, checked, decoded, problem.labels)
            print("emc: " + format_metrics(metrics), file=sys.stderr)
    yield from in_input_order(problem, lines)


def bind_saved(saved: SavedRun, path: str | None, options: dict[str, Any]) -> tuple[Problem, ParamState]:
    """New data packed for a saved model, and the model's parameters (see emc/io/vocab.py for
    unknown values): the training run's options apply, except those naming its input."""
    model = saved.model
    data = model.data
    if path is None and not getattr(data, "DATA_FROM_OPTIONS", False):
        raise EmcError("emc decode: give the file to decode: emc decode RUN FILE")
    inputs = INPUT_OPTIONS + tuple(getattr(data, "INPUT_OPTIONS", ()))
    merged = {k: v for k, v in saved.info["options"].items() if k not in inputs}
    merged.update({k: v for k, v in options.items() if v is not None})
    vocabs = {k: v.copy() for k, v in saved.vocabs.items()}
    problem = bind(model, model.read(path, merged, vocabs), vocabs, merged, trained=saved.trained)
    hapax = {name: np.flatnonzero(v.counts == 1) for name, v in saved.vocabs.items()}
    return problem, ParamState.plain(unknown_outcomes(saved.theta, problem.layout, hapax), problem.layout)


def in_input_order(problem: Problem, lines: list[str]) -> Iterator[str]:
    """The kept examples' lines, with an empty line for each empty example left out."""
    by_example = dict(zip(problem.kept.tolist(), lines))
    for i in range(problem.read):
        yield by_example.get(i, "")
