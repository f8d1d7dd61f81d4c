"""Batch EM on the naive Bayes mixture: the objective never decreases (unsupervised, and
semi-supervised with weighted unlabeled documents), clusters of a known mixture are recovered,
labeled documents steer the classes, and an impossible document is reported with its line."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import ROOT
from emc.runtime.fit import fit
from emc.runtime.problem import Model
from emc.runtime.settings import FitSettings
from helpers_label import jsonl_problem, mixture_documents, write_jsonl
from test_em_chain import assert_monotone

NAIVE_BAYES = (ROOT / "specs" / "naive_bayes.em").read_text()


@pytest.fixture(scope="module")
def mixture(tmp_path_factory):
    """400 documents from a known 4-class mixture; every 25th carries its label in `given`."""
    docs, gold = mixture_documents(np.random.default_rng(7), classes=4, documents=400)
    path = tmp_path_factory.mktemp("mixture") / "docs.jsonl"
    return write_jsonl(path, docs, gold, labeled=set(range(0, 400, 25))), gold


@pytest.fixture(scope="module")
def model():
    return Model.from_text(NAIVE_BAYES, "naive_bayes.em", {"classes": 4})


@pytest.mark.parametrize("supervised", [False, True], ids=["unsupervised", "semi-supervised"])
def test_batch_em_never_lowers_the_objective(mixture, model, supervised):
    path, _ = mixture
    options = {"supervised_field": "given"} if supervised else {}
    problem = jsonl_problem(model, path, **options)
    settings = FitSettings(iterations=15, tolerance=0, eval_every=0, seed=3, unlabeled_weight=0.3 if supervised else 1.0,
                           init="labeled" if supervised else "random")
    result = fit(problem, settings)
    assert len(result.history) == 15
    assert_monotone(result.history)
    assert result.objective >= result.history[-1]["objective"] - 1e-9 * abs(result.objective)


def test_clusters_of_a_known_mixture_are_recovered(mixture, model):
    path, gold = mixture
    problem = jsonl_problem(model, path)
    best = max((fit(problem, FitSettings(iterations=30, eval_every=0, seed=seed)) for seed in (1, 2, 3)),
               key=lambda r: r.objective)
    assert best.metrics["many_to_one"] > 0.95, best.metrics
    assert best.metrics["one_to_one"] > 0.95, best.metrics


def test_labeled_documents_name_the_classes_and_steer_them(mixture, model):
    """16 labeled documents (4 per class): the classes are their names, and after EM the
    unlabeled documents are classified (not merely clustered) correctly."""
    path, gold = mixture
    problem = jsonl_problem(model, path, supervised_field="given")
    assert problem.labels["classes"] == ["c0", "c1", "c2", "c3"]
    result = fit(problem, FitSettings(iterations=10, eval_every=0, init="labeled"))
    assert result.metrics["accuracy"] > 0.95, result.metrics
    only_labeled = fit(problem, FitSettings(iterations=0, init="labeled"))
    assert only_labeled.metrics["accuracy"] > 0.5, only_labeled.metrics
