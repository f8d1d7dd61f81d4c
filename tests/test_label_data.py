"""Reading documents for the label structure: tokenisation, header stripping, the frequency
cut-off, JSON lines (gzipped too) with gold and supervision fields, the sparse bag-of-words
packing, and bad input reported by file and line."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from conftest import ROOT
from emc.io.documents import frequency_cutoff, strip_headers, tokenize
from emc.runtime.problem import Model, bind
from emc.spec.errors import DataError, EmcError

NAIVE_BAYES = (ROOT / "specs" / "naive_bayes.em").read_text()


@pytest.fixture(scope="module")
def model():
    return Model.from_text(NAIVE_BAYES, "naive_bayes.em", {"classes": 2})


def read(model, path, vocabs=None, **options):
    return model.read(str(path), options, {} if vocabs is None else vocabs)


def test_letters_tokenizer_lowercases_and_splits_on_non_letters():
    assert tokenize("Don't PANIC, 42 times_over! Ère", "letters") == ["don", "t", "panic", "times", "over", "ère"]
    assert tokenize("Don't PANIC, 42", "whitespace") == ["Don't", "PANIC,", "42"]


def test_strip_headers_drops_up_to_the_first_blank_line():
    assert strip_headers("From: a@b\nSubject: hi\n\nbody here\n\nmore") == "body here\n\nmore"
    assert strip_headers("From: a@b\n  \t\nbody") == "body"
    assert strip_headers("no blank line at all") == ""


def test_frequency_cutoff_removes_the_most_frequent_and_the_rare():
    counts = np.array([0, 9, 1, 9, 5, 2])
    assert frequency_cutoff(counts, stop_words=1, min_count=2).tolist() == [False, False, False, True, True, True]
    assert frequency_cutoff(counts, stop_words=0, min_count=1).tolist() == [False, True, True, True, True, True]


def test_cutoff_applies_at_fit_and_a_trained_vocabulary_keeps_its_words(tmp_path, model):
    train = tmp_path / "train.txt"
    train.write_text("the cat the dog\nthe cat sat\nthe cat\n\nthe\n")
    vocabs: dict = {}
    corpus = read(model, train, vocabs, stop_words=1, min_count=2)
    vocab = vocabs["vocab:d"]
    assert vocab.values == ["<unk>", "cat"]
    assert [corpus.fields["d"].tokens(i) for i in range(5)] == [["cat"], ["cat"], ["cat"], [], []]
    test = tmp_path / "test.txt"
    test.write_text("a new cat and the dog\n")
    again = read(model, test, vocabs, stop_words=1, min_count=2)
    assert again.fields["d"].tokens(0) == ["cat"] and len(vocab) == 2


def test_jsonl_gold_and_supervision_fields(tmp_path, model):
    path = tmp_path / "docs.jsonl.gz"
    records = [{"text": "a b", "label": "x"}, {"text": "b c", "label": 3, "given": "y"}, {"text": "c"}]
    with gzip.open(path, "wt") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records))
    corpus = read(model, path, format="jsonl", supervised_field="given")
    assert corpus.gold["classes"].tolist() == ["x", "3", None]
    assert corpus.labeled_mask.tolist() == [False, True, False]
    assert corpus.labeled["classes"][1] == "y"


def test_bags_of_words_pack_distinct_words_with_their_counts(tmp_path, model):
    path = tmp_path / "docs.txt"
    path.write_text("b a b c b\n\na a\n")
    vocabs: dict = {}
    corpus = read(model, path, vocabs)
    problem = bind(model, corpus, vocabs, {})
    arrays = {name: problem.ints[lo:hi] for name, lo, hi in
              zip(problem.model.module.ARRAYS, problem.array_bounds[:-1], problem.array_bounds[1:])}
    ids = arrays["tokens:d"]
    bags = [sorted((problem.vocabs["vocab:d"].values[ids[arrays["bag_token"][i]]], int(arrays["bag_count"][i]))
                   for i in range(lo, hi))
            for lo, hi in zip(arrays["bag_offsets"][:-1], arrays["bag_offsets"][1:])]
    assert bags == [[("a", 1), ("b", 3), ("c", 1)], [("a", 2)]]
    assert len(arrays["class_of"]) == 0


@pytest.mark.parametrize("line, message", [
    ("{\"text\": \"a\"", r"docs.jsonl:2: error: not valid JSON"),
    ("[1, 2]", r"docs.jsonl:2: error: a JSON line must be an object with a \"text\" string, not a list"),
    ("{\"body\": \"a\"}", r"docs.jsonl:2: error: has no \"text\" field"),
    ("{\"text\": 5}", r"docs.jsonl:2: error: has a non-string \"text\" field"),
    ("{\"text\": \"a\", \"label\": [1]}", r"docs.jsonl:2: error: the \"label\" field must be a string or an integer"),
    ("{\"text\": \"a\", \"label\": \" \"}", r"docs.jsonl:2: error: the \"label\" field must be a non-empty label on one line"),
])
def test_bad_json_lines_name_the_line(tmp_path, model, line, message):
    path = tmp_path / "docs.jsonl"
    path.write_text("{\"text\": \"fine\"}\n" + line + "\n")
    with pytest.raises(DataError, match=message):
        read(model, path, format="jsonl")


def test_supervision_needs_labeled_json_documents(tmp_path, model):
    text = tmp_path / "docs.txt"
    text.write_text("a b\n")
    vocabs: dict = {}
    with pytest.raises(DataError, match="--supervised-field needs JSON lines"):
        bind(model, model.read(str(text), {"supervised_field": "label"}, vocabs), vocabs, {"supervised_field": "label"})
    path = tmp_path / "docs.jsonl"
    path.write_text("{\"text\": \"a b\"}\n")
    vocabs: dict = {}
    options = {"format": "jsonl", "supervised_field": "topic"}
    with pytest.raises(DataError, match=r"docs.jsonl: error: --supervised-field topic: no document has a \"topic\" field"):
        bind(model, model.read(str(path), options, vocabs), vocabs, options)


def test_bad_options_and_formats(tmp_path, model):
    path = tmp_path / "docs.txt"
    path.write_text("a b\n")
    with pytest.raises(EmcError, match="--min-count >= 1"):
        read(model, path, min_count=0)
    with pytest.raises(DataError, match="the label structure reads formats text, jsonl, not 'conll'"):
        read(model, path, format="conll")
    empty = tmp_path / "empty.txt"
    empty.write_text("42 !!\n\n")
    with pytest.raises(DataError, match="empty.txt: error: contains no documents"):
        read(model, empty)
