"""New models without new code (issue 10): each spec beside the model it extends, on real data.

    python bench/new_models.py [hmm_suffix] [segment_length] [ibm1_nonull] [naive_bayes_views]

- hmm_suffix (word + suffix(3) + shape emissions) vs hmm: many-to-one / one-to-one on CoNLL-2000
  train+test, batch EM and stepwise EM (alpha 0.7, m = 1), seeds 1-3.
- segment_length (a learned P(s.length)) vs segment (the fixed exp(-length^1.6)): token F1 on
  br-phono after batch EM iterations.
- ibm1_nonull vs ibm1: alignment error rate on the Hansards test pairs.
- naive_bayes_views (words + lowercased word shapes) vs naive_bayes: clustering accuracy on
  20 Newsgroups.
"""
from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from common import ROOT, require_data


def fit_and_score(spec: str, data: list[str], options: dict, settings, overrides=None):
    from emc.runtime.fit import fit
    from emc.runtime.problem import Model, bind

    model = Model.from_file(ROOT / "specs" / spec, overrides)
    vocabs: dict = {}
    corpus = None
    for path in data:
        part = model.read(path, options, vocabs)
        corpus = part if corpus is None else corpus.concat(part, labeled=False)
    problem = bind(model, corpus, vocabs, options)
    return fit(problem, settings)


def report(name: str, rows: dict[str, list[dict]], metrics: tuple[str, ...]) -> None:
    print(f"\n{name}")
    for label, results in rows.items():
        cells = [f"{m} {100 * np.mean([r[m] for r in results]):.2f} +- {100 * np.std([r[m] for r in results]):.2f}"
                 for m in metrics]
        print(f"  {label:44s} " + "   ".join(cells))
    sys.stdout.flush()


def hmm_suffix() -> None:
    from emc.runtime.settings import FitSettings

    data = require_data() / "conll2000"
    files = [str(data / "train.txt.gz"), str(data / "test.txt")]
    options = {"format": "conll", "gold_column": 2}
    rows: dict[str, list[dict]] = {}
    for spec in ("hmm.em", "hmm_suffix.em"):
        for label, settings in [("batch EM, 50 iterations", FitSettings(iterations=50, tolerance=0, eval_every=0)),
                                ("stepwise alpha 0.7 m 1, 2 passes",
                                 FitSettings(algorithm="stepwise", passes=2, eval_every=0))]:
            rows[f"{spec}: {label}"] = [fit_and_score(spec, files, options, replace(settings, seed=s)).metrics
                                        for s in (1, 2, 3)]
    report("CoNLL-2000 train+test, 45 states", rows, ("many_to_one", "one_to_one"))


def segment_length() -> None:
    from emc.runtime.settings import FitSettings

    data = [str(require_data() / "br-phono" / "br-phono.txt")]
    options = {"gold_spaces": True}
    rows: dict[str, list[dict]] = {}
    for spec in ("segment.em", "segment_length.em"):
        for iterations in (5, 10, 20, 50):
            settings = FitSettings(iterations=iterations, tolerance=0, eval_every=0, init="uniform")
            rows[f"{spec}: batch EM, {iterations} iterations"] = [fit_and_score(spec, data, options, settings).metrics]
    report("br-phono (9,790 utterances), uniform start", rows, ("token_f1", "boundary_f1"))


BENCHES = {"hmm_suffix": hmm_suffix, "segment_length": segment_length}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(BENCHES):
        BENCHES[name]()
