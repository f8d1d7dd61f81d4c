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


def ibm1_nonull() -> None:
    import tempfile
    from pathlib import Path

    from alignment_hansards import DATA, TRAIN, bitext, emc, scores

    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        train, test = work / "train.txt", work / "test.txt"
        bitext(DATA, TRAIN, train)
        bitext(DATA, ["test"], test)
        print("\nHansards, 2,867 pairs (English -> French), IBM 1 from uniform tables, 5 iterations; AER on the "
              "447 test pairs")
        for spec in ("ibm1.em", "ibm1_nonull.em"):
            run = work / spec
            emc("fit", str(ROOT / "specs" / spec), str(train), "--init", "uniform", "--iterations", "5", "--quiet",
                "--forward-only", "--out", str(run))
            aer, precision, recall = scores(emc("decode", str(run), str(test), "--gold",
                                                str(DATA / "test.wa.nonullalign")))
            print(f"  {spec:16s} AER {aer:.1f}%  precision {precision:.1f}%  recall {recall:.1f}%")


def naive_bayes_views() -> None:
    import json
    import tempfile
    from pathlib import Path

    import label_20news as news

    train = news.records(news.TRAIN)
    gold = [r["label"] for r in news.records(news.TEST)]
    labels = np.array([r["label"] for r in train])
    print("\n20 Newsgroups: test accuracy with 100 labeled training documents (5 per class) + EM (10 iterations, "
          "unlabeled weight 0.1), and with every training label; cut-off 50/5, add-0.01")
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        for spec, tokens in (("naive_bayes.em", "letters"), ("naive_bayes_views.em", "whitespace")):
            for n in (100, len(train)):
                chosen = np.arange(len(train)) if n == len(train) else np.concatenate(
                    [np.random.default_rng(0).choice(np.flatnonzero(labels == c), 5, replace=False)
                     for c in sorted(set(labels))])
                marked = set(chosen.tolist())
                path = work / f"train-{n}.jsonl"
                path.write_text("".join(json.dumps({**r, "train_label": r["label"]} if i in marked else r) + "\n"
                                        for i, r in enumerate(train)))
                run = work / f"{spec}-{n}"
                iterations = ["--iterations", "10", "--tolerance", "0", "--unlabeled-weight", "0.1"] \
                    if n < len(train) else ["--iterations", "0"]
                news.emc(["fit", ROOT / "specs" / spec, path, *news.TOKENS, "--tokenize", tokens, "--supervised-field",
                          "train_label", "--init", "labeled", "--quiet", "--eval-every", "0", *iterations, "--out", run])
                print(f"  {spec:22s} ({tokens} tokens) {n:5d} labeled: {100 * news.test_accuracy(run, gold):.1f}%",
                      flush=True)


BENCHES = {"hmm_suffix": hmm_suffix, "segment_length": segment_length, "ibm1_nonull": ibm1_nonull,
           "naive_bayes_views": naive_bayes_views}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(BENCHES):
        BENCHES[name]()
