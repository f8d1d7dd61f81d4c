"""Reading Penn Treebank trees (traces, punctuation and emptied constituents removed), bracket scores
and the bracketed output format; WSJ10 and the right-branching baseline on the shared sample."""
from __future__ import annotations

import pytest

from emc.eval.brackets import bracket_scores, right_branching
from emc.io.ptb import TreeError, read_tree
from emc.spec.check import check
from emc.spec.errors import DataError
from emc.spec.parse import parse_text
from emc.structures.spantree.data import bracketed, read
from helpers import write_lines

TREE = ("((S (NP-SBJ-1 (DT The) (NN board)) (, ,) (VP (VBD named) (S (NP-SBJ (-NONE- *-1)) "
        "(NP-PRD (DT a) (NN director)))) (. .)))")
MODEL = check(parse_text("model m\nobserved x : tokens\nlatent t : spantree(x)\n"
                         "multinomial y : P(t.yield | t.constituent)\n", "m.em"))


def test_traces_punctuation_and_emptied_constituents_are_removed():
    tree = read_tree(TREE)
    assert tree.tags == ["DT", "NN", "VBD", "DT", "NN"]
    # S (whole), NP-SBJ, VP, the inner S and NP-PRD (a unary chain: one span); the trace's NP is gone
    assert tree.spans == {(0, 5), (0, 2), (2, 5), (3, 5)}


def test_a_leaf_is_recognised_by_its_exact_tag():
    tree = read_tree("((S (NP (PRP$ its) (NNS shares)) (VP (VBD rose) (NP ($ $) (CD 5)))))")
    assert tree.tags == ["PRP$", "NNS", "VBD", "CD"]
    assert tree.spans == {(0, 4), (0, 2), (2, 4), (3, 4)}  # the NP keeps its number


@pytest.mark.parametrize("text,message", [
    ("((S (NN a))", "never closed"),
    ("((S (NN a))))", "text after the end"),
    ("(S (NN a b))", "more than a tag and a word"),
    ("NN a", r"expected '\('"),
    ("((S () (NN a)))", "empty brackets"),
])
def test_malformed_trees(text, message):
    with pytest.raises(TreeError, match=message):
        read_tree(text)


def test_bad_tree_names_file_and_line(tmp_path):
    path = write_lines(tmp_path / "trees.txt", [TREE, "((S (NN a)"])
    with pytest.raises(DataError, match=r"trees.txt:2: error: not a Penn Treebank tree: unbalanced"):
        read(MODEL, str(path), {"format": "ptb"}, {})


def test_boundary_symbols_are_reserved(tmp_path):
    path = write_lines(tmp_path / "tags.txt", ["DT NN", "<s> DT NN"])
    with pytest.raises(DataError, match=r"tags.txt:2: error: the token '<s>' is reserved"):
        read(MODEL, str(path), {}, {})


def test_max_length_empties_long_sentences_and_keeps_gold_aligned(tmp_path):
    path = write_lines(tmp_path / "trees.txt", [TREE, "((S (NN a) (VBZ is)))"])
    corpus = read(MODEL, str(path), {"format": "ptb", "max_length": 3}, {})
    assert corpus.lengths().tolist() == [0, 2]
    assert corpus.gold["brackets"][1] == {(0, 2)}
    with pytest.raises(DataError, match=r"trees.txt: error: no sentence has at most 1 symbols"):
        read(MODEL, str(path), {"format": "ptb", "max_length": 1}, {})


def test_bracket_scores():
    gold = [{(0, 2), (2, 5), (3, 5), (0, 5)}]
    predicted = [{(0, 5), (0, 3), (1, 3), (3, 5), (3, 4)}]  # (0, 5) and (3, 4) get no credit
    scores = bracket_scores(predicted, gold, [5])
    assert scores["precision"] == pytest.approx(1 / 3)
    assert scores["recall"] == pytest.approx(1 / 3)
    assert scores["f1"] == pytest.approx(1 / 3)
    assert scores["crossing_brackets"] == 2  # (0, 3) and (1, 3) cross (0, 2) or (2, 5)


def test_bracketed_output():
    assert bracketed(["DT", "NN", "VBD", "DT", "NN"], {(0, 2), (2, 5), (3, 5), (0, 5)}) == "((DT NN) (VBD (DT NN)))"
    assert bracketed(["NN"], {(0, 1)}) == "(NN)"
    assert bracketed(["A", "B", "C"], right_branching(3) | {(0, 3)}) == "(A (B C))"


@pytest.mark.realdata
def test_wsj10_and_right_branching_on_the_sample(shared_data):
    """555 sentences of at most 10 tags; right-branching trees score F1 55.0 (micro-averaged, no
    credit for the whole sentence or single words), as the issue states."""
    path = shared_data / "ptb-sample" / "wsj_sample_trees.txt"
    corpus = read(MODEL, str(path), {"format": "ptb", "max_length": 10}, {})
    kept = corpus.nonempty()
    assert len(corpus) == 3914 and len(kept) == 555
    lengths = corpus.lengths()[kept].tolist()
    gold = [corpus.gold["brackets"][i] for i in kept]
    scores = bracket_scores([right_branching(n) for n in lengths], gold, lengths)
    assert round(100 * scores["f1"], 1) == 55.0
