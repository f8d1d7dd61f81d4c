"""Semi-supervised naive Bayes on a slice of 20 Newsgroups (../shared/data/20news): every 2nd
training document, 2 per class labeled, scored on every 8th test document. EM over labeled +
unlabeled documents never lowers its objective and classifies the test documents better than
naive Bayes on the labeled documents alone (Nigam et al. 2000). The full experiment is
bench/label_20news.py."""
from __future__ import annotations

import json

import numpy as np
import pytest

import emc
from conftest import ROOT
from emc.io.readers import read_lines
from test_em_chain import assert_monotone

OPTIONS = {"format": "jsonl", "stop_words": 50, "min_count": 5, "supervised_field": "train_label"}


def every_nth(path, n):
    return [json.loads(line) for number, line in read_lines(path) if number % n == 0]


@pytest.mark.realdata
def test_unlabeled_documents_help_few_labeled_ones(shared_data):
    folder = shared_data / "20news"
    train = every_nth(folder / "20news-bydate-train.jsonl.gz", 2)
    labeled_per_class: dict[str, int] = {}
    for record in train:
        if labeled_per_class.get(record["label"], 0) < 2:
            labeled_per_class[record["label"]] = labeled_per_class.get(record["label"], 0) + 1
            record["train_label"] = record["label"]
    test = every_nth(folder / "20news-bydate-test.jsonl.gz", 8)
    model = emc.load(ROOT / "specs" / "naive_bayes.em")
    problem = model.problem([json.dumps(r) for r in train], **OPTIONS)
    assert problem.n_examples == len(train) == 5657 and problem.args["classes"] == 20
    assert int(problem.corpus.labeled_mask.sum()) == 40

    def test_accuracy(iterations: int) -> float:
        fitted = model.fit([json.dumps(r) for r in train], init="labeled", iterations=iterations, tolerance=0,
                           eval_every=0, **OPTIONS)
        assert_monotone(fitted.history)
        predicted = fitted.decode([json.dumps(r) for r in test], format="jsonl")
        return float(np.mean([p == r["label"] for p, r in zip(predicted, test)]))

    labeled_only, with_em = test_accuracy(0), test_accuracy(8)
    assert labeled_only > 0.15, labeled_only
    assert with_em > labeled_only + 0.05, (labeled_only, with_em)
