"""Decoding new data with a fitted model: the best structure (or posteriors) per input example."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from emc.io.readers import Lines
from emc.runtime.executor import LocalExecutor
from emc.runtime.fit import check_log_z
from emc.runtime.model_dir import SavedRun
from emc.runtime.params import ParamState, unknown_outcomes
from emc.runtime.problem import bind



def input_options(structure) -> set[str]:
    """The options that describe the file being decoded: --format and the structure's own decode
    options (DECODE_OPTIONS, e.g. --gold-column); every other option of the training run (a tag
    dictionary, say) applies at decode time too."""
    flags = [flag for names, _ in getattr(structure, "DECODE_OPTIONS", []) for flag in names]
    return {"format"} | {flag.lstrip("-").replace("-", "_") for flag in flags}


@dataclass
class Decoded:
    lines: list[str]  # one per input example, in input order; "" for an empty example
    metrics: dict[str, float]  # against the input's gold annotations, when it has some


def decode(saved: SavedRun, data: str | Lines, options: dict[str, Any], posteriors: bool = False) -> Decoded:
    model = saved.model
    merged = {k: v for k, v in saved.info["options"].items() if k not in input_options(model.data)}
    merged.update({k: v for k, v in options.items() if v is not None})
    vocabs = {k: v.copy() for k, v in saved.vocabs.items()}
    problem = bind(model, model.read(data, merged, vocabs), vocabs, merged, trained=saved.trained)
    corpus = problem.corpus
    hapax = {name: np.flatnonzero(v.counts == 1) for name, v in saved.vocabs.items()}
    params = ParamState.plain(unknown_outcomes(saved.theta, problem.layout, hapax), problem.layout)
    executor = LocalExecutor(problem)
    examples = np.arange(len(corpus))
    structure, checked = model.data, model.checked
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
        if corpus.gold and hasattr(structure, "evaluate"):
            metrics = structure.evaluate(corpus, checked, decoded, problem.labels)
    by_example = dict(zip(problem.kept.tolist(), lines))
    return Decoded([by_example.get(i, "") for i in range(problem.read)], metrics)
