"""Decoding new data with a saved model: the best structure (or posteriors) per input example."""
from __future__ import annotations

import sys
from typing import Any, Iterator

import numpy as np

from emc.eval import format_metrics
from emc.runtime.executor import LocalExecutor
from emc.runtime.fit import check_log_z
from emc.runtime.model_dir import load_run
from emc.runtime.params import ParamState, unknown_outcomes
from emc.runtime.problem import bind

# Options that describe the input file; every other option of the training run (a tag dictionary,
# say) applies at decode time too.
INPUT_OPTIONS = ("format", "word_column", "gold_column")


def decode_file(run: str, path: str, options: dict[str, Any], posteriors: bool = False) -> Iterator[str]:
    """One output line per input example, in input order; an empty line for an empty example."""
    saved = load_run(run)
    model = saved.model
    merged = {k: v for k, v in saved.info["options"].items() if k not in INPUT_OPTIONS}
    merged.update({k: v for k, v in options.items() if v is not None})
    vocabs = {k: v.copy() for k, v in saved.vocabs.items()}
    problem = bind(model, model.read(path, merged, vocabs), vocabs, merged, trained=saved.trained)
    sub = problem.corpus
    hapax = {name: np.flatnonzero(v.counts == 1) for name, v in saved.vocabs.items()}
    params = ParamState.plain(unknown_outcomes(saved.theta, problem.layout, hapax), problem.layout)
    executor = LocalExecutor(problem)
    examples = np.arange(len(sub))
    data, checked = model.data, model.checked
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
    by_example = dict(zip(problem.kept.tolist(), lines))
    for i in range(problem.read):
        yield by_example.get(i, "")
