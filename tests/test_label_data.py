"""Reading documents for the label structure: tokenisation, header stripping, the frequency
cut-off, JSON lines (gzipped too) with gold and supervision fields, the sparse bag-of-words
packing, and bad input reported by file and line."""
from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT
from emc.io.documents import frequency_cutoff, strip_headers, tokenize
from emc.runtime.job import Job, prepare
from emc.runtime.problem import Model, bind
from emc.spec.errors import DataError, EmcError

SPEC = str(ROOT / "specs" / "naive_bayes.em")
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


def test_strip_headers_needs_json_lines(tmp_path, model):
    """A `text` document is one line, so it has no blank line and stripping would empty it: the
    combination is refused by name rather than reported as a file without documents."""
    text = tmp_path / "docs.txt"
    text.write_text("From: a@b\nbody words\n")
    for fmt in (None, "text"):
        with pytest.raises(EmcError, match="--strip-headers needs --format jsonl"):
            read(model, text, format=fmt, strip_headers=True)
    assert read(model, text, format="text", strip_headers=False).fields["d"].tokens(1) == ["body", "words"]
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"text": "From: a@b\nSubject: hi\n\nbody words"}) + "\n")
    assert read(model, path, format="jsonl", strip_headers=True).fields["d"].tokens(0) == ["body", "words"]


def test_frequency_cutoff_removes_the_most_frequent_and_the_rare():
    counts = np.array([0, 9, 1, 9, 5, 2])
    assert frequency_cutoff(counts, stop_words=1, min_count=2).tolist() == [False, False, False, True, True, True]
    assert frequency_cutoff(counts, stop_words=0, min_count=1).tolist() == [False, True, True, True, True, True]


def test_cutoff_applies_at_fit_and_a_trained_vocabulary_keeps_its_words(tmp_path, model):
    train = tmp_path / "train.txt"
    train.write_text("the cat the dog\nthe cat sat\nthe cat\n\nthe\n")
    options = {"stop_words": 1, "min_count": 2}
    vocabs: dict = {}
    problem = bind(model, read(model, train, vocabs, **options), vocabs, options)
    vocab = problem.vocabs["vocab:d"]
    assert vocab.values == ["<unk>", "cat"]
    assert problem.kept.tolist() == [0, 1, 2]  # the blank line and the one cut to nothing are skipped
    assert [problem.corpus.fields["d"].tokens(i) for i in range(3)] == [["cat"], ["cat"], ["cat"]]
    test = tmp_path / "test.txt"
    test.write_text("a new cat and the dog\n")
    vocabs = {k: v.copy() for k, v in problem.vocabs.items()}
    trained = {"args": problem.args, "labels": problem.labels, "vocab_sizes": {"vocab:d": len(vocab)}}
    again = bind(model, read(model, test, vocabs, **options), vocabs, options, trained=trained)
    assert again.corpus.fields["d"].tokens(0) == ["cat"] and again.vocabs["vocab:d"].values == ["<unk>", "cat"]
    test.write_text("only new words\n")
    vocabs = {k: v.copy() for k, v in problem.vocabs.items()}
    with pytest.raises(DataError, match="test.txt: error: no document has a word of the trained vocabulary"):
        bind(model, read(model, test, vocabs, **options), vocabs, options, trained=trained)
    vocabs = {}
    with pytest.raises(DataError, match=r"test.txt: error: no document has a word that passes the cut-off"):
        bind(model, read(model, test, vocabs, min_count=2), vocabs, {"min_count": 2})


def job(tmp_path, data, labeled=None, **options) -> Job:
    return Job(NAIVE_BAYES, "naive_bayes.em", {"classes": 2}, [str(tmp_path / name) for name in data], options, {},
               labeled=None if labeled is None else str(tmp_path / labeled))


def test_every_training_file_adds_its_words_and_the_cutoff_counts_them_all(tmp_path):
    (tmp_path / "f1.txt").write_text("a b\na c\n")
    (tmp_path / "f2.txt").write_text("x y\nb x\n")  # no word of f2 is frequent in f1
    problem = prepare(job(tmp_path, ["f1.txt", "f2.txt"])).problem
    assert problem.vocabs["vocab:d"].values == ["<unk>", "a", "b", "c", "x", "y"]
    assert problem.corpus.fields["d"].tokens(2) == ["x", "y"]
    cut = prepare(job(tmp_path, ["f1.txt", "f2.txt"], min_count=2)).problem
    assert cut.vocabs["vocab:d"].values == ["<unk>", "a", "b", "x"]  # b and x: twice over both files
    assert [cut.corpus.fields["d"].tokens(i) for i in range(4)] == [["a", "b"], ["a"], ["x"], ["b", "x"]]


def test_labeled_file_adds_its_words(tmp_path):
    (tmp_path / "u.jsonl").write_text('{"text": "a b", "label": "y"}\n{"text": "b c"}\n')
    (tmp_path / "l.jsonl").write_text('{"text": "b new", "label": "y"}\n{"text": "words", "label": "n"}\n')
    problem = prepare(job(tmp_path, ["u.jsonl"], labeled="l.jsonl", format="jsonl")).problem
    assert problem.vocabs["vocab:d"].values == ["<unk>", "a", "b", "c", "new", "words"]
    assert problem.labels == {"classes": ["n", "y"]}


def test_init_run_keeps_exactly_its_vocabulary(tmp_path):
    from emc.cli import main

    (tmp_path / "f1.txt").write_text("a b\na c\nb c\n")
    (tmp_path / "f2.txt").write_text("a new\nunseen\n")
    run = tmp_path / "run"
    assert main(["fit", SPEC, str(tmp_path / "f1.txt"), "--classes", "2", "--iterations", "2", "--quiet",
                 "--out", str(run)]) == 0
    problem = prepare(replace(job(tmp_path, ["f2.txt"]), init_run=str(run))).problem
    assert problem.vocabs["vocab:d"].values == ["<unk>", "a", "b", "c"]
    assert problem.kept.tolist() == [0] and problem.corpus.fields["d"].tokens(0) == ["a"]


def test_examples_of_several_files_name_their_own_file_and_line(tmp_path, model):
    (tmp_path / "a.txt").write_text("a b\n\nc\n")
    (tmp_path / "b.txt").write_text("d\ne f\n")
    vocabs: dict = {}
    corpus = read(model, tmp_path / "a.txt", vocabs).concat(read(model, tmp_path / "b.txt", vocabs), labeled=False)
    where = [(Path(path).name, line) for path, line in map(corpus.location, range(len(corpus)))]
    assert where == [("a.txt", 1), ("a.txt", 2), ("a.txt", 3), ("b.txt", 1), ("b.txt", 2)]
    kept = corpus.subset(corpus.nonempty())
    assert [(Path(p).name, line) for p, line in map(kept.location, range(len(kept)))] == \
        [("a.txt", 1), ("a.txt", 3), ("b.txt", 1), ("b.txt", 2)]


def test_a_labeled_document_without_label_is_reported_in_its_own_file(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "a b", "label": "y"}\n{"text": "b c"}\n')
    (tmp_path / "b.jsonl").write_text('{"text": "a", "label": "y"}\n{"text": "b"}\n')
    with pytest.raises(DataError, match=r"b\.jsonl:2: error: this labeled document has no label"):
        prepare(job(tmp_path, ["a.jsonl"], labeled="b.jsonl", format="jsonl"))


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
              zip(problem.model.code_layout.arrays, problem.array_bounds[:-1], problem.array_bounds[1:])}
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
